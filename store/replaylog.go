package store

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The replay log: signed-request signatures on SQLite.
//
// A signed request is accepted only once its signature is recorded, so
// that a replay is refused. On PostgreSQL the record is a row of
// signed_requests, shared by every process. On SQLite a commit per batch of
// signatures cost more than everything else a signed request does (the
// engine, the write-ahead log, the locks), and SQLite serves one process:
// the signatures live in memory, and each is appended to a log file before
// its request is accepted. A write(2) that returned survives a crash of
// the process, so a restart reads the log back and still refuses every
// replay; like SQLite with synchronous=NORMAL, a power failure may lose the
// last second (the log is fsynced every second).
//
// The log is a directory beside the database file, PATH-signatures/, with
// one file per minute of expiry (MINUTE.log, MINUTE = Unix milliseconds /
// 60000) holding 40-byte records: the expiry in Unix milliseconds
// (big-endian) and the SHA-256 of the signature. A file is deleted when its
// minute has passed: its signatures are outside the window. The directory is
// locked (flock) by the one store handle that uses it (DB.replay, opened
// on first use and closed with the store): a second process on the same
// SQLite store cannot verify signed requests, nor can a second handle on
// it in the same process, and `yard serve` stops at start with an error
// saying so.

const replayRecord = 8 + sha256.Size

type replayLog struct {
	dir  string
	lock *os.File

	mu     sync.Mutex
	seen   map[int64]map[[sha256.Size]byte]struct{} // by minute of expiry
	files  map[int64]*os.File
	sizes  map[int64]int64
	dirty  map[int64]bool // written since the last fsync
	minute int64          // the minute purged up to
	stop   chan struct{}
	done   chan struct{}
}

// replayLogDir is the directory of the replay log of the SQLite file path.
func replayLogDir(path string) string { return path + "-signatures" }

// OpenSignatureLog opens the store's replay log now, so that a process
// learns at start, not at its first signed request, that another process
// holds it. On PostgreSQL it does nothing.
func (db *DB) OpenSignatureLog() error {
	_, err := db.replayLog()
	return err
}

// replayLog returns the store's replay log, opened on first use.
func (db *DB) replayLog() (*replayLog, error) {
	db.replayMu.Lock()
	defer db.replayMu.Unlock()
	if db.engine != SQLite || db.replay != nil {
		return db.replay, nil
	}
	abs, err := filepath.Abs(db.dsn)
	if err != nil {
		return nil, err
	}
	l, err := openReplayLog(replayLogDir(abs), db.Now())
	if err != nil {
		return nil, err
	}
	db.replay = l
	return l, nil
}

// closeReplayLog closes the store's replay log, if it was opened.
func (db *DB) closeReplayLog() error {
	db.replayMu.Lock()
	l := db.replay
	db.replay = nil
	db.replayMu.Unlock()
	if l == nil {
		return nil
	}
	return l.close()
}

func openReplayLog(dir string, now time.Time) (*replayLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("replay log: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("replay log: %w", err)
	}
	if err := lockFile(lock); err != nil {
		// A second process on one SQLite store, named with the process
		// that holds the log (heldBy).
		err = fmt.Errorf("the store %s is in use by another process%s: a SQLite store is served by one process, "+
			"which alone keeps its signed-request replay log (%s, held by another process, or by another handle on the store in this one: %v); "+
			"stop that process first, or run several processes on PostgreSQL",
			strings.TrimSuffix(dir, "-signatures"), heldBy(lock), dir, err)
		lock.Close()
		return nil, err
	}
	// This process's id, so that a process refused the lock can name it.
	if lock.Truncate(0) == nil {
		_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	l := &replayLog{
		dir: dir, lock: lock,
		seen:  map[int64]map[[sha256.Size]byte]struct{}{},
		files: map[int64]*os.File{}, sizes: map[int64]int64{}, dirty: map[int64]bool{},
		minute: now.UnixMilli() / 60000,
		stop:   make(chan struct{}), done: make(chan struct{}),
	}
	if err := l.load(); err != nil {
		lock.Close()
		return nil, err
	}
	go l.syncLoop(time.Second)
	return l, nil
}

// load reads the files of minutes not yet past and deletes the others. A
// torn last record (a crash in the middle of a write) is cut off, so that
// appends stay aligned.
func (l *replayLog) load() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("replay log: %w", err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		minute, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		path := filepath.Join(l.dir, e.Name())
		if minute < l.minute {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("replay log: %w", err)
			}
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("replay log: %w", err)
		}
		whole := len(data) - len(data)%replayRecord
		if whole != len(data) {
			if err := os.Truncate(path, int64(whole)); err != nil {
				return fmt.Errorf("replay log: %w", err)
			}
		}
		set := l.bucket(minute)
		for rec := data[:whole]; len(rec) > 0; rec = rec[replayRecord:] {
			if int64(binary.BigEndian.Uint64(rec))/60000 != minute {
				return fmt.Errorf("replay log: %s holds a record of another minute: not a replay log", path)
			}
			set[[sha256.Size]byte(rec[8:replayRecord])] = struct{}{}
		}
		l.sizes[minute] = int64(whole)
	}
	return nil
}

func (l *replayLog) bucket(minute int64) map[[sha256.Size]byte]struct{} {
	set := l.seen[minute]
	if set == nil {
		set = map[[sha256.Size]byte]struct{}{}
		l.seen[minute] = set
	}
	return set
}

// use records the signatures that are new and returns them. A signature is
// new when it is not in the log; it counts as used once its record is
// written. On an error nothing of the batch is recorded.
func (l *replayLog) use(sigs []string, expires []time.Time, now time.Time) (map[string]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.purgeLocked(now)
	appends := map[int64][]byte{} // minute -> the records of its new signatures
	fresh := make(map[string]bool, len(sigs))
	for i, s := range sigs {
		ms := expires[i].UnixMilli()
		minute := ms / 60000
		h := sha256.Sum256([]byte(s))
		set := l.bucket(minute)
		if _, used := set[h]; used {
			continue
		}
		set[h] = struct{}{}
		fresh[s] = true
		appends[minute] = binary.BigEndian.AppendUint64(appends[minute], uint64(ms))
		appends[minute] = append(appends[minute], h[:]...)
	}
	written := map[int64]int64{} // minute -> its size before this batch
	for minute, buf := range appends {
		size := l.sizes[minute]
		if err := l.appendLocked(minute, buf); err != nil {
			// Undo the batch everywhere: in memory, and in the files of
			// other minutes that took their part.
			for m, recs := range appends {
				for ; len(recs) > 0; recs = recs[replayRecord:] {
					delete(l.seen[m], [sha256.Size]byte(recs[8:replayRecord]))
				}
			}
			for m, size := range written {
				if os.Truncate(filepath.Join(l.dir, strconv.FormatInt(m, 10)+".log"), size) == nil {
					l.sizes[m] = size
				}
			}
			return nil, err
		}
		written[minute] = size
	}
	return fresh, nil
}

// appendLocked writes buf at the end of the minute's file; on a short or
// failed write it cuts the file back to what it held.
func (l *replayLog) appendLocked(minute int64, buf []byte) error {
	path := filepath.Join(l.dir, strconv.FormatInt(minute, 10)+".log")
	f := l.files[minute]
	if f == nil {
		var err error
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return fmt.Errorf("replay log: %w", err)
		}
		l.files[minute] = f
	}
	if _, err := f.Write(buf); err != nil {
		// Open the file afresh next time.
		f.Close()
		delete(l.files, minute)
		_ = os.Truncate(path, l.sizes[minute])
		return fmt.Errorf("replay log: %w", err)
	}
	l.sizes[minute] += int64(len(buf))
	l.dirty[minute] = true
	return nil
}

// purgeLocked forgets the minutes that have passed at now and deletes
// their files.
func (l *replayLog) purgeLocked(now time.Time) {
	minute := now.UnixMilli() / 60000
	if minute <= l.minute {
		return
	}
	maps.DeleteFunc(l.seen, func(m int64, _ map[[sha256.Size]byte]struct{}) bool { return m < minute })
	for m, f := range l.files {
		if m < minute {
			f.Close()
			delete(l.files, m)
		}
	}
	for m := range l.sizes {
		if m < minute {
			_ = os.Remove(filepath.Join(l.dir, strconv.FormatInt(m, 10)+".log"))
			delete(l.sizes, m)
			delete(l.dirty, m)
		}
	}
	l.minute = minute
}

// syncLoop fsyncs the files written since the last round, every interval.
func (l *replayLog) syncLoop(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.sync()
		}
	}
}

func (l *replayLog) sync() {
	l.mu.Lock()
	var files []*os.File
	for m := range l.dirty {
		if f := l.files[m]; f != nil {
			files = append(files, f)
		}
	}
	clear(l.dirty)
	l.mu.Unlock()
	for _, f := range files {
		_ = f.Sync() // a file purged meanwhile is closed: nothing to keep
	}
}

func (l *replayLog) close() error {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	for m, f := range l.files {
		err = errors.Join(err, f.Sync(), f.Close())
		delete(l.files, m)
	}
	return errors.Join(err, l.lock.Close()) // closing the file releases the lock
}
