package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
)

// TestBackupPrintsThePath: yard backup prints the backup's path alone on
// standard output (BACKUP=$(yard backup)) and its sentence on standard
// error; two backups run at once both succeed, into two files.
func TestBackupPrintsThePath(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	db, err := openStore(context.Background(), storeFlags{data: data})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	type result struct {
		out, err string
		code     int
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			out, errs, code := cli(t, "backup", "--data", data)
			results[i] = result{out, errs, code}
		})
	}
	wg.Wait()
	var paths []string
	for _, r := range results {
		path, ok := strings.CutSuffix(r.out, "\n")
		if r.code != 0 || !ok || strings.Contains(path, "\n") || !strings.Contains(r.err, "backed up "+filepath.Join(data, "yard.db")+" into "+path) {
			t.Fatalf("yard backup: exit %d, stdout %q, stderr %q; want the path alone on stdout", r.code, r.out, r.err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the printed path: %v", err)
		}
		paths = append(paths, path)
	}
	if paths[0] == paths[1] {
		t.Errorf("two backups at once printed one path: %s", paths[0])
	}
}

// TestRestoreLeavesNoDirectory: a refused restore into a data directory
// that does not exist creates none.
func TestRestoreLeavesNoDirectory(t *testing.T) {
	dir := t.TempDir()
	notADB := filepath.Join(dir, "notadb.db")
	if err := os.WriteFile(notADB, []byte("not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	newdir := filepath.Join(dir, "newdir")
	_, stderr, code := cli(t, "restore", notADB, "--data", newdir)
	if code != 1 || !strings.Contains(stderr, "not an SQLite database") {
		t.Errorf("yard restore notadb.db: exit %d\n%s", code, stderr)
	}
	if _, err := os.Lstat(newdir); !errors.Is(err, fs.ErrNotExist) {
		entries, _ := os.ReadDir(newdir)
		t.Errorf("the refused restore left %s: %v", newdir, entries)
	}
}

// TestServeReportsTraces: serve says at start whether traces go out and
// where, without the endpoint's query (which may hold a credential), on
// standard output and in its log.
func TestServeReportsTraces(t *testing.T) {
	t.Parallel()
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer collector.Close()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "traces: off\n"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": collector.URL + "/v1/traces?token=secret"}, "traces: " + collector.URL + "/v1/traces\n"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SDK_DISABLED": "true"}, "traces: off\n"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		out, logs := &syncBuffer{}, &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, func(k string) string { return tc.env[k] }, nil, out, logs)
		}()
		waitListening(t, out, done)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
		if !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), "durability: ") {
			t.Errorf("serve with %v printed\n%s\nwant %q", tc.env, out.String(), tc.want)
		}
		if !strings.Contains(logs.String(), `"msg":"traces"`) {
			t.Errorf("serve with %v logged no traces line:\n%s", tc.env, logs.String())
		}
		if strings.Contains(out.String()+logs.String(), "secret") {
			t.Errorf("serve with %v showed the endpoint's query", tc.env)
		}
	}
}

// TestSecondServeSaysStoreInUse: a second serve on the SQLite store of a
// running one stops, saying first that the store is in use by another
// process, and which.
func TestSecondServeSaysStoreInUse(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	first := startProcess(t, "--data", data)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data", data)
	second.Env = append(os.Environ(), "YARD_TEST_MAIN=1")
	out, err := second.CombinedOutput()
	want := fmt.Sprintf("yard: the store %s is in use by another process (pid %d): ", filepath.Join(data, "yard.db"), first.cmd.Process.Pid)
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("second serve on one SQLite store: %v\n%s\nwant %q", err, out, want)
	}
}

// TestServiceUserOpensNamedStore: a store file the user cannot open (left
// to root by hand in the service user's data directory) is refused with
// its path and the cause, not SQLite's "unable to open database file".
func TestServiceUserOpensNamedStore(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run yard as another user")
	}
	const nobody = 65534
	base, err := os.MkdirTemp("", "yard-service-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// This test binary, where the other user can run it.
	bin := filepath.Join(base, "yard")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(base, "data")
	db, err := openStore(context.Background(), storeFlags{data: data})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The directory and the lock are the service's; yard.db stays root's,
	// mode 0600 (as a restore run as root used to leave it).
	for _, p := range []string{data, filepath.Join(data, "yard.db-lock")} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(data, "yard.db"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "user", "list", "--data", data)
	cmd.Dir = base
	cmd.Env = []string{"YARD_TEST_MAIN=1", "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	want := "open store " + filepath.Join(data, "yard.db") + ": permission denied"
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("yard user list as uid %d on a store owned by root: %v\n%s\nwant %q", nobody, err, out, want)
	}
}

// copyExecutable copies the program src to dst, mode 0755.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, 0o755)
}

// TestBackupAndRestoreAsRootKeepOwner: yard backup and yard restore run
// as root in a data directory owned by the service's user leave the
// backups and the restored store to that user.
func TestBackupAndRestoreAsRootKeepOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another user")
	}
	const uid = 65534
	data := t.TempDir()
	db, err := openStore(context.Background(), storeFlags{data: data})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The service's store: every file of it, and the directory, its user's.
	entries, _ := os.ReadDir(data)
	for _, e := range entries {
		if err := os.Chown(filepath.Join(data, e.Name()), uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(data, uid, uid); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := cli(t, "backup", "--data", data); code != 0 {
		t.Fatalf("yard backup: exit %d\n%s", code, stderr)
	}
	backups, err := store.Backups(filepath.Join(data, "backups"))
	if err != nil || len(backups) != 1 {
		t.Fatalf("backups: %v %v", backups, err)
	}
	backup := backups[0]
	if _, stderr, code := cli(t, "restore", backup, "--data", data); code != 0 {
		t.Fatalf("yard restore: exit %d\n%s", code, stderr)
	}
	for _, p := range []string{filepath.Join(data, "backups"), backup, filepath.Join(data, "yard.db")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != uid {
			t.Errorf("%s: owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, uid)
		}
	}
	db, err = store.Open(context.Background(), "sqlite", data)
	if err != nil {
		t.Fatalf("the restored store: %v", err)
	}
	db.Close()
}

// TestReadmeSampleOutput: the quick start's sample of what serve --demo
// prints (README.md) is what it prints, line by line, in order: its
// fingerprint, passwords and port stand for any, and "…" for any lines.
func TestReadmeSampleOutput(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "prints the administrator's password once:\n\n```\n")
	sample, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 {
		t.Fatal("README.md has no sample of serve's output after \"prints the administrator's password once:\"")
	}
	var pattern strings.Builder
	pattern.WriteString(`^`)
	for _, line := range strings.Split(strings.TrimSuffix(sample, "\n"), "\n") {
		if line == "…" {
			pattern.WriteString(`(?:.*\n)*?`)
			continue
		}
		p := regexp.QuoteMeta(line)
		p = regexp.MustCompile(`[0-9A-F]{2}(?::[0-9A-F]{2})*:…(?::[0-9A-F]{2})+`).ReplaceAllString(p, `[0-9A-F:]+`)
		p = regexp.MustCompile(`password \S+`).ReplaceAllString(p, `password \S+`)
		p = strings.Replace(p, `127\.0\.0\.1:8443`, `127\.0\.0\.1:\d+`, 1)
		pattern.WriteString(p + `\n`)
	}
	pattern.WriteString(`$`)
	re, err := regexp.Compile(pattern.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the sample's data/tls is relative
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--demo", "--addr", "127.0.0.1:0", "--data", "data"},
			func(string) string { return "" }, nil, out, io.Discard)
	}()
	waitListening(t, out, done)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !re.MatchString(out.String()) {
		t.Errorf("serve --demo printed\n%s\nREADME.md's sample is\n%s", out.String(), sample)
	}
}
