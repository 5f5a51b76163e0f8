package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// crash lets go of a replay log the way a killed process does: the lock is
// released and nothing is flushed or closed in order.
func (l *replayLog) crash() {
	close(l.stop)
	<-l.done
	l.lock.Close()
}

func TestReplayLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "yard.db-signatures")
	now := time.UnixMilli(1_800_000_000_000)
	exp := now.Add(5 * time.Minute)
	exps := func(n int) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = exp
		}
		return out
	}
	use := func(t *testing.T, l *replayLog, sigs ...string) string {
		t.Helper()
		fresh, err := l.use(sigs, exps(len(sigs)), now)
		if err != nil {
			t.Fatalf("use %v: %v", sigs, err)
		}
		var got []string
		for _, s := range sigs {
			if fresh[s] {
				got = append(got, s)
				fresh[s] = false // a repeated one counts once
			}
		}
		return strings.Join(got, ",")
	}

	l, err := openReplayLog(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := use(t, l, "a", "b", "a"); got != "a,b" {
		t.Fatalf("first use: new %q, want a,b", got)
	}
	if got := use(t, l, "a", "c"); got != "c" {
		t.Fatalf("second use: new %q, want c", got)
	}

	// Another process cannot take the log while this one holds it.
	if _, err := openReplayLog(dir, now); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second open: %v, want held by another process", err)
	}

	// A crash in the middle of a write leaves a torn record: the next start
	// cuts it off, keeps every whole record, and appends stay aligned.
	l.crash()
	seg := filepath.Join(dir, fmt.Sprintf("%d.log", exp.UnixMilli()/60000))
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 13))
	f.Close()
	if l, err = openReplayLog(dir, now); err != nil {
		t.Fatal(err)
	}
	if got := use(t, l, "a", "b", "c", "d"); got != "d" {
		t.Fatalf("after a crash: new %q, want only d", got)
	}
	if st, _ := os.Stat(seg); st.Size() != 4*replayRecord {
		t.Fatalf("log holds %d bytes, want %d (4 records)", st.Size(), 4*replayRecord)
	}

	// A failed write records nothing of its batch; the next one works.
	l.mu.Lock()
	l.files[exp.UnixMilli()/60000].Close()
	l.mu.Unlock()
	if _, err := l.use([]string{"e", "f"}, exps(2), now); err == nil {
		t.Fatal("write to a closed file: no error")
	}
	if got := use(t, l, "e", "f"); got != "e,f" {
		t.Fatalf("after a failed write: new %q, want e,f", got)
	}

	// A batch across two minutes whose second write fails leaves neither
	// file with its part.
	later := exp.Add(time.Minute)
	if _, err := l.use([]string{"x"}, []time.Time{later}, now); err != nil {
		t.Fatal(err)
	}
	segLater := filepath.Join(dir, fmt.Sprintf("%d.log", later.UnixMilli()/60000))
	st, _ := os.Stat(seg)
	l.mu.Lock()
	l.files[later.UnixMilli()/60000].Close()
	l.mu.Unlock()
	if _, err := l.use([]string{"h", "i"}, []time.Time{exp, later}, now); err == nil {
		t.Fatal("write to a closed file: no error")
	}
	if st2, _ := os.Stat(seg); st2.Size() != st.Size() {
		t.Fatalf("the failed batch left %d bytes in the other minute's file", st2.Size()-st.Size())
	}
	if st3, _ := os.Stat(segLater); st3.Size() != replayRecord {
		t.Fatalf("the failed minute's file holds %d bytes, want %d", st3.Size(), replayRecord)
	}

	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	if l, err = openReplayLog(dir, now); err != nil {
		t.Fatal(err)
	}
	if got := use(t, l, "h"); got != "h" {
		t.Fatalf("after the failed batch and a restart: new %q, want h", got)
	}
	if fresh, err := l.use([]string{"x", "i"}, []time.Time{later, later}, now); err != nil || fresh["x"] || !fresh["i"] {
		t.Fatalf("later minute after a restart: %v, %v; want only i new", fresh, err)
	}
	if got := use(t, l, "a", "d", "e", "f", "g"); got != "g" {
		t.Fatalf("after a clean restart: new %q, want only g", got)
	}

	// Past its minute a signature is forgotten and its file deleted.
	l.purge(exp.Add(2 * time.Minute))
	if _, err := os.Stat(seg); !os.IsNotExist(err) {
		t.Fatalf("expired file still there: %v", err)
	}
	if len(l.seen) != 0 {
		t.Fatalf("%d minutes still in memory after their expiry", len(l.seen))
	}
	l.close()

	// Garbage in the directory is not read as signatures.
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.log", exp.UnixMilli()/60000+1)), make([]byte, replayRecord), 0o600)
	if _, err := openReplayLog(dir, now); err == nil || !strings.Contains(err.Error(), "not a replay log") {
		t.Fatalf("open over a foreign file: %v", err)
	}
}

// TestReplayLogOfOneHandle: the replay log belongs to one store handle. A
// second handle on the same SQLite file, in the same process, is refused
// as another process is; it takes the log, with every signature recorded,
// once the first handle is closed.
func TestReplayLogOfOneHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "yard.db")
	ctx := t.Context()
	a, err := Open(ctx, "sqlite:"+path, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, "sqlite:"+path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exp := time.Now().Add(time.Minute)
	if ok, err := a.UseSignature(ctx, "s", exp); !ok || err != nil {
		t.Fatalf("first use at a: %v, %v", ok, err)
	}
	if err := b.OpenSignatureLog(); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("b's log while a holds it: %v, want held by another process", err)
	}
	if ok, err := b.UseSignature(ctx, "t", exp); ok || err == nil {
		t.Fatalf("use at b while a holds the log: %v, %v; want an error", ok, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.UseSignature(ctx, "s", exp); ok || err != nil {
		t.Fatalf("replay at b after a closed: %v, %v; want refused", ok, err)
	}
	if ok, err := b.UseSignature(ctx, "t", exp); !ok || err != nil {
		t.Fatalf("a new signature at b: %v, %v", ok, err)
	}
}
