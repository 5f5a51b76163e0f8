package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The client generators TestGeneratedClients runs, pinned (docs/clients.md,
// "Generated clients"). The Go ones are installed from the module proxy
// into a temporary GOBIN; the npm packages into a temporary directory (npm
// keeps its cache in ~/.npm).
const (
	oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	// oapiRuntime is the library oapi-codegen's client imports: the last
	// release before oapi-codegen v2.8.2.
	oapiRuntime = "github.com/oapi-codegen/runtime v1.8.0"
	ogenCmd     = "github.com/ogen-go/ogen/cmd/ogen@v1.24.0"
	ogenModule  = "github.com/ogen-go/ogen v1.24.0"
	// ogenConfig leaves out what ogen v1.24.0 does not implement rather
	// than stopping: the http schemes Digest and OAuth (the operations keep
	// their other schemes), and form bodies that list fields and take
	// others (the OAuth 1.0a and OpenID protocol endpoints, ogenSkips).
	ogenConfig = "generator:\n  ignore_not_implemented: [\"http security scheme\", \"complex form schema\"]\n"
)

var (
	codegenNPMPackages = []string{"openapi-typescript@7.13.0", "openapi-fetch@0.17.0", "@hey-api/openapi-ts@0.99.0",
		"typescript@5.9.3", "@types/node@20.19.43"}
	// ogenSkips are the operations ogen leaves out (ogenConfig).
	ogenSkips = []string{"/oauth/access_token", "/oauth/request_token", "/openid/confirm", "/openid/login"}
)

// TestGeneratedClients generates clients from the /openapi.json a real
// serve publishes, with oapi-codegen and ogen (Go) and openapi-typescript
// with openapi-fetch and @hey-api/openapi-ts (TypeScript, compiled by tsc
// --strict), and runs five calls through each as a person with Basic
// (testdata/codegen): list dogs, create a dog, bark asynchronously and read
// the task until it finishes (redirects off: its last answer is a 303),
// list red cars, read a car. What cannot be installed skips the test,
// except under CI=true, where it fails (scripts/test installs node and
// npm).
func TestGeneratedClients(t *testing.T) {
	data := t.TempDir()
	s := startProcess(t, "--data", data, "--demo") // --demo: cars to list
	const user, password = "carol", "carol generated-client password"
	if resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": user, "password": password, "email": "carol@example.org"}); resp.StatusCode != 201 {
		t.Fatalf("create carol: %d %v", resp.StatusCode, m)
	}
	resp, err := insecure.Get(s.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	ca := filepath.Join(data, "tls", "cert.pem")
	env := append(os.Environ(), "YARD_URL="+publicURL(s), "YARD_USER="+user, "YARD_PASSWORD="+password,
		"YARD_CA="+ca, "NODE_EXTRA_CA_CERTS="+ca, "NO_PROXY=localhost,127.0.0.1", "GOWORK=off")
	source := func(t *testing.T, name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "codegen", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("oapi-codegen", func(t *testing.T) {
		t.Parallel()
		bin := goInstall(t, oapiCodegen, env)
		dir := t.TempDir()
		writeFiles(t, dir, map[string][]byte{"openapi.json": doc, "main.go": source(t, "oapi-codegen.go"),
			"go.mod": []byte("module yardgen\n\ngo 1.26\n\nrequire " + oapiRuntime + "\n")})
		runIn(t, dir, env, bin, "-generate", "types,client", "-package", "yardapi", "-o", "yardapi/yardapi.go", "openapi.json")
		fetchDeps(t, dir, env)
		out, _ := runIn(t, dir, env, "go", "run", ".")
		checkFiveCalls(t, out)
	})
	t.Run("ogen", func(t *testing.T) {
		t.Parallel()
		bin := goInstall(t, ogenCmd, env)
		dir := t.TempDir()
		writeFiles(t, dir, map[string][]byte{"openapi.json": doc, "ogen.yml": []byte(ogenConfig), "main.go": source(t, "ogen.go"),
			"go.mod": []byte("module ogengen\n\ngo 1.26\n\nrequire " + ogenModule + "\n")})
		_, log := runIn(t, dir, env, bin, "--config", "ogen.yml", "--target", "api", "--package", "api", "--clean", "openapi.json")
		if got := ogenSkipped(doc, log); !slices.Equal(got, ogenSkips) {
			t.Errorf("ogen left out %v, want %v", got, ogenSkips)
		}
		fetchDeps(t, dir, env)
		out, _ := runIn(t, dir, env, "go", "run", ".")
		checkFiveCalls(t, out)
	})
	t.Run("typescript", func(t *testing.T) {
		t.Parallel()
		modules := npmInstall(t, codegenNPMPackages)
		tsc := filepath.Join(modules, "node_modules", ".bin", "tsc")
		for _, c := range []struct {
			name string
			gen  []string // the generator and its arguments, in the program's directory
		}{
			{"openapi-fetch", []string{"openapi-typescript", "openapi.json", "-o", "yard.ts"}},
			{"hey-api", []string{"openapi-ts", "-i", "openapi.json", "-o", "gen", "-c", "@hey-api/client-fetch", "-s"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				// The program beside node_modules, so that its imports resolve.
				dir := filepath.Join(modules, c.name)
				writeFiles(t, dir, map[string][]byte{"openapi.json": doc, "main.ts": source(t, c.name+".ts"), "tsconfig.json": source(t, "tsconfig.json")})
				runIn(t, dir, env, filepath.Join(modules, "node_modules", ".bin", c.gen[0]), c.gen[1:]...)
				runIn(t, dir, env, tsc, "-p", ".", "--strict")
				out, _ := runIn(t, dir, env, "node", filepath.Join("out", "main.js"))
				checkFiveCalls(t, out)
			})
		}
	})
}

// checkFiveCalls reads the line a program of testdata/codegen prints.
func checkFiveCalls(t *testing.T, out []byte) {
	t.Helper()
	var got struct {
		Dogs       int    `json:"dogs"`
		Dog        string `json:"dog"`
		Task       string `json:"task"`
		TaskStatus int    `json:"taskStatus"`
		RedCars    int    `json:"redCars"`
		Car        string `json:"car"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("the program printed %q: %v", out, err)
	}
	if got.Dog == "" || got.Task == "" || got.TaskStatus != 303 || got.RedCars == 0 || got.Car == "" {
		t.Errorf("the five calls read %+v; want a dog, its task ended by 303, red cars and a car", got)
	}
}

// goInstall installs a Go command at a version into a temporary GOBIN and
// returns its path.
func goInstall(t *testing.T, pkg string, env []string) string {
	t.Helper()
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", pkg)
	cmd.Env = append(slices.Clip(env), "GOBIN="+bin) // env is shared by parallel subtests
	if out, err := cmd.CombinedOutput(); err != nil {
		missingTool(t, "go install "+pkg+" (module proxy out of reach?)", err, out)
	}
	name := pkg[strings.LastIndex(pkg, "/")+1 : strings.LastIndex(pkg, "@")]
	return filepath.Join(bin, name)
}

// fetchDeps completes a generated module's requirements from the module
// proxy.
func fetchDeps(t *testing.T, dir string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		missingTool(t, "go mod tidy of the generated client (module proxy out of reach?)", err, out)
	}
}

// npmInstall installs packages into a temporary directory and returns it.
func npmInstall(t *testing.T, packages []string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		missingTool(t, "npm", err, nil)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missingTool(t, "node", err, nil)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, append([]string{"install", "--silent", "--no-audit", "--no-fund", "--prefix", dir}, packages...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		missingTool(t, "npm install "+strings.Join(packages, " ")+" (npm registry out of reach?)", err, out)
	}
	return dir
}

// missingTool skips the test, or fails it under CI=true.
func missingTool(t *testing.T, what string, err error, out []byte) {
	t.Helper()
	msg := fmt.Sprintf("%s: %v\n%s (scripts/test installs node and npm)", what, err, out)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// runIn runs a program in dir and returns its standard output and error;
// a failure fails the test with the start of the one and the end of the
// other (where a generator says why it stopped).
func runIn(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		lines := strings.SplitAfter(errs.String(), "\n")
		t.Fatalf("%s %s: %v\n%s\n%s", filepath.Base(name), strings.Join(args, " "), err,
			firstLines(out.String(), 40), strings.Join(lines[max(0, len(lines)-40):], ""))
	}
	return out.Bytes(), errs.Bytes()
}

// writeFiles writes files (by name) into dir, making directories.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ogenSkip is ogen's log line of an operation it leaves out, with the
// line of the document where the operation starts.
var ogenSkip = regexp.MustCompile(`Skipping operation.*"at": "openapi\.json:(\d+):`)

// ogenSkipped returns the paths of the operations ogen's log says it left
// out, sorted: the path item the line of each falls in.
func ogenSkipped(doc, log []byte) []string {
	lines := strings.Split(string(doc), "\n")
	var paths []string
	for _, m := range ogenSkip.FindAllSubmatch(log, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		for i := min(n, len(lines)) - 1; i >= 0; i-- {
			// Path items are keys of "paths", four spaces in.
			if l := lines[i]; strings.HasPrefix(l, `    "/`) {
				paths = append(paths, l[5:strings.Index(l[5:], `"`)+5])
				break
			}
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}
