// Package storetest gives tests a fresh, migrated store on each engine:
// SQLite in a temporary directory, and PostgreSQL in a throwaway cluster
// that it starts with the Debian binaries (initdb, pg_ctl) on a free
// loopback port and removes when the test binary ends.
//
// Set YARD_TEST_POSTGRES_URL to use a running server instead. Without
// PostgreSQL the PostgreSQL half of a test is skipped with a loud message,
// except under CI=true, where it fails.
package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
)

// Main runs the tests of a package and then stops the cluster they started.
// Call it from TestMain: func TestMain(m *testing.M) { storetest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.remove()
	}
	if n := skips.n.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "%s: SKIPPED %d PostgreSQL tests: %v\n", filepath.Base(os.Args[0]), n, skips.reason.Load())
	}
	os.Exit(code)
}

// skips counts the tests skipped for want of PostgreSQL.
var skips struct {
	n      atomic.Int64
	reason atomic.Value // string
	once   sync.Once
}

// SkipLogEnv names the variable that names a file where each test binary
// that skipped PostgreSQL tests appends a line. t.Skip's message shows only
// under go test -v; scripts/test sets it and prints the file after the
// run, so a skip is seen without -v.
const SkipLogEnv = "YARD_TEST_SKIP_LOG"

// skipPostgres skips t because PostgreSQL cannot be had, or fails it under
// CI=true; the skip is counted, logged (SkipLogEnv) and summed up by Main.
func skipPostgres(t testing.TB, err error, hint string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true: %v", err)
	}
	skips.n.Add(1)
	skips.reason.Store(err.Error())
	// The first skip appends "BINARY: PostgreSQL tests skipped: ERR" to
	// the file SkipLogEnv names.
	skips.once.Do(func() {
		path := os.Getenv(SkipLogEnv)
		if path == "" {
			return
		}
		f, werr := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if werr == nil {
			binary := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
			_, werr = fmt.Fprintf(f, "%s: PostgreSQL tests skipped: %s\n", binary, strings.ReplaceAll(err.Error(), "\n", " "))
			werr = errors.Join(werr, f.Close())
		}
		if werr != nil {
			fmt.Fprintf(os.Stderr, "storetest: %s: %v\n", SkipLogEnv, werr)
		}
	})
	t.Skipf("SKIPPING POSTGRESQL TESTS: %v (%s)", err, hint)
}

// Engines lists the engine names ForEachEngine runs.
var Engines = []string{store.SQLite, store.Postgres}

// ForEachEngine runs fn as a subtest once per engine with a fresh store.
func ForEachEngine(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			fn(t, Open(t, engine))
		})
	}
}

// Open returns a fresh, migrated store of the engine, opened with opts and
// closed when t ends.
func Open(t testing.TB, engine string, opts ...store.Option) *store.DB {
	t.Helper()
	return OpenDSN(t, DSN(t, engine), opts...)
}

// OpenDSN opens (with opts) and migrates the store at dsn (of DSN), closed
// when t ends; two calls with one dsn are two processes on one database.
func OpenDSN(t testing.TB, dsn string, opts ...store.Option) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn, t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate store: %v", err)
	}
	return db
}

// DSN returns the connection string of a fresh, empty database of the
// engine: a file in a temporary directory for SQLite, a new database in the
// test cluster for PostgreSQL.
func DSN(t testing.TB, engine string) string {
	t.Helper()
	switch engine {
	case store.SQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "yard.db")
	case store.Postgres:
		return NewPostgresDatabase(t)
	}
	t.Fatalf("unknown engine %q", engine)
	return ""
}

var dbCounter atomic.Int64

// NewPostgresDatabase creates an empty database in the test cluster and
// returns its URL; it is dropped when t ends.
func NewPostgresDatabase(t testing.TB) string {
	t.Helper()
	return (&Cluster{URL: PostgresURL(t)}).NewDatabase(t)
}

// shared is the cluster the tests of the package share, started on first
// use; with YARD_TEST_POSTGRES_URL it is only that URL (nothing to remove).
var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// PostgresURL returns the admin URL of the test cluster, starting it on
// first use. It skips t when PostgreSQL cannot be had, or fails it under
// CI=true.
func PostgresURL(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() {
		if u := os.Getenv("YARD_TEST_POSTGRES_URL"); u != "" {
			shared.c = &Cluster{URL: u}
			return
		}
		shared.c, shared.err = newCluster("yard-pg-", 400)
	})
	if shared.err != nil {
		skipPostgres(t, shared.err, "install postgresql-15 or set YARD_TEST_POSTGRES_URL")
	}
	return shared.c.URL
}

// postgresBin finds the newest PostgreSQL server binaries.
func postgresBin() (string, error) {
	if p := os.Getenv("YARD_PG_BIN"); p != "" {
		return p, nil
	}
	byVersion := func(a, b string) int { return cmp.Compare(versionOf(a), versionOf(b)) }
	if found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(found) > 0 {
		return filepath.Dir(slices.MaxFunc(found, byVersion)), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) found")
}

// versionOf is the major version of /usr/lib/postgresql/VERSION/bin/initdb.
func versionOf(initdb string) (n int) {
	fmt.Sscanf(filepath.Base(filepath.Dir(filepath.Dir(initdb))), "%d", &n)
	return n
}

// Clock is a settable clock for tests of time-outs, expiry and schedules:
// give its Now to the store (db.Now) and to the services under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
