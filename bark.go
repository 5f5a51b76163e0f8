package yard

import (
	"errors"
	"time"
)

// Bark task states (docs/barks.md). A task starts pending, is running while a
// worker holds its lease, and ends succeeded, failed or canceled.
const (
	BarkPending   = "pending"
	BarkRunning   = "running"
	BarkSucceeded = "succeeded"
	BarkFailed    = "failed"
	BarkCanceled  = "canceled"
)

// Where a bark came from.
const (
	BarkSourceRequest  = "request"  // POST /barks or /bark
	BarkSourceSchedule = "schedule" // a slot of the dog's bark schedule
)

// Bark is one bark of a dog: a task that runs an effect, and for the record
// effect also the bark record with its timestamp.
type Bark struct {
	ID     string
	DogID  string
	Effect string
	Status string
	// Async is true for barks run by the background workers.
	Async  bool
	Source string
	// Slot is the schedule slot the bark fires for (schedule barks only).
	Slot       time.Time
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// Timestamp is when the dog barked (the effect took place); the zero
	// time while it has not.
	Timestamp time.Time
	Error     string
	Output    string
	// DogChanged is true when the finished bark changed the dog's
	// representation (barkCount or codeRevision).
	DogChanged bool
	Attempts   int
	// TraceParent is the W3C traceparent of the traced request that
	// created an asynchronous bark ("" when none): its run joins that
	// trace, in whichever process it runs (docs/operations.md). It stays
	// out of the bark's events.
	TraceParent string `json:"-"`
}

// Finished reports whether the bark reached a final state.
func (b *Bark) Finished() bool {
	return b.Status == BarkSucceeded || b.Status == BarkFailed || b.Status == BarkCanceled
}

// BarkFilter selects a page of a dog's barks, newest first.
type BarkFilter struct {
	DogID  string
	Offset int
	Limit  int
}

// ScheduleChange is a change of a dog's bark schedule. Frequency 0 stops
// the schedule.
type ScheduleChange struct {
	Next      time.Time
	Frequency int
}

// MaxPreviousBarks is how many past bark times the schedule views show.
const MaxPreviousBarks = 20

// ValidateSchedule checks a schedule change at the time now (docs/barks.md):
// a frequency under one minute (other than 0, which stops the schedule) or
// a next time in the past is refused with ESCHEDULEREFUSED, saying why.
func ValidateSchedule(c ScheduleChange, now time.Time) error {
	if c.Frequency < 0 {
		return Errorf(ESCHEDULEREFUSED, "The frequency must be at least 1 minute (0 stops the schedule).")
	}
	if c.Frequency > 0 && c.Next.Before(now.Add(-time.Second)) {
		return Errorf(ESCHEDULEREFUSED, "The next bark (%s) is in the past; send a future time, or 0 for now.", c.Next.UTC().Format(time.RFC3339))
	}
	return nil
}

// SchedulePatch is a PATCH of a dog whose body holds barks (docs/barks.md),
// applied once (RFC 9110 §13.1.4).
type SchedulePatch struct {
	// Date is the If-Unmodified-Since of the request; Hash identifies its
	// body. A request with the same date and hash as the last applied one
	// is a repeat.
	Date time.Time
	Hash string
	// Change is the schedule asked for, Received the time the request
	// arrived (for refusing a next in the past).
	Change   ScheduleChange
	Received time.Time
	// Differs says that the stored representation differs from what was
	// sent (the client must read the dog again).
	Differs bool
	// Fields are the ordinary fields the same PATCH changes.
	Fields DogUpdate
}

// ErrLeaseLost is returned when a worker tries to change a bark task it no
// longer holds: the task was canceled, or its lease expired and another
// worker took it. The worker's store effects are then not applied.
var ErrLeaseLost = errors.New("task lease lost")

// TaskResult is what a finished bark effect did, for the store to apply
// with the task's state.
type TaskResult struct {
	Output string
	// CodeRevision, when set, is the dog's new codeRevision (fetch-code).
	CodeRevision *string
}

// Kinds of bark task a worker pool takes (ClaimFilter.Kind; "" takes any).
const (
	ClaimFetch = "fetch" // fetch-code tasks only
	ClaimStore = "store" // every effect but fetch-code
)

// ClaimFilter narrows the bark tasks a worker claims.
type ClaimFilter struct {
	// Kind is ClaimFetch, ClaimStore or "" (any task).
	Kind string
	// FetchPerUser, when above zero, bounds the fetch-code tasks running
	// at once for the dogs of one owner, across every process sharing the
	// store. A fetch-code task is never claimed while another of the same
	// dog runs (with a live lease).
	FetchPerUser int
}
