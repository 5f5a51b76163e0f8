package httpapi

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestWatchStore: the store watcher ends an outage once the store answers
// again, without /readyz; it keeps watching while the store cannot be
// reached, whatever the error says (a closed store included), and stops
// when its context ends.
func TestWatchStore(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t, store.SQLite)
	db, err := store.Open(ctx, dsn, t.TempDir(), store.WithSQLiteBusyTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s := New(Deps{DB: db, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan struct{})
	go func() { defer close(stopped); s.WatchStore(wctx) }()

	// Another process holds SQLite's write lock: the store cannot begin a
	// write.
	other, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	s.storeUnavailable(errors.New("the store is locked"))
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	// The watcher ends the outage, then logs its end: wait for the log.
	ended := func() bool { return !s.outage.Down() && strings.Contains(logs.String(), "store reachable again") }
	for deadline := time.Now().Add(10 * time.Second); !ended(); {
		if time.Now().After(deadline) {
			t.Fatalf("the outage did not end within 10 s of the store answering:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "store reachable again"); n != 1 {
		t.Fatalf("the end of the outage logged %d times, want once:\n%s", n, logs)
	}

	// A store closed under the server: the watcher goes on until its
	// context ends.
	db.Close()
	s.storeUnavailable(errors.New("sql: database is closed"))
	if err := db.Reachable(ctx); err == nil {
		t.Fatal("a closed store is reachable")
	}
	select {
	case <-stopped:
		t.Fatal("the watcher stopped before its context ended")
	case <-time.After(3 * storeDownInterval):
	}
	stop()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop within 5 s of its context's end")
	}
	if !s.outage.Down() {
		t.Fatal("the outage of a closed store ended")
	}
}
