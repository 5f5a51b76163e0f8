package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// The client libraries of other languages that TestThirdPartyClients runs
// (docs/clients.md). The Python ones are Debian's packages, for Debian's
// /usr/bin/python3 (scripts/test installs them); the npm packages are
// pinned here. eventsource is the version httpapi/events_node_test.go pins.
var (
	clientPython      = "/usr/bin/python3"
	clientPyModules   = []string{"requests", "requests_oauthlib", "openid", "jwt", "jwcrypto"}
	clientNPMPackages = []string{"oauth-1.0a@2.2.6", "openid@2.0.18", "jose@6.2.18", "eventsource@5.1.5"}
)

// clientsDoc is the document whose table TestThirdPartyClients writes, and
// the markers around the table.
const (
	clientsDoc   = "../../docs/clients.md"
	clientsBegin = "<!-- clients:begin -->"
	clientsEnd   = "<!-- clients:end -->"
)

// clientResult is one line a client script prints: one flow of one
// library, and whether it completed.
type clientResult struct {
	Library  string `json:"library"`
	Language string `json:"language"`
	Version  string `json:"version"`
	Scheme   string `json:"scheme"`
	Flow     string `json:"flow"`
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	script   string
}

// TestThirdPartyClients runs every scheme's flow through client libraries
// written by others, in Python and in Node.js (testdata/clients), against
// a real serve process on SQLite and on PostgreSQL, and fails on any flow
// that did not complete. It then writes the table of docs/clients.md from
// the results and compares it with the document; YARD_UPDATE_DOCS=1
// rewrites the document instead.
func TestThirdPartyClients(t *testing.T) {
	t.Parallel()
	nodeDir := clientPrerequisites(t)
	pyScripts, _ := filepath.Glob("testdata/clients/python/*.py")
	pyScripts = slices.DeleteFunc(pyScripts, func(s string) bool { return filepath.Base(s) == "yardtest.py" })
	nodeScripts, _ := filepath.Glob(filepath.Join(nodeDir, "*.mjs"))
	nodeScripts = slices.DeleteFunc(nodeScripts, func(s string) bool { return filepath.Base(s) == "yardtest.mjs" })
	if len(pyScripts) == 0 || len(nodeScripts) == 0 {
		t.Fatalf("no client scripts: %v %v", pyScripts, nodeScripts)
	}
	// The token pair signed with a key the JWKS publishes (serve
	// --token-alg, docs/auth.md), so that the libraries can verify it.
	tokenAlg := "EdDSA"
	var help bytes.Buffer
	_ = run(context.Background(), []string{"help", "serve"}, func(string) string { return "" }, nil, &help, &help)
	serveTokenAlg := strings.Contains(help.String(), "-token-alg")
	if !serveTokenAlg {
		t.Errorf("serve has no --token-alg flag: the access-token flows verify with the JWKS and cannot pass")
	}

	var mu sync.Mutex
	results := map[string][]clientResult{} // by engine
	t.Run("engines", func(t *testing.T) {
		for _, engine := range storetest.Engines {
			t.Run(engine, func(t *testing.T) {
				t.Parallel()
				// Several scripts sign in at once: their password checks
				// wait for a hashing slot rather than get a 503.
				args := []string{"--data", t.TempDir(), "--hash-queue", "64"}
				if engine == store.Postgres {
					args = append(args, "--db", storetest.NewPostgresDatabase(t))
				}
				if serveTokenAlg {
					args = append(args, "--token-alg", tokenAlg)
				}
				env := clientServer(t, args)
				env = append(env, "YARD_TOKEN_ALG="+tokenAlg)
				var cmds []*exec.Cmd
				for _, s := range pyScripts {
					abs, _ := filepath.Abs(s)
					cmds = append(cmds, exec.Command(clientPython, abs))
				}
				for _, s := range nodeScripts {
					cmd := exec.Command("node", s)
					cmd.Dir = nodeDir
					cmds = append(cmds, cmd)
				}
				got := runClients(t, cmds, env)
				mu.Lock()
				results[engine] = got
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	for _, engine := range storetest.Engines {
		if results[engine] == nil {
			t.Logf("docs/clients.md not checked: no results on %s", engine)
			return
		}
	}
	checkClientsDoc(t, clientsTable(results))
}

// clientPrerequisites checks that the Python packages import, and installs
// the npm packages with the scripts beside them into one directory, which
// it returns. What is missing skips the test, except under CI=true
// (scripts/test installs all of it), where it fails.
func clientPrerequisites(t *testing.T) string {
	t.Helper()
	missing := func(what string, err error, out []byte) {
		t.Helper()
		msg := fmt.Sprintf("%s: %v\n%s (scripts/test installs it)", what, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	imports := "import " + strings.Join(clientPyModules, ", ")
	if out, err := exec.Command(clientPython, "-c", imports).CombinedOutput(); err != nil {
		missing("Debian's python3 with python3-requests, -requests-oauthlib, -openid, -jwt, -jwcrypto", err, out)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing("npm", err, nil)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node", err, nil)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, append([]string{"install", "--silent", "--no-audit", "--no-fund", "--prefix", dir}, clientNPMPackages...)...)
	if out, err := install.CombinedOutput(); err != nil {
		missing("npm install "+strings.Join(clientNPMPackages, " ")+" (npm registry out of reach?)", err, out)
	}
	// The scripts run beside node_modules, so that their imports resolve.
	scripts, _ := filepath.Glob("testdata/clients/node/*.mjs")
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(s)), b, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// clientServer starts serve with args, adds the user alice with a dog and
// an OAuth consumer, and returns the environment of the client scripts
// (yardtest.py and yardtest.mjs read it).
func clientServer(t *testing.T, args []string) []string {
	t.Helper()
	s := startProcess(t, args...)
	const password = "alice client password"
	resp, m := call(t, "POST", s.URL+"/v1/people", "admin", s.Password, map[string]any{"name": "alice", "password": password, "email": "alice@example.org"})
	if resp.StatusCode != 201 {
		t.Fatalf("create alice: %d %v", resp.StatusCode, m)
	}
	resp, dog := call(t, "POST", s.URL+"/v1/dogs", "alice", password, map[string]any{"name": "Rex", "email": "rex@example.org", "barkEffect": "record"})
	if resp.StatusCode != 201 {
		t.Fatalf("create dog: %d %v", resp.StatusCode, dog)
	}
	const callback = "https://client.example/callback"
	resp, consumer := call(t, "POST", s.URL+"/oauth/consumers", "admin", s.Password, map[string]any{"name": "Client Tests", "callbackUrl": callback})
	if resp.StatusCode != 201 {
		t.Fatalf("create consumer: %d %v", resp.StatusCode, consumer)
	}
	ca := filepath.Join(args[1], "tls", "cert.pem") // args start with --data DIR
	return append(os.Environ(),
		"YARD_URL="+publicURL(s), // the certificate's name, and the base URL OAuth signs for
		"YARD_USER=alice", "YARD_PASSWORD="+password, "YARD_DOG=/v1/dogs/"+dog["id"].(string)+"/",
		"YARD_CONSUMER_KEY="+consumer["key"].(string), "YARD_CONSUMER_SECRET="+consumer["secret"].(string),
		"YARD_CONSUMER_CALLBACK="+callback,
		"REQUESTS_CA_BUNDLE="+ca, "SSL_CERT_FILE="+ca, "NODE_EXTRA_CA_CERTS="+ca,
		"NO_PROXY=localhost,127.0.0.1", "PYTHONDONTWRITEBYTECODE=1")
}

// runClients runs the scripts, three at a time, and returns their result
// lines in the order of cmds; a failed flow, a script that failed or
// printed nothing fails the test.
func runClients(t *testing.T, cmds []*exec.Cmd, env []string) []clientResult {
	t.Helper()
	out := make([][]clientResult, len(cmds))
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		name := filepath.Base(cmd.Args[len(cmd.Args)-1])
		cmd.Env = env
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = time.Second
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				_ = cmd.Process.Kill()
				err = fmt.Errorf("killed after 2 minutes: %v", <-done)
			}
			sc := bufio.NewScanner(&stdout)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var r clientResult
				if jerr := json.Unmarshal(sc.Bytes(), &r); jerr != nil {
					t.Errorf("%s printed %q: %v", name, sc.Text(), jerr)
					continue
				}
				r.script = name
				if !r.OK {
					t.Errorf("%s: %s (%s %s) failed: %s\n%s", name, r.Scheme, r.Library, r.Flow, r.Error, firstLines(stderr.String(), 40))
				}
				out[i] = append(out[i], r)
			}
			if err != nil && !slices.ContainsFunc(out[i], func(r clientResult) bool { return !r.OK }) {
				t.Errorf("%s: %v\n%s", name, err, firstLines(stderr.String(), 40))
			}
			if len(out[i]) == 0 {
				t.Errorf("%s printed no result", name)
			}
		})
	}
	wg.Wait()
	return slices.Concat(out...)
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…\n")
	}
	return strings.Join(lines, "")
}

// clientSchemes orders the table by scheme, as docs/auth.md does.
var clientSchemes = []string{"Basic", "Digest", "Cookie session", "Token pair (JWT)", "Public-key token", "OAuth 1.0a", "OpenID 2.0"}

// clientPackages says where each library comes from.
var clientPackages = map[string]string{
	"requests":          "Debian python3-requests",
	"requests-oauthlib": "Debian python3-requests-oauthlib",
	"python3-openid":    "Debian python3-openid",
	"PyJWT":             "Debian python3-jwt",
	"jwcrypto":          "Debian python3-jwcrypto",
	"oauth-1.0a":        "npm oauth-1.0a",
	"openid":            "npm openid",
	"jose":              "npm jose",
	"eventsource":       "npm eventsource",
}

// clientsTable is the Markdown table of the flows that completed, one row
// per flow, with the engines it completed on.
func clientsTable(byEngine map[string][]clientResult) string {
	type row struct {
		r       clientResult
		engines []string
	}
	var rows []*row
	index := map[string]*row{}
	names := map[string]string{store.SQLite: "SQLite", store.Postgres: "PostgreSQL"}
	for _, engine := range storetest.Engines {
		for _, r := range byEngine[engine] {
			if !r.OK {
				continue
			}
			key := strings.Join([]string{r.Library, r.Language, r.Version, r.Scheme, r.Flow}, "\x00")
			if index[key] == nil {
				index[key] = &row{r: r}
				rows = append(rows, index[key])
			}
			index[key].engines = append(index[key].engines, names[engine])
		}
	}
	slices.SortStableFunc(rows, func(a, b *row) int {
		if c := slices.Index(clientSchemes, a.r.Scheme) - slices.Index(clientSchemes, b.r.Scheme); c != 0 {
			return c
		}
		if c := strings.Compare(a.r.Language, b.r.Language); c != 0 {
			return c
		}
		return strings.Compare(strings.ToLower(a.r.Library), strings.ToLower(b.r.Library))
	})
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| scheme | library | language | version | package | flow | engines |\n|---|---|---|---|---|---|---|\n")
	for _, w := range rows {
		pkg := clientPackages[w.r.Library]
		if pkg == "" {
			pkg = "?"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(w.r.Scheme), cell(w.r.Library), cell(w.r.Language),
			cell(w.r.Version), cell(pkg), cell(w.r.Flow), strings.Join(w.engines, ", "))
	}
	return b.String()
}

// checkClientsDoc compares table with the part of docs/clients.md between
// the markers; with YARD_UPDATE_DOCS=1 it writes it there instead.
func checkClientsDoc(t *testing.T, table string) {
	t.Helper()
	raw, err := os.ReadFile(clientsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok1 := strings.Cut(doc, clientsBegin+"\n")
	current, after, ok2 := strings.Cut(rest, clientsEnd)
	if !ok1 || !ok2 {
		t.Fatalf("docs/clients.md: no %s … %s markers (each on its own line)", clientsBegin, clientsEnd)
	}
	if current == table {
		return
	}
	if os.Getenv("YARD_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(clientsDoc, []byte(before+clientsBegin+"\n"+table+clientsEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("docs/clients.md: the table of client libraries rewritten")
		return
	}
	t.Errorf("docs/clients.md: the table of client libraries differs from the test's results "+
		"(YARD_UPDATE_DOCS=1 go test ./cmd/yard -run TestThirdPartyClients rewrites it):\n%s", lineDiff(current, table))
}

// lineDiff is a line diff of a and b: the lines only in a ("- "), only in
// b ("+ ") and both ("  "), by a longest common subsequence.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j]: the length of the longest common subsequence of al[i:] and bl[j:].
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		switch {
		case i < len(al) && j < len(bl) && al[i] == bl[j]:
			fmt.Fprintf(&out, "  %s\n", al[i])
			i, j = i+1, j+1
		case j == len(bl) || (i < len(al) && lcs[i+1][j] >= lcs[i][j+1]):
			fmt.Fprintf(&out, "- %s\n", al[i])
			i++
		default:
			fmt.Fprintf(&out, "+ %s\n", bl[j])
			j++
		}
	}
	return out.String()
}

// TestClientsTable: the table has one row per flow that completed, ordered
// by scheme, language and library, with the engines it completed on; the
// diff shows a moved row.
func TestClientsTable(t *testing.T) {
	r := func(lib, lang, scheme, flow string, ok bool) clientResult {
		return clientResult{Library: lib, Language: lang, Version: "1", Scheme: scheme, Flow: flow, OK: ok}
	}
	got := clientsTable(map[string][]clientResult{
		store.SQLite: {r("PyJWT", "Python", "Public-key token", "verify", true), r("jose", "Node.js", "Public-key token", "verify", true),
			r("requests", "Python", "Basic", "GET | 401", true), r("requests", "Python", "Digest", "MD5", false)},
		store.Postgres: {r("requests", "Python", "Basic", "GET | 401", true), r("PyJWT", "Python", "Public-key token", "verify", true)},
	})
	want := `| scheme | library | language | version | package | flow | engines |
|---|---|---|---|---|---|---|
| Basic | requests | Python | 1 | Debian python3-requests | GET \| 401 | SQLite, PostgreSQL |
| Public-key token | jose | Node.js | 1 | npm jose | verify | SQLite |
| Public-key token | PyJWT | Python | 1 | Debian python3-jwt | verify | SQLite, PostgreSQL |
`
	if got != want {
		t.Errorf("table:\n%s", lineDiff(want, got))
	}
	if d := lineDiff("a\nb\nc", "a\nc\nb"); d != "  a\n- b\n  c\n+ b\n" {
		t.Errorf("lineDiff of a moved line: got %q", d)
	}
}
