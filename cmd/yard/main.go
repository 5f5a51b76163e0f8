// Command yard is the yard API server and its administration commands.
//
//	yard serve   [flags]          run the HTTPS API server
//	yard migrate [--db URL]       apply schema migrations
//	yard user add NAME [--admin] [--email E] [--phone P]
//	yard user list | yard user passwd NAME
//	yard version
//
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
	"strings"
	"syscall"
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

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

type usageError string

func (e usageError) Error() string { return string(e) }

const usage = `usage: yard <command> [flags]

commands:
  serve     run the HTTPS API server
  migrate   apply schema migrations to the store
  user      add, list or change people: user add NAME [--admin] [--email E] [--phone P] | user list | user passwd NAME
  import    bulk-load garages and cars from an NDJSON file
  keys      rotate the public-key token signing key, or print its public key: keys rotate|public
  version   print the version

Run "yard <command> -h" for a command's flags. Every flag also reads from
an environment variable: --base-url from YARD_BASE_URL, and so on.`

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return usageError("no command")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr)
	case "user":
		return runUser(ctx, rest, getenv, stdin, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "yard", Version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	default:
		if h, ok := extraCommands[cmd]; ok {
			return h(ctx, rest, getenv, stdin, stdout, stderr)
		}
		fmt.Fprintln(stderr, usage)
		return usageError("unknown command " + cmd)
	}
}

// command is the signature of a subcommand.
type command func(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error

// extraCommands are subcommands registered by other files of this package
// (import, ...).
var extraCommands = map[string]command{}

// newFlagSet returns a flag set whose flags also read environment variables.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
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
