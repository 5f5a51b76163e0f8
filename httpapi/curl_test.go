package httpapi_test

import (
	"os"
	"os/exec"
	"testing"
)

// needCurl returns curl's path. Under CI=true a missing curl fails the test
// (scripts/test installs it); elsewhere the test is skipped.
func needCurl(t *testing.T) string {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed (scripts/test installs it)")
		}
		t.Skip("curl is not installed")
	}
	return curl
}
