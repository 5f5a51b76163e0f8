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
//     lock on PostgreSQL, so the counts they read hold). One claim takes
//     many rows in a fixed number of statements.
//   - Finish (FinishWebhookDeliveries): each attempt's outcome, the next
//     attempt when it may be retried, the subscription's failure state, and
//     when it has failed for WebhookDisableAfter, its disabling and the
//     webhook.disabled event, guarded by the attempt's lease; the outcomes
//     of many attempts in one transaction (group commit), which on
//     PostgreSQL is a few statements whatever their number.

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
			w.Types, changed = slices.Clone(*up.Types), true
			if w.Types == nil {
				w.Types = []string{}
			}
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
	return findPage(ctx, db, deliveryColumns, `webhook_deliveries WHERE webhook_id = $1`,
		`shown_at DESC, event_tx DESC, event_seq DESC, attempt DESC`, []any{webhookID}, pageMax(limit), offset,
		func(row rowScanner) (*yard.WebhookDelivery, error) {
			d, err := scanDelivery(row)
			if d != nil {
				d.Event.Data = nil
			}
			return d, err
		})
}

// fanOutRead bounds the events one subscription reads per transaction.
const fanOutRead = 500

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
	db.prepareWrites(ctx, insertDeliverySQLite)
	err = db.WithTx(ctx, func(tx *Tx) error {
		created, more = 0, false
		rows, err := tx.QueryContext(ctx, `SELECT w.id, w.owner_id, w.types, w.cursor_tx, w.cursor_seq, u.roles
			FROM webhooks w JOIN users u ON u.id = w.owner_id
			WHERE w.enabled = TRUE AND u.disabled = FALSE AND (w.cursor_tx, w.cursor_seq) < ($1, $2)
			ORDER BY w.cursor_tx, w.cursor_seq, w.id LIMIT CAST($3 AS BIGINT)`+lock, last.Tx, last.Seq, batch)
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
			var rows [][]any
			for _, e := range page.Events {
				if s.w.Wants(e.Type) {
					rows = append(rows, []any{yard.NewID(), s.w.ID, s.w.Owner, e.ID.Tx, e.ID.Seq, e.Type, e.Subject,
						e.Owner, Millis(e.Time), string(e.Data), 1, now, now, 0})
				}
			}
			k, err := insertDeliveries(ctx, tx, rows)
			created += k
			if err != nil {
				return err
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

// claimDueSQL is each enabled subscription with its oldest due delivery
// and how many are due, up to $2, both found through its own index range
// (a subscription with a long backlog costs a short probe, not a walk past
// its rows; the ORDER BY keeps SQLite on that index).
const claimDueSQL = `SELECT w.id, w.owner_id, w.url, w.secret,
		(SELECT d.due_at FROM webhook_deliveries d
			WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.due_at <= $1 AND d.lease_until < $1
			ORDER BY d.due_at, d.id LIMIT 1) AS due,
		(SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries d
			WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.due_at <= $1 AND d.lease_until < $1
			ORDER BY d.due_at, d.id LIMIT CAST($2 AS BIGINT)) AS k) AS avail
	FROM webhooks w WHERE w.enabled = TRUE`

// claimBusySQL is what is in flight now: a few rows (at most the workers
// of every process).
const claimBusySQL = `SELECT webhook_id, owner_id FROM webhook_deliveries WHERE status = 'pending' AND lease_until >= $1`

// claimCandidatesPG is both in one statement, with the deliveries in
// flight counted per subscription and per owner.
const claimCandidatesPG = `WITH busy AS (` + claimBusySQL + `),
		by_hook AS (SELECT webhook_id, COUNT(*) AS n FROM busy GROUP BY webhook_id),
		by_owner AS (SELECT owner_id, COUNT(*) AS n FROM busy GROUP BY owner_id)
	SELECT c.id, c.owner_id, c.url, c.secret, c.due, c.avail, COALESCE(h.n, 0), COALESCE(o.n, 0)
	FROM (` + claimDueSQL + `) c LEFT JOIN by_hook h ON h.webhook_id = c.id LEFT JOIN by_owner o ON o.owner_id = c.owner_id`

// claimPG leases, in one statement, the $3[i] oldest due deliveries of
// subscription $2[i] (skipping rows another transaction holds); each
// lease's token is $4 and the delivery's id.
var claimPG = `UPDATE webhook_deliveries d SET lease_token = $4 || d.id, lease_until = $5
	FROM (SELECT x.id FROM unnest($2::text[], $3::int[]) AS h(hook, k) CROSS JOIN LATERAL
		(SELECT e.id FROM webhook_deliveries e
			WHERE e.webhook_id = h.hook AND e.status = 'pending' AND e.due_at <= $1 AND e.lease_until < $1
			ORDER BY e.due_at, e.id LIMIT h.k FOR UPDATE SKIP LOCKED) x) p
	WHERE d.id = p.id
	RETURNING ` + prefixed("d.", deliveryColumns)

// claimPickSQLite and claimLeaseSQLite are the same on SQLite, a
// statement per subscription and one per delivery: cheaper there than one
// UPDATE with a subquery and RETURNING.
const (
	claimPickSQLite = `SELECT ` + deliveryColumns + ` FROM webhook_deliveries
		WHERE webhook_id = $1 AND status = 'pending' AND due_at <= $2 AND lease_until < $2
		ORDER BY due_at, id LIMIT CAST($3 AS BIGINT)`
	claimLeaseSQLite = `UPDATE webhook_deliveries SET lease_token = $1, lease_until = $2 WHERE id = $3`
)

// ClaimWebhookDeliveries takes up to n due pending deliveries of enabled
// subscriptions, each with a lease, within the bounds on deliveries in
// flight: the subscriptions take turns, each giving its oldest due
// delivery, in the order of those deliveries. A delivery whose lease
// expired (its worker died) is due again. The claims come oldest due
// first. On PostgreSQL a claim is five round trips whatever n is: the
// BEGIN, the advisory lock, the candidates with what is in flight
// (claimCandidatesPG), the leases (claimPG), the COMMIT.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, n int, lease time.Duration, b yard.DeliveryBounds) ([]*yard.WebhookClaim, error) {
	perWebhook, perPerson := int64(b.PerWebhook), int64(b.PerPerson)
	if perWebhook <= 0 {
		perWebhook = 1 << 40
	}
	if perPerson <= 0 {
		perPerson = 1 << 40
	}
	if n <= 0 {
		return nil, nil
	}
	var out []*yard.WebhookClaim
	db.prepareWrites(ctx, claimBusySQL, claimDueSQL, claimPickSQLite, claimLeaseSQLite)
	err := db.WithTx(ctx, func(tx *Tx) error {
		out = nil
		if db.engine == Postgres {
			// One round trip: asynchronous commit (asyncCommit), plain
			// index scans (below), and the claims' turn.
			//
			// The deliveries in flight are read through the lease index,
			// whose range also holds the entries of every attempt
			// finished within a lease (the old versions of their rows).
			// A bitmap scan visits all their heap pages every time
			// (1-2 ms with 1,000 deliveries a second); a plain index
			// scan marks the entries dead as it passes them, so the
			// next one skips them.
			if _, err := tx.ExecContext(ctx, `SELECT set_config('synchronous_commit', 'off', true), set_config('enable_bitmapscan', 'off', true),
				pg_advisory_xact_lock(`+fmt.Sprint(webhookClaimLock)+`)`); err != nil {
				return err
			}
		}
		now := Millis(tx.Now())
		type cand struct {
			hook, owner, url, secret string
			due                      int64
			avail, take              int
		}
		var cands []*cand
		busyHook, busyOwner := map[string]int64{}, map[string]int64{}
		var rows *sql.Rows
		var err error
		if db.engine == Postgres {
			rows, err = tx.QueryContext(ctx, claimCandidatesPG, now, min(int64(n), perWebhook))
		} else {
			// Two statements, each cheaper than the one above on SQLite.
			if rows, err = db.txQuery(ctx, tx, claimBusySQL, now); err != nil {
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
			rows, err = db.txQuery(ctx, tx, claimDueSQL, now, min(int64(n), perWebhook))
		}
		if err != nil {
			return err
		}
		for rows.Next() {
			var c cand
			var due sql.NullInt64
			dest := []any{&c.hook, &c.owner, &c.url, &c.secret, &due, &c.avail}
			var hookBusy, ownerBusy int64
			if db.engine == Postgres {
				dest = append(dest, &hookBusy, &ownerBusy)
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return err
			}
			if db.engine == Postgres {
				busyHook[c.hook], busyOwner[c.owner] = hookBusy, ownerBusy
			}
			if due.Valid && c.avail > 0 {
				c.due = due.Int64
				cands = append(cands, &c)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortStableFunc(cands, func(a, b *cand) int { return cmp.Compare(a.due, b.due) })
		// Take turns: one delivery of each subscription in due order, then
		// another round, until n are taken or none has room.
		taken, due := 0, slices.Clone(cands) // compacted in place below
		for taken < n && len(due) > 0 {
			kept := due[:0]
			for _, c := range due {
				if taken >= n {
					break
				}
				if c.take >= c.avail || busyHook[c.hook] >= perWebhook || busyOwner[c.owner] >= perPerson {
					continue
				}
				c.take++
				taken++
				busyHook[c.hook]++
				busyOwner[c.owner]++
				kept = append(kept, c)
			}
			due = kept
		}
		if taken == 0 {
			return nil
		}
		byHook := map[string]*cand{}
		var hooks []string
		var takes []int32
		for _, c := range cands {
			if c.take > 0 {
				byHook[c.hook] = c
				hooks, takes = append(hooks, c.hook), append(takes, int32(c.take))
			}
		}
		token, until := yard.NewID()+".", now+lease.Milliseconds()
		collect := func(rows *sql.Rows, err error) error {
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				d, err := scanDelivery(rows)
				if err != nil {
					return err
				}
				c := byHook[d.WebhookID]
				out = append(out, &yard.WebhookClaim{Delivery: d, URL: c.url, Secret: c.secret, Token: token + d.ID})
			}
			return rows.Err()
		}
		if db.engine == Postgres {
			if err := collect(tx.QueryContext(ctx, claimPG, now, hooks, takes, token, until)); err != nil {
				return err
			}
		} else {
			for i, h := range hooks {
				if err := collect(db.txQuery(ctx, tx, claimPickSQLite, h, now, takes[i])); err != nil {
					return err
				}
			}
			for _, c := range out {
				if _, err := db.txExec(ctx, tx, claimLeaseSQLite, c.Token, until, c.Delivery.ID); err != nil {
					return err
				}
			}
		}
		slices.SortFunc(out, func(a, b *yard.WebhookClaim) int {
			return cmp.Or(a.Delivery.Time.Compare(b.Delivery.Time), cmp.Compare(a.Delivery.ID, b.Delivery.ID))
		})
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
			if err != nil {
				return err
			}
			held := map[[2]string]bool{}
			for rows.Next() {
				var k [2]string
				if err := rows.Scan(&k[0], &k[1]); err != nil {
					rows.Close()
					return err
				}
				held[k] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, i := range mine {
				lost[i] = !held[[2]string{claims[i].Delivery.ID, claims[i].Token}]
			}
		} else {
			for _, i := range mine {
				a, out := atts[i], outs[i]
				res, err := db.txExec(ctx, tx, finishSQLite, a.status, out.Code, truncateText(out.Error, 500), Millis(a.at), Millis(a.first),
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
				data := string(d.Event.Data)
				if data == "" {
					data = "null"
				}
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
			w, err := scanWebhook(tx.db.txQueryRow(ctx, tx, lockWebhookSQLite, id))
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
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out[w.ID] = w
	}
	return out, rows.Err()
}

// txQuery runs a query inside tx through its prepared statement when
// prepareWrites made one (SQLite), else as plain SQL.
func (db *DB) txQuery(ctx context.Context, tx *Tx, query string, args ...any) (*sql.Rows, error) {
	if st, ok := db.writeStmts.Load(query); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

const insertDeliverySQLite = `INSERT INTO webhook_deliveries (id, webhook_id, owner_id, event_tx, event_seq, event_type, event_subject,
	event_owner, event_at, data, attempt, status, created_at, due_at, shown_at, first_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, $13, $14) ON CONFLICT DO NOTHING`

// insertDeliveryRows bounds the rows of one INSERT of insertDeliveries.
const insertDeliveryRows = 100

// insertDeliveries inserts pending deliveries, up to insertDeliveryRows
// in one statement (a round trip each on PostgreSQL), skipping any that
// exists (webhook, event, attempt); it returns how many were new. A row
// is id, webhook_id, owner_id, event_tx, event_seq, event_type,
// event_subject, event_owner, event_at, data, attempt, created_at,
// due_at (also its shown_at) and first_at.
func insertDeliveries(ctx context.Context, tx *Tx, rows [][]any) (int, error) {
	created := 0
	if tx.db.engine != Postgres {
		// No round trips to save: one prepared statement per row parses
		// nothing, where a long VALUES list is parsed every time (it made
		// a fan-out of 10,000 deliveries take 1.0 s instead of 0.4 s).
		for _, row := range rows {
			res, err := tx.db.txExec(ctx, tx, insertDeliverySQLite, row...)
			if err != nil {
				return created, err
			}
			n, _ := res.RowsAffected()
			created += int(n)
		}
		return created, nil
	}
	for chunk := range slices.Chunk(rows, insertDeliveryRows) {
		var q strings.Builder
		q.WriteString(`INSERT INTO webhook_deliveries (id, webhook_id, owner_id, event_tx, event_seq, event_type, event_subject,
	event_owner, event_at, data, attempt, status, created_at, due_at, shown_at, first_at) VALUES `)
		args := make([]any, 0, len(chunk)*14)
		for r, row := range chunk {
			if r > 0 {
				q.WriteString(", ")
			}
			b := len(args)
			fmt.Fprintf(&q, "(%s, 'pending', $%d, $%d, $%d, $%d)", placeholders(b+1, 11), b+12, b+13, b+13, b+14)
			args = append(args, row...)
		}
		q.WriteString(" ON CONFLICT DO NOTHING")
		res, err := tx.ExecContext(ctx, q.String(), args...)
		if err != nil {
			return created, err
		}
		n, _ := res.RowsAffected()
		created += int(n)
	}
	return created, nil
}

// placeholders is "$from, …" for n arguments.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", from+i)
	}
	return b.String()
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
			(SELECT id FROM webhook_deliveries WHERE created_at < $1 AND lease_until < $2 LIMIT CAST($3 AS BIGINT))`, Millis(before), Millis(tx.Now()), limit)
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
