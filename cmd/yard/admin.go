package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/store"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var sf storeFlags
	fs := newFlagSet("migrate", stderr)
	sf.register(fs)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	db, err := openStore(ctx, sf)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(stdout, "migrated %s\n", db)
	return nil
}

// ensureFirstAdmin creates the administrator "admin" with a generated
// password when the store has no users, printing the password once.
func ensureFirstAdmin(ctx context.Context, db *store.DB, stdout io.Writer) error {
	n, err := db.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	password := auth.GeneratePassword()
	creds, err := auth.NewCredentials("admin", password)
	if err != nil {
		return err
	}
	u := &yard.User{Name: "admin", Roles: []string{yard.RoleAdmin, yard.RoleUser}}
	if err := db.CreateUser(ctx, u, creds); err != nil {
		if yard.ErrorCode(err) == yard.ECONFLICT { // another process was first
			return nil
		}
		return err
	}
	fmt.Fprintf(stdout, "created administrator \"admin\" with password %s (shown once; change it with: yard user passwd admin)\n", password)
	return nil
}

func runUser(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("usage: yard user add NAME [--admin] [--email E] [--phone P] | yard user list | yard user passwd NAME")
	}
	sub, args := args[0], args[1:]
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	var sf storeFlags
	fs := newFlagSet("user "+sub, stderr)
	sf.register(fs)
	admin := fs.Bool("admin", false, "give the admin role")
	email := fs.String("email", "", "e-mail address")
	phone := fs.String("phone", "", "phone number in E.164 form, for text messages")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if sub != "list" && name == "" {
		return usageError("yard user " + sub + " needs a NAME")
	}
	db, err := openStore(ctx, sf)
	if err != nil {
		return err
	}
	defer db.Close()
	switch sub {
	case "add":
		password, generated, err := readPassword(stdin)
		if err != nil {
			return err
		}
		roles := []string{yard.RoleUser}
		if *admin {
			roles = []string{yard.RoleAdmin, yard.RoleUser}
		}
		creds, err := auth.NewCredentials(name, password)
		if err != nil {
			return err
		}
		u := &yard.User{Name: name, Email: *email, Phone: *phone, Roles: roles}
		if err := db.CreateUser(ctx, u, creds); err != nil {
			return describe(err)
		}
		fmt.Fprintf(stdout, "created %s (%s) with id %s\n", u.Name, strings.Join(roles, ","), u.ID)
		if generated {
			fmt.Fprintf(stdout, "password: %s\n", password)
		}
	case "passwd":
		u, err := db.FindUserByName(ctx, name)
		if err != nil {
			return describe(err)
		}
		password, generated, err := readPassword(stdin)
		if err != nil {
			return err
		}
		creds, err := auth.NewCredentials(u.Name, password)
		if err != nil {
			return err
		}
		if err := db.SetCredentials(ctx, u.ID, creds); err != nil {
			return describe(err)
		}
		fmt.Fprintf(stdout, "changed the password of %s\n", u.Name)
		if generated {
			fmt.Fprintf(stdout, "password: %s\n", password)
		}
	case "list":
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tROLES\tEMAIL\tPHONE\tDISABLED")
		for offset := 0; ; offset += 100 {
			users, _, err := db.FindUsers(ctx, yard.UserFilter{Offset: offset, Limit: 100})
			if err != nil {
				return err
			}
			for _, u := range users {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", u.ID, u.Name, strings.Join(u.Roles, ","), u.Email, u.Phone, u.Disabled)
			}
			if len(users) < 100 {
				break
			}
		}
		return tw.Flush()
	default:
		return usageError("unknown user command " + sub)
	}
	return nil
}

// readPassword takes the first line of stdin as the password, or generates
// one when stdin is empty or a terminal.
func readPassword(stdin io.Reader) (string, bool, error) {
	if f, ok := stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return auth.GeneratePassword(), true, nil
		}
	}
	if stdin != nil {
		line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, err
		}
		if p := strings.TrimRight(line, "\r\n"); p != "" {
			if err := auth.ValidatePassword(p); err != nil {
				return "", false, describe(err)
			}
			return p, false, nil
		}
	}
	return auth.GeneratePassword(), true, nil
}

// describe turns a domain error into a message for the command line.
func describe(err error) error {
	var e *yard.Error
	if errors.As(err, &e) {
		msg := e.Message
		for _, f := range e.Fields {
			msg += fmt.Sprintf(" %s %s.", f.Field, f.Message)
		}
		return errors.New(msg)
	}
	return err
}
