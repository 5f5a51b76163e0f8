package httpapi_test

import (
	"os"
	"os/exec"
	"testing"
)

// needTool returns the path of a program the test runs (curl, npm, npx).
// Without it the test is skipped, except under CI=true, where it fails:
// scripts/test installs each of them.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (scripts/test installs it)", name)
		}
		t.Skipf("%s is not installed; scripts/test installs it", name)
	}
	return path
}
