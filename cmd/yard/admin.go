package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/store"
)

// runMigrate is "yard migrate": open the store, migrate it, exit.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	db, err := openStoreCommand(ctx, "migrate", args, getenv, stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(stdout, "migrated %s\n", db)
	return nil
}

// openStoreCommand parses the arguments of a command that takes the store
// flags and nothing else, and opens the store.
func openStoreCommand(ctx context.Context, name string, args []string, getenv func(string) string, stderr io.Writer) (*store.DB, error) {
	fs, sf := newStoreFlagSet(name, stderr)
	if err := parseNoArgs(fs, args, getenv); err != nil {
		return nil, err
	}
	return openStore(ctx, *sf)
}

// openStoreNamed parses the arguments of a command that takes one NAME and
// flags fs, the store flags sf among them, and opens the store.
func openStoreNamed(ctx context.Context, fs *flag.FlagSet, sf *storeFlags, args []string, getenv func(string) string) (string, *store.DB, error) {
	name, err := parseNamed(fs, "NAME", args, getenv)
	if err != nil {
		return "", nil, err
	}
	db, err := openStore(ctx, *sf)
	return name, db, err
}

// ensureFirstAdmin creates the administrator "admin" with a generated
// password when the store has no users, printing the password once.
func ensureFirstAdmin(ctx context.Context, db *store.DB, stdout io.Writer) error {
	n, err := db.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	password := auth.GeneratePassword()
	u := &yard.User{Name: "admin", Roles: []string{yard.RoleAdmin, yard.RoleUser}}
	if err := createUser(ctx, db, u, password); err != nil {
		if yard.ErrorCode(err) == yard.ECONFLICT { // another process was first
			return nil
		}
		return err
	}
	fmt.Fprintf(stdout, "created administrator \"admin\" with password %s (shown once; change it with: yard user passwd admin)\n", password)
	return nil
}

// parseNamed parses the flags of a command that takes one argument (its
// NAME, a FILE: what), given before or after the flags, and returns it. A
// lone "-" (standard input) is an argument, not a flag.
func parseNamed(fs *flag.FlagSet, what string, args []string, getenv func(string) string) (string, error) {
	var name string
	if len(args) > 0 && (args[0] == "-" || !strings.HasPrefix(args[0], "-")) {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, getenv); err != nil {
		return "", err
	}
	rest := fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
	}
	if name == "" {
		return "", usageError(fs.Name() + " needs a " + what)
	}
	return name, noMoreArgs(fs, rest)
}

// runUserAdd is "yard user add NAME": a person with the user role (and
// the admin role with --admin).
func runUserAdd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, sf := newStoreFlagSet("user add", stderr)
	admin := fs.Bool("admin", false, "give the admin role")
	email := fs.String("email", "", "e-mail address")
	phone := fs.String("phone", "", "phone number in E.164 form, for text messages")
	name, db, err := openStoreNamed(ctx, fs, sf, args, getenv)
	if err != nil {
		return err
	}
	defer db.Close()
	password, generated, err := readPassword(stdin)
	if err != nil {
		return err
	}
	roles := []string{yard.RoleUser}
	if *admin {
		roles = []string{yard.RoleAdmin, yard.RoleUser}
	}
	u := &yard.User{Name: name, Email: *email, Phone: *phone, Roles: roles}
	if err := createUser(ctx, db, u, password); err != nil {
		return describe(err)
	}
	fmt.Fprintf(stdout, "created %s (%s) with id %s\n", u.Name, strings.Join(roles, ","), u.ID)
	printGenerated(stdout, password, generated)
	return nil
}

// createUser stores u with password.
func createUser(ctx context.Context, db *store.DB, u *yard.User, password string) error {
	creds, err := auth.NewCredentials(u.Name, password)
	if err != nil {
		return err
	}
	return db.CreateUser(ctx, u, creds)
}

// printGenerated prints a password readPassword generated.
func printGenerated(stdout io.Writer, password string, generated bool) {
	if generated {
		fmt.Fprintf(stdout, "password: %s\n", password)
	}
}

// runUserPasswd is "yard user passwd NAME".
func runUserPasswd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, sf := newStoreFlagSet("user passwd", stderr)
	name, db, err := openStoreNamed(ctx, fs, sf, args, getenv)
	if err != nil {
		return err
	}
	defer db.Close()
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
	printGenerated(stdout, password, generated)
	return nil
}

// runUserList is "yard user list": every person, as a table.
func runUserList(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	db, err := openStoreCommand(ctx, "user list", args, getenv, stderr)
	if err != nil {
		return err
	}
	defer db.Close()
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
}

// readPassword takes the first line of stdin as the password, or generates
// one when stdin is empty or a terminal.
func readPassword(stdin io.Reader) (string, bool, error) {
	if stdin != nil && !isTerminal(stdin) {
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
	if e, ok := errors.AsType[*yard.Error](err); ok {
		msg := e.Message
		for _, f := range e.Fields {
			msg += fmt.Sprintf(" %s %s.", f.Field, f.Message)
		}
		return errors.New(msg)
	}
	return err
}
