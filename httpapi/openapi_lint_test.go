package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/httpapi"
)

// The linters, pinned; npx installs them from the npm registry into its
// cache (~/.npm) on first use.
const (
	redoclyCLI  = "@redocly/cli@2.77.0"
	spectralCLI = "@stoplight/spectral-cli@6.16.3"
)

// Findings the document keeps on purpose, as "rule pointer"; docs/api.md,
// "OpenAPI document", says why. Anything else a linter reports fails the
// test, and so does one of these going away (update the docs with it).
var (
	redoclyDeliberate = []string{
		"no-path-trailing-slash #/paths/~1v1~1dogs~1{dog_id}~1",
		"no-server-example.com #/servers/0/url",
		"operation-2xx-response #/paths/~1v1~1dogs~1{dog_id}/delete/responses",
		"operation-2xx-response #/paths/~1v1~1dogs~1{dog_id}/get/responses",
		"operation-2xx-response #/paths/~1v1~1dogs~1{dog_id}/patch/responses",
		"operation-2xx-response #/paths/~1v1~1dogs~1{dog_id}/post/responses",
		"operation-2xx-response #/paths/~1v1~1dogs~1{dog_id}/put/responses",
	}
	spectralDeliberate = []string{
		"path-keys-no-trailing-slash paths./v1/dogs/{dog_id}/",
	}
)

// TestOpenAPILint lints the document as the quick-start server publishes
// it (base URL https://localhost:8443) with Redocly CLI's recommended
// rules and Spectral's spectral:oas, two linters written elsewhere: no
// error, and no warning but the deliberate ones. It needs npx (Debian's
// npm) and the npm registry or a warm npm cache; without npx it is skipped,
// except under CI=true, where it fails (scripts/test installs npm).
func TestOpenAPILint(t *testing.T) {
	npx := needTool(t, "npx")
	// The document as serve publishes it: its chain reads the query
	// variables of OAuth 1.0a and of signed requests, which the document
	// lists (credentialParams).
	chain := &auth.Chain{Query: []auth.Scheme{(&auth.OAuth1{}).InRequest(), &auth.Signed{}}}
	api := httpapi.New(httpapi.Deps{Auth: chain, BaseURL: "https://localhost:8443", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	doc, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := filepath.Abs("testdata/lint")
	if err != nil {
		t.Fatal(err)
	}

	// run runs a linter through npx and returns its standard output (the
	// linters exit non-zero when they find errors, which the findings
	// then show).
	run := func(t *testing.T, pkg string, args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// Install first, so that a registry out of reach is told apart
		// from a finding.
		env := append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_UPDATE_NOTIFIER=1")
		install := exec.CommandContext(ctx, npx, "--yes", pkg, "--version")
		install.Dir, install.Env = dir, env
		if out, err := install.CombinedOutput(); err != nil {
			msg := "npx could not run " + pkg + " (npm registry out of reach?): " + err.Error() + "\n" + string(out)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		cmd := exec.CommandContext(ctx, npx, append([]string{"--yes", pkg}, args...)...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if stdout.Len() == 0 {
			t.Fatalf("%s: %v\n%s", pkg, err, stderr.Bytes())
		}
		return stdout.Bytes()
	}
	check := func(t *testing.T, got, want []string) {
		slices.Sort(got)
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("finding not known to be deliberate: %s", g)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("deliberate finding gone (update docs/api.md and this test): %s", w)
			}
		}
	}

	t.Run("redocly", func(t *testing.T) {
		t.Parallel()
		out := run(t, redoclyCLI, "lint", "--config", filepath.Join(config, "redocly.yaml"), "--format", "json", file)
		var res struct {
			Problems []struct {
				RuleID   string `json:"ruleId"`
				Severity string `json:"severity"`
				Message  string `json:"message"`
				Location []struct {
					Pointer string `json:"pointer"`
				} `json:"location"`
			} `json:"problems"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("redocly output: %v\n%s", err, out)
		}
		var got []string
		for _, p := range res.Problems {
			f := p.RuleID
			if len(p.Location) > 0 {
				f += " " + p.Location[0].Pointer
			}
			if p.Severity == "error" {
				t.Errorf("error: %s: %s", f, p.Message)
				continue
			}
			got = append(got, f)
		}
		check(t, got, redoclyDeliberate)
		t.Logf("%s: %d findings", redoclyCLI, len(res.Problems))
	})
	t.Run("spectral", func(t *testing.T) {
		t.Parallel()
		out := run(t, spectralCLI, "lint", "--ruleset", filepath.Join(config, "spectral.yaml"), "--format", "json", file)
		var res []struct {
			Code     string   `json:"code"`
			Path     []string `json:"path"`
			Message  string   `json:"message"`
			Severity int      `json:"severity"` // 0 error, 1 warning, 2 info, 3 hint
		}
		// Spectral prints nothing but a line of text when there is no
		// finding.
		if !bytes.HasPrefix(bytes.TrimSpace(out), []byte("[")) {
			res = nil
		} else if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("spectral output: %v\n%s", err, out)
		}
		var got []string
		for _, p := range res {
			f := p.Code + " " + strings.Join(p.Path, ".")
			if p.Severity == 0 {
				t.Errorf("error: %s: %s", f, p.Message)
				continue
			}
			got = append(got, f)
		}
		check(t, got, spectralDeliberate)
		t.Logf("%s: %d findings", spectralCLI, len(res))
	})
}
