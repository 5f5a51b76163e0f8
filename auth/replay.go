package auth

import (
	"context"
	"sync"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/batch"
)

// signatureBatcher records signed-request signatures with group commit:
// requests that arrive while a write is in flight are written together in
// the next one. Each caller still waits for its own row to be committed, so
// the answer is exactly as strict as one write per request (the store's
// primary key decides, across processes), at a fraction of the cost. The
// zero value is ready; it writes to the store its first use names.
type signatureBatcher struct {
	once sync.Once
	q    batch.Queue[sigUse, bool]
}

type sigUse struct {
	sig     string
	expires time.Time
}

const maxSignatureBatch = 256

// use records sig in store and reports whether it was new. The batcher
// writes one batch at a time: a batch is whatever queued while the
// previous write ran. On
// PostgreSQL a second write in flight mostly started with a single
// request (the one that arrived first after the other write began), so
// it made smaller batches, more commits and more round trips for the same
// requests: 3.3 rows a batch against 5.0 with one write at 16 clients,
// and a lower rate (docs/benchmark-journal.md, "OAuth 1.0a and signed requests:
// cheaper signing and nonce writes"). SQLite has one writer anyway.
func (b *signatureBatcher) use(ctx context.Context, store yard.AuthStateService, sig string, expires time.Time) (bool, error) {
	b.once.Do(func() {
		b.q.Flights, b.q.Max = 1, maxSignatureBatch
		// Requests already running join the next write.
		b.q.Gather = true
		b.q.Run = func(uses []sigUse, res []batch.Result[bool]) { writeSignatures(store, uses, res) }
	})
	return b.q.Do(ctx, sigUse{sig, expires})
}

// writeSignatures writes one batch.
func writeSignatures(store yard.AuthStateService, uses []sigUse, res []batch.Result[bool]) {
	// A signature twice in one batch: the first one counts.
	seen := make(map[string]bool, len(uses))
	sigs := make([]string, 0, len(uses))
	exps := make([]time.Time, 0, len(uses))
	for _, u := range uses {
		if !seen[u.sig] {
			seen[u.sig] = true
			sigs = append(sigs, u.sig)
			exps = append(exps, u.expires)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	fresh, err := store.UseSignatures(ctx, sigs, exps)
	cancel()
	for i, u := range uses {
		res[i].Err = err
		if err == nil && fresh[u.sig] {
			res[i].Val = true
			delete(fresh, u.sig)
		}
	}
}
