package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cli runs yard with args and returns what it printed and its exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	if err != nil {
		code = exitCode(err)
		errb.WriteString("yard: " + err.Error() + "\n")
	}
	return out.String(), errb.String(), code
}

var (
	listedFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	usageFlag  = regexp.MustCompile(`--([a-z0-9-]+)`)
)

// TestHelpWalk asks every command and subcommand of the command table for
// its help: it exits 0, names the command, and lists exactly the flags
// its usage line names (a usage line of [flags] stands for all of them),
// each documented in docs/configuration.md.
func TestHelpWalk(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	top, _, code := cli(t, "-h")
	if code != 0 {
		t.Fatalf("yard -h exits %d", code)
	}
	if help, _, code := cli(t, "help"); code != 0 || help != top {
		t.Fatalf("yard help exits %d and prints\n%s\nnot what yard -h prints\n%s", code, help, top)
	}
	var walk func(prefix []string, table []command)
	walk = func(prefix []string, table []command) {
		for _, c := range table {
			path := append(slices.Clone(prefix), c.name)
			name := strings.Join(path, " ")
			out, errs, code := cli(t, append(path, "-h")...)
			if code != 0 || errs != "" {
				t.Errorf("yard %s -h: exit %d, stderr %q", name, code, errs)
				continue
			}
			if viaHelp, _, _ := cli(t, append([]string{"help"}, path...)...); viaHelp != out {
				t.Errorf("yard help %s prints\n%s\nnot what yard %s -h prints\n%s", name, viaHelp, name, out)
			}
			if c.subs != nil {
				if !strings.Contains(out, "usage: yard "+name+" <subcommand>") {
					t.Errorf("yard %s -h does not give its usage:\n%s", name, out)
				}
				for _, s := range c.subs {
					if !strings.Contains(out, "yard "+s.usage) {
						t.Errorf("yard %s -h does not show the subcommand %s:\n%s", name, s.name, out)
					}
				}
				walk(path, c.subs)
				continue
			}
			if !strings.Contains(top, "  "+name+" ") {
				t.Errorf("yard -h does not list %q:\n%s", name, top)
			}
			if !strings.HasPrefix(out, "usage: yard "+name) {
				t.Errorf("yard %s -h does not start with its usage line:\n%s", name, out)
			}
			var listed []string
			for _, m := range listedFlag.FindAllStringSubmatch(out, -1) {
				listed = append(listed, m[1])
				if !bytes.Contains(doc, []byte("`--"+m[1]+"`")) {
					t.Errorf("the flag --%s of yard %s is not in docs/configuration.md", m[1], name)
				}
			}
			if strings.Contains(c.usage, "[flags]") {
				if len(listed) == 0 {
					t.Errorf("yard %s -h lists no flags:\n%s", name, out)
				}
				continue
			}
			var named []string
			for _, m := range usageFlag.FindAllStringSubmatch(c.usage, -1) {
				named = append(named, m[1])
			}
			slices.Sort(listed)
			slices.Sort(named)
			if !slices.Equal(listed, named) {
				t.Errorf("yard %s -h lists the flags %v but its usage line %q names %v", name, listed, c.usage, named)
			}
			if len(listed) == 0 && !strings.Contains(out, "takes no flags") {
				t.Errorf("yard %s -h says nothing of flags:\n%s", name, out)
			}
		}
	}
	walk(nil, commands())
}

// TestHelpDoesNothing: -h anywhere among a command's arguments prints its
// help and does nothing else.
func TestHelpDoesNothing(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--data", data, "-h"}, "usage: yard migrate "},
		{[]string{"user", "add", "bob", "--data", data, "--help"}, "usage: yard user add "},
		{[]string{"keys", "rotate", "--data", data, "-help"}, "usage: yard keys rotate "},
		{[]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "-h"}, "usage: yard serve "},
	} {
		out, _, code := cli(t, tc.args...)
		if code != 0 || !strings.HasPrefix(out, tc.want) {
			t.Errorf("yard %s: exit %d\n%s", strings.Join(tc.args, " "), code, out)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("yard %s touched the data directory (%v)", strings.Join(tc.args, " "), err)
		}
	}
}

// TestUsageErrors: unknown commands and subcommands, missing operands and
// arguments a command does not take are usage errors (exit 2) naming them.
func TestUsageErrors(t *testing.T) {
	data := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"user"}, "user needs a subcommand"},
		{[]string{"user", "bogus"}, `unknown subcommand "bogus" of yard user`},
		{[]string{"keys", "bogus", "--data", data}, `unknown subcommand "bogus" of yard keys`},
		{[]string{"user", "add", "--data", data}, "user add needs a NAME"},
		{[]string{"user", "passwd", "--data", data}, "user passwd needs a NAME"},
		{[]string{"migrate", "--data", data, "extra"}, `migrate: unexpected argument "extra"`},
		{[]string{"migrate", "--data", data, "extra", "more"}, `migrate: unexpected arguments "extra" "more"`},
		{[]string{"version", "extra"}, `version: unexpected argument "extra"`},
		{[]string{"serve", "--data", data, "extra"}, `serve: unexpected argument "extra"`},
		{[]string{"serve", "--data", data, "--base-url", "example.com"}, "--base-url must be an absolute"},
		{[]string{"serve", "--data", data, "--base-url", "https://example.com?x=1"}, "--base-url must be an absolute"},
		{[]string{"serve", "--data", data, "--base-url", "ftp://example.com"}, "--base-url must be an absolute"},
		{[]string{"user", "list", "--data", data, "extra"}, `user list: unexpected argument "extra"`},
		{[]string{"user", "add", "bob", "--data", data, "extra"}, `user add: unexpected argument "extra"`},
		{[]string{"user", "passwd", "bob", "--data", data, "extra"}, `user passwd: unexpected argument "extra"`},
		{[]string{"keys", "rotate", "--data", data, "extra"}, `keys rotate: unexpected argument "extra"`},
		{[]string{"keys", "public", "--data", data, "extra"}, `keys public: unexpected argument "extra"`},
		{[]string{"import", "--data", data}, "import needs a FILE"},
		{[]string{"import", "cars.ndjson", "--data", data, "extra"}, `import: unexpected argument "extra"`},
		{[]string{"import", "-", "--data", data, "extra"}, `import: unexpected argument "extra"`},
		{[]string{"keys", "rotate", "--db", "sqlite"}, "flag provided but not defined: -db"},
		{[]string{"user", "list", "--admin"}, "flag provided but not defined: -admin"},
		{[]string{"help", "bogus"}, `unknown command "bogus"`},
	} {
		out, errs, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("yard %s: exit %d, stdout %q, stderr\n%s\nwant exit 2 and %q on stderr", strings.Join(tc.args, " "), code, out, errs, tc.want)
		}
	}
	if entries, _ := os.ReadDir(data); len(entries) > 0 {
		t.Errorf("a usage error wrote into the data directory: %v", entries)
	}
}
