package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yard-api/yard"
)

// The claims of due webhook deliveries by the workers, each with a lease
// (webhooks.go says how deliveries go).

// HasDueWebhookDeliveries reports whether a delivery of an enabled
// subscription is due and unclaimed (a read, so idle workers need not
// write to find out).
func (db *DB) HasDueWebhookDeliveries(ctx context.Context) (bool, error) {
	return scanValue[bool](db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
		WHERE d.status = 'pending' AND d.due_at <= $1 AND d.lease_until < $1 AND w.enabled = TRUE)`, Millis(db.Now())))
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
	perWebhook, perPerson := bound(b.PerWebhook), bound(b.PerPerson)
	if n <= 0 {
		return nil, nil
	}
	var out []*yard.WebhookClaim
	db.prepareWrites(ctx, claimBusySQL, claimDueSQL, claimPickSQLite, claimLeaseSQLite)
	err := db.WithTx(ctx, func(tx *Tx) error {
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
			due                      sql.NullInt64
			hookBusy, ownerBusy      int64 // PostgreSQL
			avail, take              int
		}
		busyHook, busyOwner := map[string]int64{}, map[string]int64{}
		var rows *sql.Rows
		var err error
		if db.engine == Postgres {
			rows, err = tx.QueryContext(ctx, claimCandidatesPG, now, min(int64(n), perWebhook))
		} else {
			// Two statements, each cheaper than the one above on SQLite.
			rows, err = tx.Query(ctx, claimBusySQL, now)
			var busy [][2]string
			if busy, err = appendRows(nil, rows, err, scanPair); err != nil {
				return err
			}
			for _, b := range busy {
				busyHook[b[0]]++
				busyOwner[b[1]]++
			}
			rows, err = tx.Query(ctx, claimDueSQL, now, min(int64(n), perWebhook))
		}
		read, err := appendRows(nil, rows, err, func(row rowScanner) (*cand, error) {
			c := &cand{}
			dest := []any{&c.hook, &c.owner, &c.url, &c.secret, &c.due, &c.avail}
			if db.engine == Postgres {
				dest = append(dest, &c.hookBusy, &c.ownerBusy)
			}
			return c, row.Scan(dest...)
		})
		if err != nil {
			return err
		}
		var cands []*cand
		for _, c := range read {
			if db.engine == Postgres {
				busyHook[c.hook], busyOwner[c.owner] = c.hookBusy, c.ownerBusy
			}
			if c.due.Valid && c.avail > 0 {
				cands = append(cands, c)
			}
		}
		slices.SortStableFunc(cands, func(a, b *cand) int { return cmp.Compare(a.due.Int64, b.due.Int64) })
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
			ds, err := appendRows(nil, rows, err, scanDelivery)
			for _, d := range ds {
				c := byHook[d.WebhookID]
				out = append(out, &yard.WebhookClaim{Delivery: d, URL: c.url, Secret: c.secret, Token: token + d.ID})
			}
			return err
		}
		if db.engine == Postgres {
			if err := collect(tx.QueryContext(ctx, claimPG, now, hooks, takes, token, until)); err != nil {
				return err
			}
		} else {
			for i, h := range hooks {
				if err := collect(tx.Query(ctx, claimPickSQLite, h, now, takes[i])); err != nil {
					return err
				}
			}
			for _, c := range out {
				if _, err := tx.exec(ctx, claimLeaseSQLite, c.Token, until, c.Delivery.ID); err != nil {
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

// ReleaseWebhookDelivery hands a claimed attempt back unmade (shutdown): it
// is due again at once for any worker.
func (db *DB) ReleaseWebhookDelivery(ctx context.Context, c *yard.WebhookClaim) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_token = '', lease_until = 0
			WHERE id = $1 AND lease_token = $2 AND status = 'pending'`, c.Delivery.ID, c.Token)
		return leaseResult(res, err)
	})
}
