package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// Webhooks (docs/events.md, "Webhooks"; migration 00110). Subscriptions
// live in webhooks, each with a cursor in the event log; every attempt to
// deliver an event is a row of webhook_deliveries.
//
//   - Fan-out (FanOutWebhooks): a transaction takes subscriptions that are
//     behind the newest event (FOR UPDATE SKIP LOCKED on PostgreSQL; the one
//     writer on SQLite), reads the events after each cursor that its owner
//     may see, inserts one pending delivery per event its types want, and
//     moves the cursor on. Two processes never turn the same event into two
//     deliveries; a unique key on (webhook, event, attempt) backs that up.
//   - Claim (ClaimWebhookDeliveries): due pending rows are taken with a
//     lease, never more than DeliveryBounds allow in flight per subscription
//     and per person across processes (claims take turns on an advisory
//     lock on PostgreSQL, so the counts they read hold).
//   - Finish (FinishWebhookDelivery): the attempt's outcome, the next
//     attempt when it may be retried, the subscription's failure state, and
//     when it has failed for WebhookDisableAfter, its disabling and the
//     webhook.disabled event, in one transaction guarded by the lease.

const webhookColumns = `id, owner_id, url, types, secret, enabled, disabled_reason, failing_since, created_at, updated_at`

func scanWebhook(row interface{ Scan(...any) error }) (*yard.Webhook, error) {
	var w yard.Webhook
	var types string
	var failing, created, updated int64
	if err := row.Scan(&w.ID, &w.Owner, &w.URL, &types, &w.Secret, &w.Enabled, &w.DisabledReason, &failing, &created, &updated); err != nil {
		return nil, err
	}
	w.Types = splitTypes(types)
	w.FailingSince, w.CreatedAt, w.UpdatedAt = FromMillis(failing), FromMillis(created), FromMillis(updated)
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
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = $1`+db.forUpdate(false), w.Owner).Scan(&one); err != nil {
			return notFound(err, "Person")
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhooks WHERE owner_id = $1`, w.Owner).Scan(&n); err != nil {
			return err
		}
		if n >= yard.MaxWebhooksPerPerson {
			return yard.Errorf(yard.ECONFLICT, "You hold %d webhook subscriptions, the most one person may; delete one first.", n)
		}
		cur, err := lastEventInTx(ctx, tx)
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

// lastEventInTx is LastEventID read inside tx: on PostgreSQL every event
// after it becomes visible later, none before it.
func lastEventInTx(ctx context.Context, tx *Tx) (yard.EventID, error) {
	q := `SELECT tx, seq FROM events ORDER BY tx DESC, seq DESC LIMIT 1`
	if tx.db.engine == Postgres {
		q = `SELECT tx, seq FROM events WHERE tx < pg_snapshot_xmin(pg_current_snapshot())::text::bigint ORDER BY tx DESC, seq DESC LIMIT 1`
	}
	var id yard.EventID
	err := tx.QueryRowContext(ctx, q).Scan(&id.Tx, &id.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return id, err
}

// FindWebhook returns a subscription (with its secret), or ENOTFOUND.
func (db *DB) FindWebhook(ctx context.Context, id string) (*yard.Webhook, error) {
	w, err := scanWebhook(db.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id))
	return w, notFound(err, "Webhook")
}

// FindWebhooks returns a page of subscriptions, oldest first, and their
// count.
func (db *DB) FindWebhooks(ctx context.Context, f yard.WebhookFilter) ([]*yard.Webhook, int, error) {
	where, args := ``, []any{}
	if f.Owner != nil {
		where, args = ` WHERE owner_id = $1`, append(args, *f.Owner)
	}
	var total int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks`+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = yard.DefaultPageMax
	}
	n := len(args)
	rows, err := db.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks`+where+
		fmt.Sprintf(` ORDER BY created_at, id LIMIT $%d OFFSET $%d`, n+1, n+2), append(args, limit, f.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []*yard.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, w)
	}
	return out, total, rows.Err()
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
		if up.URL != nil {
			w.URL = *up.URL
		}
		if up.Types != nil {
			w.Types = slices.Clone(*up.Types)
			if w.Types == nil {
				w.Types = []string{}
			}
		}
		if up.Enabled != nil && *up.Enabled != w.Enabled {
			w.Enabled = *up.Enabled
			w.DisabledReason, w.FailingSince = "", time.Time{}
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
		res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return yard.Errorf(yard.ENOTFOUND, "Webhook not found.")
		}
		return nil
	})
}

const deliveryColumns = `id, webhook_id, event_tx, event_seq, event_type, event_subject, event_owner, event_at, data,
	attempt, status, code, error, due_at, attempted_at, first_at`

func scanDelivery(row interface{ Scan(...any) error }, extra ...any) (*yard.WebhookDelivery, error) {
	var d yard.WebhookDelivery
	var at, due, attempted, first int64
	var data string
	dest := []any{&d.ID, &d.WebhookID, &d.Event.ID.Tx, &d.Event.ID.Seq, &d.Event.Type, &d.Event.Subject, &d.Event.Owner, &at, &data,
		&d.Attempt, &d.Status, &d.Code, &d.Error, &due, &attempted, &first}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	d.Event.Time, d.FirstAttempt = FromMillis(at), FromMillis(first)
	if data != "" {
		d.Event.Data = json.RawMessage(data)
	}
	d.Time = FromMillis(attempted)
	if d.Status == yard.DeliveryPending {
		d.Time = FromMillis(due)
	}
	return &d, nil
}

// FindWebhookDeliveries returns a page of a subscription's delivery
// attempts, newest first (by their Time: when they were made, or are
// due), and their count.
func (db *DB) FindWebhookDeliveries(ctx context.Context, webhookID string, offset, limit int) ([]*yard.WebhookDelivery, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = $1`, webhookID).Scan(&total); err != nil {
		return nil, 0, err
	}
	if limit <= 0 {
		limit = yard.DefaultPageMax
	}
	rows, err := db.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE webhook_id = $1
		ORDER BY shown_at DESC, event_tx DESC, event_seq DESC, attempt DESC LIMIT $2 OFFSET $3`, webhookID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []*yard.WebhookDelivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, 0, err
		}
		d.Event.Data = nil
		out = append(out, d)
	}
	return out, total, rows.Err()
}

// fanOutRead bounds the events one subscription reads per transaction.
const fanOutRead = 500

const insertDeliverySQL = `INSERT INTO webhook_deliveries (id, webhook_id, owner_id, event_tx, event_seq, event_type, event_subject,
	event_owner, event_at, data, attempt, status, created_at, due_at, shown_at, first_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $13, $14) ON CONFLICT DO NOTHING`

// FanOutWebhooks turns the events committed since each enabled
// subscription's cursor into pending deliveries, up to the newest event
// visible when it starts, batch subscriptions per transaction. It returns
// how many deliveries it created. Processes may run it at once: each
// subscription's events are turned into deliveries once.
func (db *DB) FanOutWebhooks(ctx context.Context, batch int) (int, error) {
	last, err := db.LastEventID(ctx)
	if err != nil || last.IsZero() {
		return 0, err
	}
	if batch <= 0 {
		batch = 20
	}
	// A read first, so that a process with nothing to do takes no write
	// transaction.
	var one int
	err = db.QueryRow(ctx, `SELECT 1 FROM webhooks w JOIN users u ON u.id = w.owner_id
		WHERE w.enabled = TRUE AND u.disabled = FALSE AND (w.cursor_tx, w.cursor_seq) < ($1, $2) LIMIT 1`, last.Tx, last.Seq).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	created := 0
	for {
		n, more, err := db.fanOutOnce(ctx, last, batch)
		created += n
		if err != nil || !more {
			return created, err
		}
	}
}

// fanOutOnce moves at most batch subscriptions that are behind last; more
// reports that some may still be behind.
func (db *DB) fanOutOnce(ctx context.Context, last yard.EventID, batch int) (created int, more bool, err error) {
	lock := ""
	if db.engine == Postgres {
		lock = ` FOR UPDATE OF w SKIP LOCKED`
	}
	err = db.WithTx(ctx, func(tx *Tx) error {
		created, more = 0, false
		rows, err := tx.QueryContext(ctx, `SELECT w.id, w.owner_id, w.types, w.cursor_tx, w.cursor_seq, u.roles
			FROM webhooks w JOIN users u ON u.id = w.owner_id
			WHERE w.enabled = TRUE AND u.disabled = FALSE AND (w.cursor_tx, w.cursor_seq) < ($1, $2)
			ORDER BY w.cursor_tx, w.cursor_seq, w.id LIMIT $3`+lock, last.Tx, last.Seq, batch)
		if err != nil {
			return err
		}
		type sub struct {
			w     yard.Webhook
			cur   yard.EventID
			admin bool
		}
		var subs []sub
		for rows.Next() {
			var s sub
			var types, roles string
			if err := rows.Scan(&s.w.ID, &s.w.Owner, &types, &s.cur.Tx, &s.cur.Seq, &roles); err != nil {
				rows.Close()
				return err
			}
			s.w.Types = splitTypes(types)
			s.admin = slices.Contains(strings.Split(roles, ","), yard.RoleAdmin)
			subs = append(subs, s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		more = len(subs) == batch
		now := Millis(tx.Now())
		for _, s := range subs {
			f := yard.EventFilter{After: s.cur, Limit: fanOutRead}
			if !s.admin {
				f.Owner = &s.w.Owner
			}
			page, err := db.ReadEvents(ctx, f)
			if yard.ErrorCode(err) == yard.EGONE {
				// The retention removed events the subscription had
				// not reached (it was disabled that long): go on from
				// the oldest kept.
				if err := tx.QueryRowContext(ctx, `SELECT pruned_tx, pruned_seq FROM event_clock WHERE id = 1`).Scan(&f.After.Tx, &f.After.Seq); err != nil {
					return err
				}
				page, err = db.ReadEvents(ctx, f)
			}
			if err != nil {
				return err
			}
			for _, e := range page.Events {
				if !s.w.Wants(e.Type) {
					continue
				}
				res, err := tx.ExecContext(ctx, insertDeliverySQL, yard.NewID(), s.w.ID, s.w.Owner, e.ID.Tx, e.ID.Seq, e.Type, e.Subject,
					e.Owner, Millis(e.Time), string(e.Data), 1, now, now, 0)
				if err != nil {
					return err
				}
				if k, _ := res.RowsAffected(); k > 0 {
					created++
				}
			}
			next := page.Next
			if len(page.Events) < fanOutRead {
				// Caught up: every event up to last was visible to the
				// read, so none the owner may see lies between.
				if next.Less(last) {
					next = last
				}
			} else {
				more = true
			}
			if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET cursor_tx = $1, cursor_seq = $2 WHERE id = $3`, next.Tx, next.Seq, s.w.ID); err != nil {
				return err
			}
		}
		return nil
	})
	return created, more, err
}

// HasDueWebhookDeliveries reports whether a delivery of an enabled
// subscription is due and unclaimed (a read, so idle workers need not
// write to find out).
func (db *DB) HasDueWebhookDeliveries(ctx context.Context) (bool, error) {
	var one int
	err := db.QueryRow(ctx, `SELECT 1 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.status = 'pending' AND d.due_at <= $1 AND d.lease_until < $1 AND w.enabled = TRUE LIMIT 1`, Millis(db.Now())).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// webhookClaimLock is the PostgreSQL advisory lock that delivery claims
// take turns on.
const webhookClaimLock = 7214002

// ClaimWebhookDeliveries takes up to n due pending deliveries of enabled
// subscriptions, each with a lease, within the bounds on deliveries in
// flight: the subscriptions take turns, each giving its oldest due
// delivery, in the order of those deliveries. A delivery whose lease expired (its worker
// died) is due again.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, n int, lease time.Duration, b yard.DeliveryBounds) ([]*yard.WebhookClaim, error) {
	perWebhook, perPerson := int64(b.PerWebhook), int64(b.PerPerson)
	if perWebhook <= 0 {
		perWebhook = 1 << 40
	}
	if perPerson <= 0 {
		perPerson = 1 << 40
	}
	lock := ""
	if db.engine == Postgres {
		lock = ` FOR UPDATE OF d SKIP LOCKED`
	}
	var out []*yard.WebhookClaim
	err := db.WithTx(ctx, func(tx *Tx) error {
		out = nil
		if err := asyncCommit(ctx, tx); err != nil {
			return err
		}
		if db.engine == Postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+fmt.Sprint(webhookClaimLock)+`)`); err != nil {
				return err
			}
		}
		now := Millis(tx.Now())
		// What is in flight now, per subscription and per person: a few
		// rows (at most the workers of every process).
		busyHook, busyOwner := map[string]int64{}, map[string]int64{}
		rows, err := tx.QueryContext(ctx, `SELECT webhook_id, owner_id FROM webhook_deliveries WHERE status = 'pending' AND lease_until >= $1`, now)
		if err != nil {
			return err
		}
		for rows.Next() {
			var hook, owner string
			if err := rows.Scan(&hook, &owner); err != nil {
				rows.Close()
				return err
			}
			busyHook[hook]++
			busyOwner[owner]++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Each enabled subscription's oldest due delivery, found through
		// its own index range: a subscription with a long backlog costs
		// one probe, not a walk past its rows.
		type next struct {
			hook, owner string
			due         int64
		}
		var due []next
		rows, err = tx.QueryContext(ctx, `SELECT w.id, w.owner_id, (SELECT d.due_at FROM webhook_deliveries d
				WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.due_at <= $1 AND d.lease_until < $1
				ORDER BY d.due_at, d.id LIMIT 1)
			FROM webhooks w WHERE w.enabled = TRUE`, now)
		if err != nil {
			return err
		}
		for rows.Next() {
			var n next
			var at sql.NullInt64
			if err := rows.Scan(&n.hook, &n.owner, &at); err != nil {
				rows.Close()
				return err
			}
			if at.Valid && busyHook[n.hook] < perWebhook && busyOwner[n.owner] < perPerson {
				n.due = at.Int64
				due = append(due, n)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(due, func(a, b next) int { return cmp.Compare(a.due, b.due) })
		// Take turns: one delivery of each subscription in due order, then
		// another round, until n are claimed or none has room.
		for len(out) < n && len(due) > 0 {
			kept := due[:0]
			for _, nx := range due {
				if len(out) >= n {
					break
				}
				if busyHook[nx.hook] >= perWebhook || busyOwner[nx.owner] >= perPerson {
					continue
				}
				var c yard.WebhookClaim
				d, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+prefixed("d.", deliveryColumns)+`, w.url, w.secret
					FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
					WHERE d.webhook_id = $2 AND d.status = 'pending' AND d.due_at <= $1 AND d.lease_until < $1
					ORDER BY d.due_at, d.id LIMIT 1`+lock, now, nx.hook), &c.URL, &c.Secret)
				if errors.Is(err, sql.ErrNoRows) {
					continue // nothing more due (or another process holds it)
				}
				if err != nil {
					return err
				}
				c.Delivery, c.Token = d, yard.NewID()
				if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_token = $1, lease_until = $2 WHERE id = $3`,
					c.Token, now+lease.Milliseconds(), d.ID); err != nil {
					return err
				}
				out = append(out, &c)
				busyHook[nx.hook]++
				busyOwner[nx.owner]++
				kept = append(kept, nx)
			}
			due = kept
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// FinishWebhookDelivery records how a claimed attempt ended. A failed one
// is followed by the next attempt, due after out.RetryIn (cut to the end of
// the retry window), while the window, yard.WebhookRetryFor after the first
// attempt, lasts. A success clears the subscription's failure state; a
// failure starts it, and a subscription failing for
// yard.WebhookDisableAfter is disabled and a webhook.disabled event
// appended, in the same transaction; disabled reports that. A claim no
// longer held (its lease expired and another worker took it, or the
// subscription is gone) is yard.ErrLeaseLost and changes nothing.
func (db *DB) FinishWebhookDelivery(ctx context.Context, c *yard.WebhookClaim, out yard.DeliveryOutcome) (disabled bool, err error) {
	d := c.Delivery
	err = db.WithTx(ctx, func(tx *Tx) error {
		disabled = false
		if err := asyncCommit(ctx, tx); err != nil {
			return err
		}
		// The subscription first: a deletion locks it before its
		// deliveries, so this order cannot deadlock with one.
		w, err := scanWebhook(tx.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`+db.forUpdate(false), d.WebhookID))
		if errors.Is(err, sql.ErrNoRows) {
			return yard.ErrLeaseLost
		} else if err != nil {
			return err
		}
		now := tx.Now().UTC().Truncate(time.Millisecond)
		at := now
		if !out.At.IsZero() && out.At.Before(now) {
			at = out.At.UTC().Truncate(time.Millisecond)
		}
		first := d.FirstAttempt
		if first.IsZero() {
			first = at
		}
		status := yard.DeliveryFailed
		if out.Succeeded {
			status = yard.DeliverySucceeded
		}
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = $1, code = $2, error = $3, attempted_at = $4, shown_at = $4,
			first_at = $5, data = '', lease_token = '', lease_until = 0 WHERE id = $6 AND lease_token = $7 AND status = 'pending'`,
			status, out.Code, truncateText(out.Error, 500), Millis(at), Millis(first), d.ID, c.Token)
		if err := leaseResult(res, err); err != nil {
			return err
		}
		if out.Succeeded {
			if !w.FailingSince.IsZero() {
				_, err = tx.ExecContext(ctx, `UPDATE webhooks SET failing_since = 0 WHERE id = $1`, w.ID)
			}
			return err
		}
		if end := first.Add(yard.WebhookRetryFor); now.Before(end) {
			due := now.Add(max(out.RetryIn, 0))
			if due.After(end) {
				due = end
			}
			data := string(d.Event.Data)
			if data == "" {
				data = "null"
			}
			if _, err := tx.ExecContext(ctx, insertDeliverySQL, yard.NewID(), w.ID, w.Owner, d.Event.ID.Tx, d.Event.ID.Seq, d.Event.Type,
				d.Event.Subject, d.Event.Owner, Millis(d.Event.Time), data, d.Attempt+1, Millis(now), Millis(due), Millis(first)); err != nil {
				return err
			}
		}
		if w.FailingSince.IsZero() {
			w.FailingSince = at
			if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET failing_since = $1 WHERE id = $2`, Millis(at), w.ID); err != nil {
				return err
			}
		}
		if !w.Enabled || now.Before(w.FailingSince.Add(yard.WebhookDisableAfter)) {
			return nil
		}
		w.Enabled, w.UpdatedAt = false, now
		w.DisabledReason = fmt.Sprintf("Deliveries failed for %s in a row, since %s; the last: %s",
			yard.WebhookDisableAfter, w.FailingSince.Format(time.RFC3339), truncateText(out.Error, 200))
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET enabled = FALSE, disabled_reason = $1, updated_at = $2 WHERE id = $3`,
			w.DisabledReason, Millis(now), w.ID); err != nil {
			return err
		}
		disabled = true
		return appendEvent(ctx, tx, yard.EventWebhookDisabled, yard.WebhookPath(w.ID), w.Owner, w)
	})
	return disabled, err
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

// ReleaseWebhookDelivery hands a claimed attempt back unmade (shutdown): it
// is due again at once for any worker.
func (db *DB) ReleaseWebhookDelivery(ctx context.Context, c *yard.WebhookClaim) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_token = '', lease_until = 0
			WHERE id = $1 AND lease_token = $2 AND status = 'pending'`, c.Delivery.ID, c.Token)
		return leaseResult(res, err)
	})
}

// PruneWebhookDeliveries removes delivery rows created before before (the
// events retention), at most limit of them, none in flight, and returns
// how many it removed.
func (db *DB) PruneWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE id IN
			(SELECT id FROM webhook_deliveries WHERE created_at < $1 AND lease_until < $2 LIMIT $3)`, Millis(before), Millis(tx.Now()), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
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
