package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// TestCarWriteCutAfterCommit: one process's connections to PostgreSQL go
// through a proxy that cuts them right after a car write's commit reached
// it, before the other process's acknowledgement did (docs/cars.md, "Read
// leases"). The write is answered EUNAVAILABLE, outcome unknown, never as
// done; and the other process, which holds a read lease, does not keep
// answering "nothing changed". With nothing cut, the write is answered as
// done and the other process's next read sees it.
func TestCarWriteCutAfterCommit(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	reader := storetest.OpenDSN(t, dsn)
	lctx, stop := context.WithCancel(ctx)
	held := make(chan struct{})
	go func() { defer close(held); reader.HoldCarLease(lctx, time.Second, nil) }()
	t.Cleanup(func() { stop(); <-held })
	if err := reader.CreateGarage(ctx, &yard.Garage{ID: "g-cut", Name: "Cut", State: "CA"}); err != nil {
		t.Fatal(err)
	}
	_, at := readCarIDs(t, reader, yard.CarPosition{})
	// settle probes until the reader answers without asking.
	settle := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !reader.CarsQuietSince(at) {
			if time.Now().After(deadline) {
				t.Fatal("no quiet read within 10 s")
			}
			changed, err := reader.CarsChangedSince(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			if changed {
				_, at = readCarIDs(t, reader, at)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	car := func(id string) *yard.Car {
		return &yard.Car{ID: id, Color: "red", Type: "van", Doors: 3, Make: "Kia", Model: "Rio", Year: 2020, Garage: "g-cut"}
	}
	blue := "blue"
	for _, w := range []struct {
		name  string
		setup bool // the car exists before the write
		write func(ctx context.Context, db *store.DB, id string) error
	}{
		{"replace", false, func(ctx context.Context, db *store.DB, id string) error {
			_, err := db.ReplaceCar(ctx, car(id))
			return err
		}},
		{"create", false, func(ctx context.Context, db *store.DB, id string) error { return db.CreateCar(ctx, car(id)) }},
		{"update", true, func(ctx context.Context, db *store.DB, id string) error {
			_, err := db.UpdateCar(ctx, id, yard.CarUpdate{Color: &blue})
			return err
		}},
		{"delete", true, func(ctx context.Context, db *store.DB, id string) error { return db.DeleteCar(ctx, id) }},
	} {
		for _, cut := range []bool{false, true} {
			name := w.name
			if cut {
				name += " cut after commit"
			}
			t.Run(name, func(t *testing.T) {
				id := "car-" + strings.ReplaceAll(name, " ", "-")
				if w.setup {
					if err := reader.CreateCar(ctx, car(id)); err != nil {
						t.Fatal(err)
					}
				}
				p := newPGProxy(t, dsn)
				writer := storetest.OpenDSN(t, p.dsn)
				// A first write, answered once the reader acknowledged
				// it: the writer listens.
				if _, err := writer.ReplaceGarage(ctx, &yard.Garage{ID: "g-warm", Name: "Warm", State: "CA"}); err != nil {
					t.Fatal(err)
				}
				settle()
				if cut {
					p.cutAfterCommitOf([]byte(id))
				}
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				start := time.Now()
				err := w.write(wctx, writer, id)
				took := time.Since(start)
				if !cut {
					if err != nil {
						t.Fatalf("write: %v", err)
					}
					if reader.CarsQuietSince(at) {
						t.Fatal("the other process answered a read after the write without asking")
					}
					if changed, err := reader.CarsChangedSince(ctx, at); err != nil || !changed {
						t.Fatalf("the other process: changed %v (%v), want true", changed, err)
					}
					return
				}
				if !p.wasCut() {
					t.Fatal("the proxy saw no commit of the write")
				}
				var ye *yard.Error
				if !errors.As(err, &ye) || ye.Code != yard.EUNAVAILABLE || !strings.Contains(ye.Message, "may have been applied") {
					t.Errorf("write cut after its commit: got %v, want EUNAVAILABLE saying it may have been applied", err)
				}
				if took > 15*time.Second {
					t.Errorf("write cut after its commit answered after %v", took)
				}
				// The write committed; the other process does not keep
				// answering from before it.
				deadline := time.Now().Add(5 * time.Second)
				for reader.CarsQuietSince(at) {
					if time.Now().After(deadline) {
						t.Fatal("the other process still answers without asking 5 s after a committed write")
					}
					time.Sleep(10 * time.Millisecond)
				}
				if changed, err := reader.CarsChangedSince(ctx, at); err != nil || !changed {
					t.Fatalf("the other process after the cut write: changed %v (%v), want true", changed, err)
				}
			})
		}
	}
}

// pgProxy forwards TCP connections to a PostgreSQL server on loopback.
// Armed with a marker (cutAfterCommitOf), it cuts the process off from the
// moment the client sends the marker until its transaction's commit is
// answered: from the marker on, what the server sends on a connection that
// LISTENs is held back (the acknowledgements of the read leases never
// arrive); at the server's ReadyForQuery (idle) after the marker, the
// commit, every other connection is closed, that answer goes to the
// client, its connection is closed too, and connections are refused from
// then on.
type pgProxy struct {
	dsn    string
	ln     net.Listener
	target string
	cutoff chan struct{} // closed at the cut

	mu     sync.Mutex
	conns  map[net.Conn]bool
	marker []byte
	sent   bool // the marker went through
	down   bool
}

func newPGProxy(t *testing.T, dsn string) *pgProxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, target: u.Host, conns: map[net.Conn]bool{}, cutoff: make(chan struct{})}
	u.Host = ln.Addr().String()
	p.dsn = u.String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.closeAll()
	})
	return p
}

// cutAfterCommitOf arms the proxy.
func (p *pgProxy) cutAfterCommitOf(marker []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = marker
}

func (p *pgProxy) wasCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

// closeAll closes every connection but those in keep.
func (p *pgProxy) closeAll(keep ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if !slices.Contains(keep, c) {
			c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *pgProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *pgProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	var mu sync.Mutex
	var sent, listens bool // this connection sent the marker; a LISTEN
	go func() {
		// Client to server, looking for the marker (in a message's
		// parameters) and for LISTEN.
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				p.mu.Lock()
				m := p.marker
				if m != nil && bytes.Contains(buf[:n], m) {
					p.sent = true
					mu.Lock()
					sent = true
					mu.Unlock()
				}
				p.mu.Unlock()
				if bytes.Contains(buf[:n], []byte("LISTEN ")) {
					mu.Lock()
					listens = true
					mu.Unlock()
				}
				if _, err := server.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				server.Close()
				return
			}
		}
	}()
	// Server to client, a message at a time (type, length, body).
	r := &msgReader{r: bufio.NewReader(server)}
	for {
		msg, err := r.next()
		if err != nil {
			client.Close()
			return
		}
		mu.Lock()
		committed := sent && msg[0] == 'Z' && len(msg) == 6 && msg[5] == 'I'
		held := listens
		mu.Unlock()
		p.mu.Lock()
		held = held && p.sent
		p.mu.Unlock()
		if held {
			<-p.cutoff // never delivered
			return
		}
		if committed {
			p.mu.Lock()
			p.down = true
			p.mu.Unlock()
			close(p.cutoff)
			p.closeAll(client, server)
			_, _ = client.Write(msg)
			client.Close()
			server.Close()
			return
		}
		if _, err := client.Write(msg); err != nil {
			server.Close()
			return
		}
	}
}

// msgReader reads the server's messages of the PostgreSQL protocol (every
// one typed: a byte, then a length counting itself).
type msgReader struct {
	r io.Reader
}

func (m *msgReader) next() ([]byte, error) {
	head := make([]byte, 5)
	if _, err := io.ReadFull(m.r, head); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(head[1:]))
	if n < 4 {
		return nil, errors.New("bad message length")
	}
	msg := make([]byte, 1+n)
	copy(msg, head)
	if _, err := io.ReadFull(m.r, msg[5:]); err != nil {
		return nil, err
	}
	return msg, nil
}
