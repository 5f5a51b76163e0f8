// Command yard is the yard API server and its administration commands.
//
//	yard serve [flags]                                   run the HTTPS API server
//	yard migrate [--data DIR] [--db URL]                 apply schema migrations
//	yard user add NAME [--admin] [--email E] [--phone P] add a person
//	yard user list | yard user passwd NAME               list people, set a password
//	yard import FILE [--batch N]                         bulk-load garages and cars
//	yard backup [--out FILE]                             copy the SQLite store while it serves
//	yard restore FILE                                    replace the SQLite store by a backup
//	yard keys rotate | yard keys public                  token signing keys
//	yard conform [flags] URL                             check a server against the specification
//	yard version | yard help [COMMAND]
//
// The commands are the table in commands below; "yard -h" is generated
// from it and "yard COMMAND -h" prints a command's usage line and flags.
// Every flag also reads from an environment variable: --base-url from
// YARD_BASE_URL, and so on; a flag given on the command line wins.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "yard:", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitCode is 2 for a usage error, 1 for any other failure.
func exitCode(err error) int {
	if _, ok := errors.AsType[usageError](err); ok || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

type usageError string

func (e usageError) Error() string { return string(e) }

// commandFunc is the signature of every command.
type commandFunc func(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error

// command is one row of the command table.
type command struct {
	name    string
	summary string // one line, for the help texts
	usage   string // the usage line after "yard "; it names every flag, or says [flags]
	run     commandFunc
	// subs are the subcommands of a command that has them (run is nil).
	subs []command
}

// commands is the command table: run dispatches through it and every help
// text is generated from it.
func commands() []command {
	return []command{
		{name: "serve", summary: "run the HTTPS API server",
			usage: "serve [flags]", run: runServe},
		{name: "migrate", summary: "apply schema migrations to the store, then exit",
			usage: "migrate [--data DIR] [--db URL]", run: runMigrate},
		{name: "user", summary: "add, list or change people", subs: []command{
			{name: "add", summary: "add a person; the password is read from stdin, else generated and printed",
				usage: "user add NAME [--admin] [--email E] [--phone P] [--data DIR] [--db URL]", run: runUserAdd},
			{name: "list", summary: "list people",
				usage: "user list [--data DIR] [--db URL]", run: runUserList},
			{name: "passwd", summary: "set a person's password: read from stdin, else generated and printed",
				usage: "user passwd NAME [--data DIR] [--db URL]", run: runUserPasswd},
		}},
		{name: "import", summary: "bulk-load garages and cars from an NDJSON file (FILE - reads stdin)",
			usage: "import FILE [--data DIR] [--db URL] [--batch N] [--progress auto|on|off] [--keep-indexes]", run: runImport},
		{name: "backup", summary: "copy the SQLite store, consistent, while the server keeps serving (default DATA/backups/yard-TIME.db)",
			usage: "backup [--data DIR] [--db URL] [--out FILE]", run: runBackup},
		{name: "restore", summary: "replace the SQLite store by a backup: checked, migrated forward, the replaced store kept aside; refused while the store is in use",
			usage: "restore FILE [--data DIR] [--db URL]", run: runRestore},
		{name: "keys", summary: "rotate the token signing keys, or print their public keys", subs: []command{
			{name: "rotate", summary: "make new signing keys for public-key tokens and for an EdDSA or ES256 token pair",
				usage: "keys rotate [--data DIR]", run: runKeysRotate},
			{name: "public", summary: "print the public keys of the token signing keys (PEM), for verify-only servers",
				usage: "keys public [--data DIR]", run: runKeysPublic},
		}},
		{name: "conform", summary: "check a running server against the specification (the conformance kit)",
			usage: "conform [--admin NAME] [--ca FILE | --insecure] [--only PART[,PART]] [--skip ID[,ID]] [--junit FILE] [--json] [--timeout DURATION] [--receiver ADDR] URL", run: runConform},
		{name: "version", summary: "print the version",
			usage: "version", run: runVersion},
		{name: "help", summary: "print this help, or a command's usage and flags",
			usage: "help [COMMAND [SUBCOMMAND]]", run: runHelp},
	}
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stderr)
		return usageError("no command")
	}
	if isHelpFlag(args[0]) {
		printUsage(stdout)
		return nil
	}
	return dispatch(ctx, "", commands(), args, getenv, stdin, stdout, stderr)
}

// dispatch runs the command of table that args[0] names; path is the
// names of the enclosing commands ("" or "user ").
func dispatch(ctx context.Context, path string, table []command, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	name, rest := args[0], args[1:]
	c, ok := findCommand(table, name)
	if !ok {
		if path == "" {
			printUsage(stderr)
			return usageError(fmt.Sprintf("unknown command %q", name))
		}
		group := strings.TrimSpace(path)
		printGroupUsage(stderr, group)
		return usageError(fmt.Sprintf("unknown subcommand %q of yard %s", name, group))
	}
	if c.subs != nil {
		switch {
		case len(rest) == 0:
			printGroupUsage(stderr, path+name)
			return usageError(fmt.Sprintf("%s needs a subcommand", path+name))
		case isHelpFlag(rest[0]):
			printGroupUsage(stdout, path+name)
			return nil
		}
		return dispatch(ctx, path+name+" ", c.subs, rest, getenv, stdin, stdout, stderr)
	}
	if wantsHelp(rest) {
		// The command's own flag set prints its usage line and flags
		// (newFlagSet): on standard output, since help was asked for,
		// and before the command does anything else.
		err := c.run(ctx, []string{"-h"}, getenv, nil, stdout, stdout)
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	return c.run(ctx, rest, getenv, stdin, stdout, stderr)
}

func findCommand(table []command, name string) (command, bool) {
	i := slices.IndexFunc(table, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return table[i], true
}

// lookupCommand finds a command of the table by its path ("serve",
// "user add").
func lookupCommand(path string) command {
	c := command{subs: commands()}
	for _, name := range strings.Fields(path) {
		c, _ = findCommand(c.subs, name)
	}
	return c
}

func isHelpFlag(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// wantsHelp reports whether the arguments of a command ask for its help.
// Nothing after "--" is a flag.
func wantsHelp(args []string) bool {
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.ContainsFunc(args, isHelpFlag)
}

// printUsage prints the help of yard: every command of the table.
func printUsage(w io.Writer) {
	fmt.Fprint(w, "usage: yard <command> [arguments] [flags]\n\ncommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	for _, c := range commands() {
		if c.subs == nil {
			fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
		}
		for _, s := range c.subs {
			fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, s.name, s.summary)
		}
	}
	tw.Flush()
	fmt.Fprint(w, `
Run "yard <command> -h" for a command's usage and flags. Every flag also
reads from an environment variable: --base-url from YARD_BASE_URL, and so on.
`)
}

// printGroupUsage prints the help of a command that has subcommands.
func printGroupUsage(w io.Writer, path string) {
	c := lookupCommand(path)
	fmt.Fprintf(w, "usage: yard %s <subcommand> [arguments] [flags]\n\n%s\n\nsubcommands:\n", path, c.summary)
	for _, s := range c.subs {
		fmt.Fprintf(w, "  yard %s\n    \t%s\n", s.usage, s.summary)
	}
	fmt.Fprintf(w, "\nRun \"yard %s <subcommand> -h\" for a subcommand's flags.\n", path)
}

// runVersion is "yard version".
func runVersion(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	if err := parseNoArgs(fs, args, getenv); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "yard", Version)
	return nil
}

// runHelp is "yard help [COMMAND [SUBCOMMAND]]": the same as "yard -h" or
// "yard COMMAND [SUBCOMMAND] -h".
func runHelp(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("help", stderr)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	// "yard help" alone is "yard -h".
	return run(ctx, append(fs.Args(), "-h"), getenv, stdin, stdout, stderr)
}

// newFlagSet returns the flag set of the command at path ("serve", "user
// add"): it prints errors to stderr, and its -h prints the command's usage
// line from the command table, its summary and its flags.
func newFlagSet(path string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		w := fs.Output()
		c := lookupCommand(path)
		fmt.Fprintf(w, "usage: yard %s\n\n%s\n\n", c.usage, c.summary)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			fmt.Fprintf(w, "yard %s takes no flags.\n", path)
			return
		}
		fmt.Fprintf(w, "flags of yard %s (each also read from its YARD_ variable):\n", path)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags applies environment twins (YARD_<FLAG_NAME>) and then the
// command line, so that a flag given on the command line wins.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(EnvName(f.Name)); v != "" && err == nil {
			if e := fs.Set(f.Name, v); e != nil {
				err = usageError(fmt.Sprintf("%s: %v", EnvName(f.Name), e))
			}
		}
	})
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError(err.Error())
	}
	return nil
}

// parseNoArgs parses the flags of a command that takes no other
// arguments.
func parseNoArgs(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	return noMoreArgs(fs, fs.Args())
}

// noMoreArgs is a usage error naming the arguments left over after a
// command took its flags and operands.
func noMoreArgs(fs *flag.FlagSet, rest []string) error {
	if len(rest) == 0 {
		return nil
	}
	word := "argument"
	if len(rest) > 1 {
		word = "arguments"
	}
	// %q quotes each argument: ["a" "b"], then without its brackets.
	quoted := strings.Trim(fmt.Sprintf("%q", rest), "[]")
	return usageError(fmt.Sprintf("%s: unexpected %s %s", fs.Name(), word, quoted))
}

// EnvName is the environment variable of a flag: --base-url is YARD_BASE_URL.
func EnvName(flagName string) string {
	return "YARD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// storeFlags are the flags of every command that touches the store.
type storeFlags struct {
	data string
	db   string
}

func (sf *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.data, "data", "./data", "data directory (SQLite file, keys, outboxes, certificates)")
	fs.StringVar(&sf.db, "db", "sqlite", "store: sqlite (in the data directory), sqlite:PATH, or a postgres:// URL")
}

// newStoreFlagSet is newFlagSet with the store flags registered.
func newStoreFlagSet(path string, stderr io.Writer) (*flag.FlagSet, *storeFlags) {
	fs := newFlagSet(path, stderr)
	sf := &storeFlags{}
	sf.register(fs)
	return fs, sf
}
