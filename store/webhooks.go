package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// Webhooks (docs/events.md, "Webhooks"; migration 00110). Subscriptions
// live in webhooks, each with a cursor in the event log (this file); every
// attempt to deliver an event is a row of webhook_deliveries.
//
//   - Fan-out (FanOutWebhooks, webhookfanout.go, with the delivery rows'
//     list, insert and prune): a transaction takes subscriptions that are
//     behind the newest event (FOR UPDATE SKIP LOCKED on PostgreSQL; the one
//     writer on SQLite), reads the events after each cursor that its owner
//     may see, inserts one pending delivery per event its types want, and
//     moves the cursor on. Two processes never turn the same event into two
//     deliveries; a unique key on (webhook, event, attempt) backs that up.
//   - Claim (ClaimWebhookDeliveries, webhookclaim.go): due pending rows are taken with a
//     lease, never more than DeliveryBounds allow in flight per subscription
//     and per person across processes (claims take turns on an advisory
//     lock on PostgreSQL, so the counts they read hold). One claim takes
//     many rows in a fixed number of statements.
//   - Finish (FinishWebhookDeliveries, webhookfinish.go): each attempt's outcome, the next
//     attempt when it may be retried, the subscription's failure state, and
//     when it has failed for WebhookDisableAfter, its disabling and the
//     webhook.disabled event, guarded by the attempt's lease; the outcomes
//     of many attempts in one transaction (group commit), which on
//     PostgreSQL is a few statements whatever their number.

const webhookColumns = `id, owner_id, url, types, secret, enabled, disabled_reason, failing_since, created_at, updated_at`

func scanWebhook(row rowScanner) (*yard.Webhook, error) {
	var w yard.Webhook
	var types string
	if err := row.Scan(&w.ID, &w.Owner, &w.URL, &types, &w.Secret, &w.Enabled, &w.DisabledReason,
		ms(&w.FailingSince), ms(&w.CreatedAt), ms(&w.UpdatedAt)); err != nil {
		return nil, err
	}
	w.Types = splitTypes(types)
	return &w, nil
}

// splitTypes reads the stored form of a subscription's types.
func splitTypes(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// joinTypes is the stored form of types (patterns never hold a comma).
func joinTypes(types []string) string { return strings.Join(types, ",") }

// CreateWebhook stores a new subscription of w.Owner with w's URL and
// types, setting its id, secret and times. It receives the events
// committed after it. Past yard.MaxWebhooksPerPerson it is ECONFLICT; an
// unknown owner is ENOTFOUND.
func (db *DB) CreateWebhook(ctx context.Context, w *yard.Webhook) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		// The owner's row orders concurrent creates of one person, so the
		// count below holds (PostgreSQL; SQLite has one writer).
		if _, err := scanValue[int](tx.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = $1`+db.forUpdate(false), w.Owner)); err != nil {
			return notFound(err, "Person")
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhooks WHERE owner_id = $1`, w.Owner).Scan(&n); err != nil {
			return err
		}
		if n >= yard.MaxWebhooksPerPerson {
			return yard.Errorf(yard.ECONFLICT, "You hold %d webhook subscriptions, the most one person may; delete one first.", n)
		}
		cur, err := lastEventID(ctx, db.engine, tx)
		if err != nil {
			return err
		}
		now := tx.Now().UTC().Truncate(time.Millisecond)
		w.ID, w.Secret, w.Enabled, w.DisabledReason = yard.NewID(), yard.NewWebhookSecret(), true, ""
		w.FailingSince, w.CreatedAt, w.UpdatedAt = time.Time{}, now, now
		if w.Types == nil {
			w.Types = []string{}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO webhooks (id, owner_id, url, types, secret, enabled, cursor_tx, cursor_seq, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, TRUE, $6, $7, $8, $8)`,
			w.ID, w.Owner, w.URL, joinTypes(w.Types), w.Secret, cur.Tx, cur.Seq, Millis(now))
		return err
	})
}

// FindWebhook returns a subscription (with its secret), or ENOTFOUND.
func (db *DB) FindWebhook(ctx context.Context, id string) (*yard.Webhook, error) {
	w, err := scanWebhook(db.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id))
	return w, notFound(err, "Webhook")
}

// FindWebhooks returns a page of subscriptions, oldest first, and their
// count.
func (db *DB) FindWebhooks(ctx context.Context, f yard.WebhookFilter) ([]*yard.Webhook, int, error) {
	from, args := `webhooks`, []any{}
	if f.Owner != nil {
		from, args = `webhooks WHERE owner_id = $1`, append(args, *f.Owner)
	}
	return findPage(ctx, db, webhookColumns, from, `created_at, id`, args, pageMax(f.Limit), f.Offset, scanWebhook)
}

// UpdateWebhook changes a subscription and returns it. Enabling a disabled
// one clears its failure state (its reason and the time its failures
// began); its deliveries go on from where its cursor stopped.
func (db *DB) UpdateWebhook(ctx context.Context, id string, up yard.WebhookUpdate) (*yard.Webhook, error) {
	var w *yard.Webhook
	err := db.WithTx(ctx, func(tx *Tx) error {
		var err error
		w, err = scanWebhook(tx.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`+db.forUpdate(false), id))
		if err != nil {
			return notFound(err, "Webhook")
		}
		changed := false
		if up.URL != nil && *up.URL != w.URL {
			w.URL, changed = *up.URL, true
		}
		if up.Types != nil && !slices.Equal(*up.Types, w.Types) {
			w.Types, changed = append([]string{}, *up.Types...), true
		}
		if up.Enabled != nil && *up.Enabled != w.Enabled {
			w.Enabled, changed = *up.Enabled, true
			w.DisabledReason, w.FailingSince = "", time.Time{}
		}
		if !changed {
			return nil // a patch that changes nothing leaves updatedAt
		}
		w.UpdatedAt = tx.Now().UTC().Truncate(time.Millisecond)
		_, err = tx.ExecContext(ctx, `UPDATE webhooks SET url = $1, types = $2, enabled = $3, disabled_reason = $4, failing_since = $5, updated_at = $6
			WHERE id = $7`, w.URL, joinTypes(w.Types), w.Enabled, w.DisabledReason, Millis(w.FailingSince), Millis(w.UpdatedAt), id)
		return err
	})
	return w, err
}

// DeleteWebhook removes a subscription and its deliveries, or answers
// ENOTFOUND.
func (db *DB) DeleteWebhook(ctx context.Context, id string) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		_, err := scanValue[string](tx.QueryRowContext(ctx, `DELETE FROM webhooks WHERE id = $1 RETURNING id`, id))
		return notFound(err, "Webhook")
	})
}
