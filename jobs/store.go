package jobs

import (
	"context"
	"time"

	"github.com/yard-api/yard"
)

// Store is what the bark runner needs of the store: package store's *DB,
// on either engine. Its errors are domain errors (*yard.Error,
// yard.ErrLeaseLost) or the engine's own.
type Store interface {
	// FindDogCore returns the dog without its schedule, or ENOTFOUND.
	FindDogCore(ctx context.Context, id string) (*yard.Dog, error)

	// RecordSyncBark stores a synchronous bark that ran, with its store
	// effect; RecordFailedBark one whose effect failed (nothing applied).
	RecordSyncBark(ctx context.Context, b *yard.Bark) error
	RecordFailedBark(ctx context.Context, b *yard.Bark, msg string) error
	// EnqueueBark stores b as a pending task.
	EnqueueBark(ctx context.Context, b *yard.Bark) error
	// CancelBark cancels a pending or running bark or deletes a finished
	// record, and returns the bark as it was before.
	CancelBark(ctx context.Context, dogID, id string) (*yard.Bark, error)
	// FireDueSchedules creates the barks of at most limit due schedule
	// slots (by the store's clock), of one dog unless dogID is "".
	FireDueSchedules(ctx context.Context, dogID string, limit int) ([]*yard.Bark, error)

	// ClaimTaskOf takes a due task for owner with a lease; nil when none
	// is due. The token must be presented by every later change below,
	// which returns yard.ErrLeaseLost once the task is no longer this
	// worker's (canceled, or taken over after the lease expired).
	ClaimTaskOf(ctx context.Context, owner string, lease time.Duration, f yard.ClaimFilter) (b *yard.Bark, token string, err error)
	ExtendLease(ctx context.Context, id, token string, lease time.Duration) error
	// CompleteTask marks the task succeeded and applies r's store effects
	// in the same transaction.
	CompleteTask(ctx context.Context, b *yard.Bark, token string, r yard.TaskResult) error
	// RetryTask makes the task pending again, due after wait.
	RetryTask(ctx context.Context, id, token string, wait time.Duration, msg, output string) error
	FailTask(ctx context.Context, id, token, msg, output string) error
	// ReleaseTask hands the task back at once, the attempt not counted.
	ReleaseTask(ctx context.Context, id, token string) error

	// Unavailable says whether err means the store cannot be reached
	// now (non-nil; the loops then log the outage once and keep polling).
	Unavailable(err error) *yard.Error
}
