package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard/store"
)

// runImport bulk-loads garages and cars from an NDJSON file (docs/cars.md):
//
//	yard import FILE [--data DIR] [--db URL] [--batch N] [--progress auto|on|off] [--keep-indexes]
//
// FILE "-" reads standard input. Errors name the file and line
// (cars.ndjson:12: ...). On a terminal a progress line on stderr shows the
// lines written, the bytes read of the file and the rate; a summary goes to
// stdout once everything is written.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, sf := newStoreFlagSet("import", stderr)
	batch := fs.Int("batch", store.DefaultImportBatch, "lines per transaction")
	progress := fs.String("progress", "auto", "progress line on stderr: auto (when stderr is a terminal), on or off")
	keep := fs.Bool("keep-indexes", false, "keep cars_garage_idx up to date during the load even into an empty store (docs/cars.md)")
	file, err := parseNamed(fs, "FILE", args, getenv)
	if err != nil {
		return err
	}
	show, ok := map[string]bool{"auto": isTerminal(stderr), "on": true, "off": false}[*progress]
	if !ok {
		return usageError("--progress must be auto, on or off, not " + *progress)
	}
	in, name, size := stdin, "stdin", int64(-1)
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		in, name = f, file
	}
	// A batch job waits for SQLite's write lock longer than a request
	// does: a server starting beside the import may hold it for a while
	// to build an index (docs/cars.md, "How an import is made fast").
	db, err := openStore(ctx, *sf, store.WithSQLiteBusyTimeout(importBusyTimeout))
	if err != nil {
		return err
	}
	defer db.Close()

	if getenv("GOGC") == "" {
		// The import allocates a batch's lines and rows and keeps
		// little: collecting a third as often cost about 1 s less CPU in
		// a million cars, for some 100 MB more (docs/cars.md, "How an
		// import is made fast").
		defer debug.SetGCPercent(debug.SetGCPercent(200))
	}
	cr := &countingReader{r: in}
	start := time.Now()
	opt := store.ImportOptions{Batch: *batch, KeepIndexes: *keep}
	stopProgress := func() {}
	if show {
		p := &importProgress{w: stderr, name: name, size: size, read: &cr.n, start: start}
		opt.Progress = p.written
		stopProgress = p.run()
	}
	st, err := db.ImportCarsWith(ctx, cr, opt)
	stopProgress()
	took := time.Since(start)
	if err != nil {
		var ie *store.ImportError
		switch {
		case errors.As(err, &ie):
			at := fmt.Sprint(ie.Line)
			if ie.LastLine > ie.Line {
				at = fmt.Sprintf("%d-%d", ie.Line, ie.LastLine)
			}
			err = fmt.Errorf("%s:%s: %s", name, at, ie.Msg)
		case ctx.Err() != nil:
			err = fmt.Errorf("%s: import interrupted", name)
		}
		if st.Lines > 0 {
			fmt.Fprintf(stderr, "yard import: lines 1-%d of %s were imported (%s) before the error; lines after them were not. Fix the file and run the import again: lines already imported are replaced, not added twice.\n",
				st.Lines, name, importCounts(st))
		}
		return err
	}
	rate := ""
	if s := took.Seconds(); s > 0 && st.Lines > 0 {
		rate = fmt.Sprintf(", %.0f lines/s", float64(st.Lines)/s)
	}
	fmt.Fprintf(stdout, "imported %s from %s of %s into %s in %s%s\n",
		importCounts(st), plural(st.Lines, "line"), name, db, took.Round(time.Millisecond), rate)
	return nil
}

// importBusyTimeout is how long `yard import` waits for SQLite's write lock.
const importBusyTimeout = 5 * time.Minute

// importCounts says "1 garage and 2 cars".
func importCounts(st store.ImportStats) string {
	return plural(st.Garages, "garage") + " and " + plural(st.Cars, "car")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// isTerminal reports whether rw, a reader or a writer, is a terminal (a
// character device): where a progress line that rewrites itself is
// welcome, and where no password is piped in.
func isTerminal(rw any) bool {
	f, ok := rw.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// importProgress rewrites one line on stderr, four times a second:
//
//	importing cars.ndjson: 150000 lines written, 51.2 of 143.0 MB read (36%), 31200 lines/s
type importProgress struct {
	w     io.Writer
	name  string
	size  int64 // -1 when unknown (standard input)
	read  *atomic.Int64
	start time.Time
	lines atomic.Int64 // written so far
}

// written is the store's report after each batch.
func (p *importProgress) written(st store.ImportStats) { p.lines.Store(int64(st.Lines)) }

// run prints the line until stop, which prints the last state and ends
// the line.
func (p *importProgress) run() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.print()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		p.print()
		fmt.Fprintln(p.w)
	}
}

func (p *importProgress) print() {
	fmt.Fprintf(p.w, "\r%s\x1b[K", p.line(time.Since(p.start)))
}

// line is the text of the progress line after elapsed time.
func (p *importProgress) line(elapsed time.Duration) string {
	lines, read := p.lines.Load(), p.read.Load()
	s := fmt.Sprintf("importing %s: %d lines written, ", p.name, lines)
	if p.size > 0 {
		s += fmt.Sprintf("%.1f of %.1f MB read (%d%%)", mb(read), mb(p.size), read*100/p.size)
	} else {
		s += fmt.Sprintf("%.1f MB read", mb(read))
	}
	if secs := elapsed.Seconds(); secs > 0 {
		s += fmt.Sprintf(", %.0f lines/s", float64(lines)/secs)
	}
	return s
}

func mb(n int64) float64 { return float64(n) / 1e6 }
