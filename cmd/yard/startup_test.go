package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartupChecksBeforeWrites: serve checks its flags, certificate files
// and listen addresses before it creates the first administrator, so a bad
// flag on a fresh data directory leaves no user behind and prints no
// password (which would be lost).
func TestStartupChecksBeforeWrites(t *testing.T) {
	t.Parallel()
	env := func(string) string { return "" }
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"missing certificate files", []string{"--tls-cert", missing, "--tls-key", missing}},
		{"busy plain-HTTP address", []string{"--http-addr", busy.Addr().String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			var out, errb bytes.Buffer
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, tc.args...)
			if err := run(context.Background(), args, env, nil, &out, &errb); err == nil {
				t.Fatal("serve started")
			}
			if strings.Contains(out.String(), "password") {
				t.Fatalf("a password was printed: %q", out.String())
			}
			out.Reset()
			if err := run(context.Background(), []string{"user", "list", "--data", data}, env, nil, &out, &errb); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "admin") {
				t.Fatalf("a user was created: %q", out.String())
			}
		})
	}
}
