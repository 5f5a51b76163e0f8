// Package retention runs the deletion of rows past their retention (the
// event log's, the webhook deliveries'): a round removes batches until
// one comes back short, at once and then at every tick.
package retention

import (
	"context"
	"time"
)

// Run prunes until ctx ends: prune(ctx, batch) removes at most batch rows
// and says how many; a round calls it until it removes fewer or fails, and
// a round runs at once and then every interval. report is given the
// outcome of each call (nil when it succeeded) while ctx lasts.
func Run(ctx context.Context, every time.Duration, batch int, prune func(ctx context.Context, limit int) (int, error), report func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			n, err := prune(ctx, batch)
			if ctx.Err() == nil {
				report(err)
			}
			if err != nil || n < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
