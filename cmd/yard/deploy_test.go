package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnitVerifies: deploy/yard.service passes systemd-analyze
// verify (with its binary path pointed at this test binary, which must
// exist for the check), and its ExecStart runs serve with flags serve knows.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is not installed (scripts/test installs Debian's systemd)")
		}
		t.Skip("systemd-analyze is not installed; scripts/test installs it")
	}
	unit, err := os.ReadFile("../../deploy/yard.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var execStart []string
	for line := range strings.Lines(string(unit)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
	}
	if len(execStart) < 2 || execStart[0] != "/usr/local/bin/yard" || execStart[1] != "serve" {
		t.Fatalf("ExecStart = %q, want /usr/local/bin/yard serve …", execStart)
	}
	// The flags of ExecStart are serve's: --help after them prints the
	// usage, where an unknown flag would be an error.
	if _, stderr, code := cli(t, append(execStart[1:], "--help")...); code != 0 {
		t.Fatalf("yard %s --help: exit %d\n%s", strings.Join(execStart[1:], " "), code, stderr)
	}
	path := filepath.Join(t.TempDir(), "yard.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/yard", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", path)
	cmd.Dir = filepath.Dir(path)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
