package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/yard-api/yard"
)

// The outcomes of webhook delivery attempts (webhooks.go says how
// deliveries go).

// finishPG records many attempts' outcomes in one statement; it returns
// those whose lease held.
const finishPG = `UPDATE webhook_deliveries d SET status = v.status, code = v.code, error = v.error, attempted_at = v.at, shown_at = v.at,
		first_at = v.first, data = '', lease_token = '', lease_until = 0
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::bigint[]) AS v(id, token, status, code, error, at, first)
	WHERE d.id = v.id AND d.lease_token = v.token AND d.status = 'pending'
	RETURNING v.id, v.token`

const finishSQLite = `UPDATE webhook_deliveries SET status = $1, code = $2, error = $3, attempted_at = $4, shown_at = $4,
	first_at = $5, data = '', lease_token = '', lease_until = 0 WHERE id = $6 AND lease_token = $7 AND status = 'pending'`

// FinishWebhookDeliveries records how claimed attempts ended, outs[i]
// being the outcome of claims[i], in one transaction: the outcomes of
// many workers commit together (group commit), which on PostgreSQL is a
// handful of statements whatever their number. For each attempt, a
// failed one is followed by the next attempt, due after out.RetryIn (cut
// to the end of the retry window), while the window, yard.WebhookRetryFor
// after the first attempt, lasts. A success clears the subscription's
// failure state; a failure starts it, and a subscription failing for
// yard.WebhookDisableAfter is disabled and a webhook.disabled event
// appended; disabled[i] reports that attempt i did it. The attempts of one
// subscription take effect in the order given. lost[i] reports that claim
// i was no longer held (its lease expired and another worker took it, or
// the subscription is gone): it changed nothing. An error is the
// transaction's: none of the outcomes is recorded.
func (db *DB) FinishWebhookDeliveries(ctx context.Context, claims []*yard.WebhookClaim, outs []yard.DeliveryOutcome) (disabled, lost []bool, err error) {
	if len(claims) != len(outs) {
		return nil, nil, errors.New("store: FinishWebhookDeliveries: as many outcomes as claims")
	}
	if len(claims) == 0 {
		return nil, nil, nil
	}
	db.prepareWrites(ctx, finishSQLite, lockWebhookSQLite, insertDeliverySQLite)
	err = db.WithTx(ctx, func(tx *Tx) error {
		disabled, lost = make([]bool, len(claims)), make([]bool, len(claims))
		if err := asyncCommit(ctx, tx); err != nil {
			return err
		}
		// The subscriptions first, in the order of their ids: a deletion
		// locks one before its deliveries, and two batches lock theirs in
		// the same order, so none of them can deadlock.
		ids := make([]string, 0, len(claims))
		for _, c := range claims {
			ids = append(ids, c.Delivery.WebhookID)
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		hooks, err := lockWebhooks(ctx, tx, ids)
		if err != nil {
			return err
		}
		was := make(map[string]yard.Webhook, len(hooks))
		for id, w := range hooks {
			was[id] = *w
		}

		now := tx.Now().UTC().Truncate(time.Millisecond)
		type attempt struct {
			status    string
			at, first time.Time
		}
		atts := make([]attempt, len(claims))
		var mine []int // the attempts whose subscription is there
		for i, c := range claims {
			if hooks[c.Delivery.WebhookID] == nil {
				lost[i] = true
				continue
			}
			a := attempt{status: yard.DeliveryFailed, at: now, first: c.Delivery.FirstAttempt}
			if out := outs[i]; !out.At.IsZero() && out.At.Before(now) {
				a.at = out.At.UTC().Truncate(time.Millisecond)
			}
			if a.first.IsZero() {
				a.first = a.at
			}
			if outs[i].Succeeded {
				a.status = yard.DeliverySucceeded
			}
			atts[i] = a
			mine = append(mine, i)
		}

		// The attempts' rows, each guarded by its lease.
		if db.engine == Postgres && len(mine) > 0 {
			var dIDs, tokens, statuses, errs []string
			var codes []int32
			var ats, firsts []int64
			for _, i := range mine {
				a, out := atts[i], outs[i]
				dIDs, tokens, statuses = append(dIDs, claims[i].Delivery.ID), append(tokens, claims[i].Token), append(statuses, a.status)
				codes, errs = append(codes, int32(out.Code)), append(errs, truncateText(out.Error, 500))
				ats, firsts = append(ats, Millis(a.at)), append(firsts, Millis(a.first))
			}
			rows, err := tx.QueryContext(ctx, finishPG, dIDs, tokens, statuses, codes, errs, ats, firsts)
			kept, err := appendRows(nil, rows, err, scanPair)
			if err != nil {
				return err
			}
			held := map[[2]string]bool{}
			for _, k := range kept {
				held[k] = true
			}
			for _, i := range mine {
				lost[i] = !held[[2]string{claims[i].Delivery.ID, claims[i].Token}]
			}
		} else {
			for _, i := range mine {
				a, out := atts[i], outs[i]
				res, err := tx.exec(ctx, finishSQLite, a.status, out.Code, truncateText(out.Error, 500), Millis(a.at), Millis(a.first),
					claims[i].Delivery.ID, claims[i].Token)
				if err := leaseResult(res, err); errors.Is(err, yard.ErrLeaseLost) {
					lost[i] = true
				} else if err != nil {
					return err
				}
			}
		}

		// What follows each attempt, in order: the next attempt, the
		// subscription's failure state, its disabling.
		var retries [][]any
		for _, i := range mine {
			if lost[i] {
				continue
			}
			c, out, a := claims[i], outs[i], atts[i]
			d, w := c.Delivery, hooks[c.Delivery.WebhookID]
			if out.Succeeded {
				w.FailingSince = time.Time{}
				continue
			}
			if end := a.first.Add(yard.WebhookRetryFor); now.Before(end) {
				due := now.Add(max(out.RetryIn, 0))
				if due.After(end) {
					due = end
				}
				data := cmp.Or(string(d.Event.Data), "null")
				retries = append(retries, []any{yard.NewID(), w.ID, w.Owner, d.Event.ID.Tx, d.Event.ID.Seq, d.Event.Type,
					d.Event.Subject, d.Event.Owner, Millis(d.Event.Time), data, d.Attempt + 1, Millis(now), Millis(due), Millis(a.first)})
			}
			if w.FailingSince.IsZero() {
				w.FailingSince = a.at
			}
			if !w.Enabled || now.Before(w.FailingSince.Add(yard.WebhookDisableAfter)) {
				continue
			}
			w.Enabled, w.UpdatedAt = false, now
			w.DisabledReason = fmt.Sprintf("Deliveries failed for %s in a row, since %s; the last: %s",
				yard.WebhookDisableAfter, w.FailingSince.Format(time.RFC3339), truncateText(out.Error, 200))
			disabled[i] = true
			if err := appendEvent(ctx, tx, yard.EventWebhookDisabled, yard.WebhookPath(w.ID), w.Owner, w); err != nil {
				return err
			}
		}
		if _, err := insertDeliveries(ctx, tx, retries); err != nil {
			return err
		}
		for _, id := range ids {
			w, old := hooks[id], was[id]
			if w == nil || w.FailingSince.Equal(old.FailingSince) && w.Enabled == old.Enabled {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET failing_since = $1, enabled = $2, disabled_reason = $3, updated_at = $4 WHERE id = $5`,
				Millis(w.FailingSince), w.Enabled, w.DisabledReason, Millis(w.UpdatedAt), id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return disabled, lost, nil
}

const lockWebhookSQLite = `SELECT ` + webhookColumns + ` FROM webhooks WHERE id = $1`

// lockWebhooks reads the subscriptions with those ids (sorted), locking
// them in that order on PostgreSQL (one statement); a missing one is not
// in the map.
func lockWebhooks(ctx context.Context, tx *Tx, ids []string) (map[string]*yard.Webhook, error) {
	out := make(map[string]*yard.Webhook, len(ids))
	if tx.db.engine != Postgres {
		for _, id := range ids {
			w, err := scanWebhook(tx.QueryRow(ctx, lockWebhookSQLite, id))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			} else if err != nil {
				return nil, err
			}
			out[id] = w
		}
		return out, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	hooks, err := appendRows(nil, rows, err, scanWebhook)
	for _, w := range hooks {
		out[w.ID] = w
	}
	return out, err
}

// truncateText cuts s to at most n bytes, on a character boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

// asyncCommit lets a PostgreSQL transaction of the delivery bookkeeping
// (a claim, an attempt's outcome) commit without waiting for its WAL flush
// (SET LOCAL synchronous_commit): a crash of the PostgreSQL server may
// forget its last fraction of a second of them, and what is forgotten is
// an attempt made again, with the same webhook-id, which at-least-once
// delivery allows (docs/events.md, "Webhooks"). Waiting for the flush
// held each subscription's row lock through it and halved the deliveries
// per second.
func asyncCommit(ctx context.Context, tx *Tx) error {
	if tx.db.engine != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit TO OFF`)
	return err
}
