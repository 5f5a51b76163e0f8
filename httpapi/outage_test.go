package httpapi_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/httpapi/apitest"
	"github.com/yard-api/yard/search"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestSQLiteBusyIsUnavailable: while another process holds SQLite's write
// lock past the busy time-out, writes answer 503 with Retry-After and an
// unavailable problem, /readyz says not ready, the log says so once, and
// everything answers again when the lock is released.
func TestSQLiteBusyIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.DSN(t, store.SQLite)
	db, err := store.Open(ctx, dsn, t.TempDir(), store.WithSQLiteBusyTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	env := apitest.Start(t, db)
	env.CreateUser("alice", pw)

	// Another process takes the write lock and keeps it.
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
	locked := true
	release := func() {
		if locked {
			locked = false
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer release()

	create := apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "rex@example.org"}}
	for range 3 {
		resp := env.Do(create)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(resp.Body), "/problems/unavailable") {
			t.Fatalf("write while locked: got %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Body)
		}
	}
	if resp := env.Do(apitest.Request{Path: "/readyz"}); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("readyz while locked: got %d, want 503", resp.StatusCode)
	}
	release()
	deadline := time.Now().Add(10 * time.Second)
	for env.Do(apitest.Request{Path: "/readyz"}).StatusCode != 200 {
		if time.Now().After(deadline) {
			t.Fatal("readyz not ready after the lock was released")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp := env.Do(create); resp.StatusCode != 201 {
		t.Fatalf("write after the lock: got %d %s", resp.StatusCode, resp.Body)
	}
	dogs, _, err := db.FindDogs(ctx, yard.DogFilter{Limit: 10})
	if err != nil || len(dogs) != 1 {
		t.Fatalf("dogs: got %d (%v), want 1", len(dogs), err)
	}
	logs := env.Logs()
	if n := strings.Count(logs, "store unavailable"); n != 1 {
		t.Errorf("log lines about the outage: got %d, want 1\n%s", n, logs)
	}
	if n := strings.Count(logs, "store reachable again"); n != 1 {
		t.Errorf("log lines about the end of the outage: got %d, want 1", n)
	}
	if strings.Contains(logs, "internal error") {
		t.Errorf("an outage logged as an internal error:\n%s", logs)
	}
}

// TestPoolExhaustedIsUnavailable: while every pooled connection of the
// store is taken (the SQLite writer, all of PostgreSQL's), a request waits
// for one at most Server.StoreWait and is then answered 503 with
// Retry-After and an unavailable problem; once connections come free, the
// same request succeeds. Not parallel: the write after the connections
// came free has the same 300 ms store wait, and on a machine busy with the
// package's other tests a write whose wait runs out as it commits has been
// seen to answer 500 rather than 503 (database/sql reports the transaction
// it rolled back at the deadline as already done, sql.ErrTxDone, which the
// store does not count as unavailable).
func TestPoolExhaustedIsUnavailable(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		env := apitest.Start(t, db, func(d *httpapi.Deps) { d.StoreWait = 300 * time.Millisecond })
		env.CreateUser("alice", pw)

		held := 1 // the SQLite writer
		if db.Engine() == store.Postgres {
			held = 32 // every connection of the pool
		}
		var taken, done sync.WaitGroup
		release := make(chan struct{})
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		defer func() { free(); done.Wait() }()
		for range held {
			taken.Add(1)
			done.Go(func() {
				err := db.WithTx(ctx, func(*store.Tx) error {
					taken.Done()
					<-release
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		taken.Wait()

		create := apitest.Request{Method: "POST", Path: "/v1/dogs", User: "alice", Password: pw, Body: map[string]any{"name": "Rex", "email": "rex@example.org"}}
		start := time.Now()
		resp := env.Do(create)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(resp.Body), "/problems/unavailable") {
			t.Fatalf("write with every connection taken: got %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Body)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Errorf("the request waited %v, want about the store wait (300ms)", waited)
		}
		free()
		done.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp := env.Do(create)
			if resp.StatusCode == 201 {
				break
			}
			if resp.StatusCode != 503 || time.Now().After(deadline) {
				t.Fatalf("write after the connections came free: got %d %s", resp.StatusCode, resp.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		dogs, _, err := db.FindDogs(ctx, yard.DogFilter{Limit: 10})
		if err != nil || len(dogs) != 1 {
			t.Fatalf("dogs: got %d (%v), want 1: the refused write stored nothing", len(dogs), err)
		}
	})
}

// stuckSource is the store as the search index reads it, whose reads
// wait for their context to end while stuck is set: a store that does not
// answer. It has no CarsQuietSince, so every read of the index asks it.
type stuckSource struct {
	search.Source
	stuck atomic.Bool
}

func (s *stuckSource) wait(ctx context.Context) error {
	if !s.stuck.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *stuckSource) CarsChangedSince(ctx context.Context, since yard.CarPosition) (bool, error) {
	if err := s.wait(ctx); err != nil {
		return false, err
	}
	return s.Source.CarsChangedSince(ctx, since)
}

func (s *stuckSource) ReadCarChanges(ctx context.Context, since yard.CarPosition, h yard.CarChangeHandler) (yard.CarPosition, error) {
	if err := s.wait(ctx); err != nil {
		return since, err
	}
	return s.Source.ReadCarChanges(ctx, since, h)
}

// TestIndexReadsKeepStoreWait: the car reads the index answers get no
// store wait from the middleware, yet one that has to reach a store that
// does not answer still ends with 503 after about the store wait: the
// index arms it (search.WithStoreWait), and publicRead for a request with
// credentials. Once the store answers, the same reads succeed.
func TestIndexReadsKeepStoreWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	if _, err := db.ImportCars(ctx, strings.NewReader(carsFixture), 0); err != nil {
		t.Fatal(err)
	}
	const wait = 300 * time.Millisecond
	src := &stuckSource{Source: db}
	ix := search.New(src, nil, search.WithStoreWait(wait))
	if err := ix.Build(ctx); err != nil {
		t.Fatal(err)
	}
	env := apitest.Start(t, db, func(d *httpapi.Deps) { d.Cars, d.StoreWait = ix, wait })
	env.CreateUser("alice", pw)

	reads := []apitest.Request{
		{Method: "GET", Path: "/cars/c01"},
		{Method: "GET", Path: "/car/c01"},
		{Method: "GET", Path: "/cars?color=red"},
		{Method: "GET", Path: "/cars/search/by-vendor?make=Ford"},
		{Method: "GET", Path: "/cars/c01", User: "alice", Password: pw},
	}
	src.stuck.Store(true)
	for _, req := range reads {
		start := time.Now()
		resp := env.Do(req)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(resp.Body), "/problems/unavailable") {
			t.Errorf("%s (user %q) with the store stuck: got %d %s, want 503 with Retry-After", req.Path, req.User, resp.StatusCode, resp.Body)
		}
		if waited := time.Since(start); waited > 10*time.Second {
			t.Errorf("%s waited %v, want about the store wait (%v)", req.Path, waited, wait)
		}
	}
	src.stuck.Store(false)
	for _, req := range reads {
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp := env.Do(req)
			if resp.StatusCode == 200 {
				break
			}
			if resp.StatusCode != 503 || time.Now().After(deadline) {
				t.Fatalf("%s once the store answers: got %d %s", req.Path, resp.StatusCode, resp.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
