package yard

import "time"

// Backup is a backup of the store in the server's backups directory
// (docs/operations.md, "Backups and restore"; docs/api.md, "Backups"): a
// file named by the UTC second it began, yard-20261125T170000Z.db.
type Backup struct {
	// Name is the file's name, which is also its id in the API.
	Name string
	// Size is the file's size in bytes.
	Size int64
	// CreatedAt is when the backup began, to the second (its name).
	CreatedAt time.Time
}
