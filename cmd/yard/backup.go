package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/yard-api/yard/store"
)

// Backups, restore, and what serve reports of durability and traces at
// start (docs/operations.md, "Backups and restore", "Durability" and
// "Metrics and traces").

// pgBackupHelp is what yard backup and yard restore say of PostgreSQL.
const pgBackupHelp = "yard backup and yard restore copy SQLite stores; back up PostgreSQL with pg_dump -Fc and restore with pg_restore (docs/operations.md, \"Backups and restore\")"

// runBackup is "yard backup": a consistent copy of the SQLite store, taken
// while a server keeps serving, into --out or DATA/backups/yard-TIME.db,
// whose path it prints.
func runBackup(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, sf := newStoreFlagSet("backup", stderr)
	out := fs.String("out", "", "write the backup to this new file instead of DATA/backups/yard-TIME.db")
	if err := parseNoArgs(fs, args, getenv); err != nil {
		return err
	}
	path, ok := store.SQLitePath(sf.db, sf.data)
	if !ok {
		return errors.New(pgBackupHelp)
	}
	// Opening a store that is not there would make an empty one.
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no store to back up: %w", err)
	}
	db, err := store.Open(ctx, sf.db, sf.data)
	if err != nil {
		return err
	}
	defer db.Close()

	p := &backupProgress{w: stderr, path: path, terminal: isTerminal(stderr)}
	var st store.BackupStats
	if *out != "" {
		st, err = db.Backup(ctx, *out, p.report)
	} else {
		st, err = db.BackupInto(ctx, filepath.Join(sf.data, "backups"), p.report)
	}
	p.end()
	if err != nil {
		return err
	}
	// The file alone on standard output (BACKUP=$(yard backup)), the
	// sentence on standard error.
	fmt.Fprintf(stderr, "backed up %s into %s (%.1f MB in %s)\n", path, st.Path, mb(st.Bytes), st.Took.Round(time.Millisecond))
	fmt.Fprintln(stdout, st.Path)
	return nil
}

// backupProgress is the progress line of yard backup on stderr. On a
// terminal it rewrites one line four times a second; elsewhere (a log) it
// writes a line every ten seconds.
//
//	backing up data/yard.db: 51.2 of about 143.0 MB written (36%)
type backupProgress struct {
	w        io.Writer
	path     string
	terminal bool
	last     time.Time
	printed  bool
}

func (p *backupProgress) report(bp store.BackupProgress) {
	now := time.Now()
	if !p.terminal && p.printed && now.Sub(p.last) < 10*time.Second {
		return
	}
	p.last, p.printed = now, true
	line := fmt.Sprintf("backing up %s: %.1f of about %.1f MB written", p.path, mb(bp.Written), mb(bp.Total))
	if bp.Total > 0 {
		line += fmt.Sprintf(" (%d%%)", min(100, bp.Written*100/bp.Total))
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

// end finishes the rewritten line.
func (p *backupProgress) end() {
	if p.terminal && p.printed {
		fmt.Fprintln(p.w)
	}
}

// runRestore is "yard restore FILE": replace the SQLite store by a backup,
// refusing while any process has the store open.
func runRestore(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, sf := newStoreFlagSet("restore", stderr)
	file, err := parseNamed(fs, "FILE", args, getenv)
	if err != nil {
		return err
	}
	if _, ok := store.SQLitePath(sf.db, sf.data); !ok {
		return errors.New(pgBackupHelp)
	}
	say := func(s string) { fmt.Fprintln(stderr, "restore:", s) }
	rep, err := store.Restore(ctx, file, sf.db, sf.data, time.Now(), say)
	if err != nil {
		return err
	}
	schema := fmt.Sprintf("schema version %d", rep.To)
	if rep.From < rep.To {
		schema = fmt.Sprintf("schema version %d, migrated to %d", rep.From, rep.To)
	}
	fmt.Fprintf(stdout, "restored %s into %s (%s)\n", file, rep.Path, schema)
	for _, f := range rep.Aside {
		fmt.Fprintf(stdout, "the replaced store's file is kept as %s\n", f)
	}
	if rep.Released > 0 {
		fmt.Fprintf(stdout, "%s recorded as running in the backup will run again, once, when yard serve starts\n", plural(rep.Released, "bark task"))
	}
	return nil
}

// backupFlags are serve's flags of scheduled backups and of the SQLite
// store's durability.
type backupFlags struct {
	every      time.Duration
	keep       int
	sqliteSync string
}

func (f *backupFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.every, "backup-every", 0, "back up the SQLite store into DATA/backups/ this often (0: never)")
	fs.IntVar(&f.keep, "backup-keep", 28, "backups kept in DATA/backups/ by --backup-every and POST /v1/backups; older ones are removed")
	fs.StringVar(&f.sqliteSync, "sqlite-sync", store.DefaultSQLiteSync, "SQLite's synchronous: full (an answered write survives a power failure) or normal (faster; the last writes may be lost on a power failure)")
}

// check validates the flags for the store named by db.
func (f *backupFlags) check(db string) error {
	if f.sqliteSync != store.SyncFull && f.sqliteSync != store.SyncNormal {
		return usageError("--sqlite-sync must be full or normal, not " + f.sqliteSync)
	}
	if f.every < 0 || (f.every > 0 && f.every < time.Second) {
		return usageError("--backup-every must be 0 (never) or at least 1s")
	}
	if f.keep < 1 {
		return usageError("--backup-keep must be at least 1")
	}
	if _, ok := store.SQLitePath(db, ""); !ok && f.every > 0 {
		return usageError("--backup-every backs up SQLite stores; " + pgBackupHelp)
	}
	return nil
}

// scheduledBackups is serve's background work of --backup-every: it looks
// every so often (a quarter of the interval, at most a minute) whether the
// newest backup in dir is as old as the interval, and if so takes one and
// prunes (store.ScheduledBackup, which several processes may run on one
// directory).
func scheduledBackups(db *store.DB, dir string, every time.Duration, keep int, logger *slog.Logger) func(context.Context) {
	return func(ctx context.Context) {
		check := min(max(every/4, 100*time.Millisecond), time.Minute)
		t := time.NewTicker(check)
		defer t.Stop()
		for {
			res, err := db.ScheduledBackup(ctx, dir, every, keep)
			switch {
			case err != nil && ctx.Err() == nil:
				logger.Error("scheduled backup failed", slog.String("error", err.Error()))
			case res.Taken != nil:
				logger.Info("scheduled backup", slog.String("path", res.Taken.Path), slog.Int64("bytes", res.Taken.Bytes),
					slog.Duration("took", res.Taken.Took), slog.Any("pruned", res.Pruned))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}

// reportDurability prints and logs, at start, what an answered write
// survives; with synchronous=NORMAL it warns.
func reportDurability(ctx context.Context, db *store.DB, stdout io.Writer, logger *slog.Logger) error {
	d, err := db.Durability(ctx)
	if err != nil {
		return fmt.Errorf("read the store's durability: %w", err)
	}
	fmt.Fprintf(stdout, "durability: %s\n", d)
	if d.PowerSafe {
		logger.Info("durability", slog.String("setting", d.Setting), slog.Bool("power_safe", true))
	} else {
		logger.Warn("durability", slog.String("setting", d.Setting), slog.Bool("power_safe", false),
			slog.String("note", "answered writes of the last moments before a power failure may be lost (docs/operations.md, Durability)"))
	}
	return nil
}

// reportTraces prints and logs, at start, whether traces go out and where:
// "traces: off", or "traces: https://collector:4318/v1/traces" (the
// endpoint without user information or query, which may hold credentials).
func reportTraces(f traceFlags, stdout io.Writer, logger *slog.Logger) {
	if f.url == "" {
		fmt.Fprintln(stdout, "traces: off")
		logger.Info("traces", slog.Bool("on", false))
		return
	}
	u, _ := url.Parse(f.url) // resolve parsed it
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	shown := u.String()
	fmt.Fprintf(stdout, "traces: %s\n", shown)
	logger.Info("traces", slog.Bool("on", true), slog.String("endpoint", shown))
}
