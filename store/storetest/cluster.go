package storetest

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"testing"
)

// Cluster is a PostgreSQL cluster of its own for one test, which the test
// may stop and start (an outage of the database) without disturbing the
// other tests of the package, which use the shared cluster.
type Cluster struct {
	// URL is the admin URL of the cluster (database postgres).
	URL  string
	dir  string
	bin  string
	opts string
	// asOwner runs a command as the cluster's owner: empty, or runuser
	// and its arguments when the test runs as root.
	asOwner []string
}

// NewCluster starts a dedicated cluster, removed when t ends. It skips t
// when PostgreSQL cannot be had (fails it under CI=true), like PostgresURL.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := newCluster("yard-pg-own-", 200)
	if c != nil {
		t.Cleanup(c.remove)
	}
	if err != nil {
		skipPostgres(t, err, "install postgresql-15")
	}
	return c
}

// newCluster starts a cluster in a new temporary directory named from
// prefix, taking at most maxConns connections. On an error the cluster
// returned, when not nil, is to be removed.
func newCluster(prefix string, maxConns int) (*Cluster, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		// initdb refuses to run as root: run the cluster as the postgres user.
		pgUser, err := user.Lookup("postgres")
		if err != nil {
			return c, fmt.Errorf("running as root and no postgres user: %w", err)
		}
		if out, err := exec.Command("chown", "-R", pgUser.Username, dir).CombinedOutput(); err != nil {
			return c, fmt.Errorf("chown %s: %v: %s", dir, err, out)
		}
		c.asOwner = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := c.Run(filepath.Join(bin, "initdb"), "-D", c.DataDir(), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		return c, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// A free port: one the system gives a listener, closed at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return c, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=%d", port, dir, maxConns)
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c, c.start()
}

// start starts the cluster; pg_ctl -w returns once the server's PID file
// says it accepts connections.
func (c *Cluster) start() error {
	if out, err := c.pgCtl("-o", c.opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	return nil
}

// pgCtl runs pg_ctl on the cluster's data directory.
func (c *Cluster) pgCtl(args ...string) ([]byte, error) {
	return c.Run(append([]string{filepath.Join(c.bin, "pg_ctl"), "-D", c.DataDir()}, args...)...)
}

// Stop stops the cluster as an operator restarting it would (fast
// shutdown: open connections are ended).
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if out, err := c.pgCtl("-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		t.Fatalf("pg_ctl stop: %v: %s", err, out)
	}
}

// Start starts the stopped cluster again on the same port.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
}

// NewDatabase creates an empty database in the cluster and returns its
// URL; it is dropped when t ends.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("yard_%d_%d", os.Getpid(), dbCounter.Add(1))
	if err := c.exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() { _ = c.exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`) })
	u, _ := url.Parse(c.URL)
	u.Path = "/" + name
	return u.String()
}

// exec runs a statement on the cluster's postgres database.
func (c *Cluster) exec(stmt string) error {
	db, err := sql.Open("pgx", c.URL)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(stmt)
	return err
}

func (c *Cluster) remove() {
	if c.dir == "" {
		return
	}
	_, _ = c.pgCtl("-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(c.dir)
}

// Bin is the directory of the cluster's PostgreSQL binaries (pg_dump,
// pg_restore, pg_resetwal …).
func (c *Cluster) Bin() string { return c.bin }

// DataDir is the cluster's data directory (PGDATA).
func (c *Cluster) DataDir() string { return filepath.Join(c.dir, "data") }

// Run runs a command as the cluster's owner (the postgres user when the
// test runs as root) and returns its combined output.
func (c *Cluster) Run(args ...string) ([]byte, error) {
	args = append(slices.Clone(c.asOwner), args...)
	return exec.Command(args[0], args[1:]...).CombinedOutput()
}
