package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/yard-api/yard"
)

// Backups is what the backup endpoints need (docs/api.md, "Backups"): the
// store's backups directory. *store.BackupDir is one; it takes a backup by
// the code of serve --backup-every, so a backup made through the API is
// named, written and pruned as a scheduled one.
type Backups interface {
	// TakeBackup takes a backup now. It refuses with ERATELIMIT (and
	// RetryAfter) while the newest backup is younger than minAge, and with
	// ECONFLICT while another backup is being taken or when the store's
	// backups are not the server's to take (PostgreSQL: pg_dump).
	TakeBackup(ctx context.Context, minAge time.Duration) (yard.Backup, error)
	// ListBackups lists the backups, newest first.
	ListBackups(ctx context.Context) ([]yard.Backup, error)
	// FindBackup returns one backup by name: ENOTFOUND for an unknown or
	// malformed name.
	FindBackup(ctx context.Context, name string) (yard.Backup, error)
}

// BackupInterval is the least time between two backups taken through the
// API: a backup copies the whole store, so a POST within it of the newest
// backup (whoever took it) is 429 with Retry-After.
const BackupInterval = time.Minute

// backupView is the representation of a backup. Its bytes are never
// served: a backup holds password hashes and sealed secrets.
type backupView struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	CreatedAt string `json:"createdAt"`
}

func newBackupView(b yard.Backup) backupView {
	return backupView{Name: b.Name, Size: b.Size, CreatedAt: Timestamp(b.CreatedAt)}
}

// backups returns the backups directory (of any request: loaded's
// signature), or 503 when the server was built without one.
func (s *Server) backups(*http.Request) (Backups, error) {
	if s.deps.Backups == nil {
		return nil, yard.Errorf(yard.EUNAVAILABLE, "This server takes no backups.")
	}
	return s.deps.Backups, nil
}

// handleCreateBackup takes a backup now (administrators): 201 with its
// Location. The backup, once begun, is finished even if the client leaves
// or the store wait passes (it holds no lock a writer waits for), so that
// its time is not spent for nothing.
func (s *Server) handleCreateBackup(w http.ResponseWriter, r *http.Request, b Backups) {
	if _, err := decodeOptional[struct{}](r); err != nil { // no body, or {}
		s.error(w, r, err)
		return
	}
	bk, err := b.TakeBackup(context.WithoutCancel(r.Context()), BackupInterval)
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Location", s.url("/v1/backups/"+bk.Name))
	writeJSON(w, http.StatusCreated, newBackupView(bk))
}

// handleListBackups is a page of the backups, newest first
// (administrators).
func (s *Server) handleListBackups(w http.ResponseWriter, r *http.Request) {
	writePagedList(s, w, r, func(ctx context.Context, p yard.Page) ([]yard.Backup, int, error) {
		b, err := s.backups(r)
		var all []yard.Backup
		if err == nil {
			all, err = b.ListBackups(ctx)
		}
		return window(all, p), len(all), err
	}, newBackupView)
}

// handleGetBackup is one backup's metadata (administrators).
func (s *Server) handleGetBackup(w http.ResponseWriter, r *http.Request, b Backups) {
	bk, err := b.FindBackup(r.Context(), r.PathValue("name"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newBackupView(bk))
}
