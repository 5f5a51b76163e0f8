package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/defaults"
)

// The fan-out of events into webhook deliveries, and the delivery rows
// (webhooks.go says how deliveries go).

const deliveryColumns = `id, webhook_id, event_tx, event_seq, event_type, event_subject, event_owner, event_at, data,
	attempt, status, code, error, due_at, attempted_at, first_at`

func scanDelivery(row rowScanner) (*yard.WebhookDelivery, error) {
	var d yard.WebhookDelivery
	var due, attempted int64
	var data string
	if err := row.Scan(&d.ID, &d.WebhookID, &d.Event.ID.Tx, &d.Event.ID.Seq, &d.Event.Type, &d.Event.Subject, &d.Event.Owner, ms(&d.Event.Time), &data,
		&d.Attempt, &d.Status, &d.Code, &d.Error, &due, &attempted, ms(&d.FirstAttempt)); err != nil {
		return nil, err
	}
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
	batch = defaults.Positive(batch, 20)
	// A read first, so that a process with nothing to do takes no write
	// transaction.
	behind, err := scanValue[bool](db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks w JOIN users u ON u.id = w.owner_id
		WHERE w.enabled = TRUE AND u.disabled = FALSE AND (w.cursor_tx, w.cursor_seq) < ($1, $2))`, last.Tx, last.Seq))
	if err != nil || !behind {
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
		rows, err := tx.QueryContext(ctx, `SELECT w.id, w.owner_id, w.types, w.cursor_tx, w.cursor_seq, u.roles
			FROM webhooks w JOIN users u ON u.id = w.owner_id
			WHERE w.enabled = TRUE AND u.disabled = FALSE AND (w.cursor_tx, w.cursor_seq) < ($1, $2)
			ORDER BY w.cursor_tx, w.cursor_seq, w.id LIMIT CAST($3 AS BIGINT)`+lock, last.Tx, last.Seq, batch)
		type sub struct {
			w     yard.Webhook
			cur   yard.EventID
			admin bool
		}
		subs, err := appendRows(nil, rows, err, func(row rowScanner) (s sub, err error) {
			var types, roles string
			err = row.Scan(&s.w.ID, &s.w.Owner, &types, &s.cur.Tx, &s.cur.Seq, &roles)
			s.w.Types = splitTypes(types)
			s.admin = slices.Contains(strings.Split(roles, ","), yard.RoleAdmin)
			return s, err
		})
		if err != nil {
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

// insertDelivery starts an INSERT of delivery rows (deliveryValues).
const insertDelivery = `INSERT INTO webhook_deliveries (id, webhook_id, owner_id, event_tx, event_seq, event_type, event_subject,
	event_owner, event_at, data, attempt, status, created_at, due_at, shown_at, first_at) VALUES `

// insertDeliverySQLite inserts one delivery row.
var insertDeliverySQLite = insertDelivery + deliveryValues(0) + ` ON CONFLICT DO NOTHING`

// deliveryValues is the VALUES of one delivery row whose 14 arguments
// (insertDeliveries) follow the first from.
func deliveryValues(from int) string {
	b := []byte("(")
	for i := from + 1; i <= from+11; i++ {
		b = fmt.Appendf(b, "$%d, ", i)
	}
	return string(fmt.Appendf(b, "'pending', $%d, $%d, $%d, $%d)", from+12, from+13, from+13, from+14))
}

// insertDeliveryRows bounds the rows of one INSERT of insertDeliveries.
const insertDeliveryRows = 100

// insertDeliveries inserts pending deliveries, up to insertDeliveryRows
// in one statement (a round trip each on PostgreSQL), skipping any that
// exists (webhook, event, attempt); it returns how many were new. A row
// is id, webhook_id, owner_id, event_tx, event_seq, event_type,
// event_subject, event_owner, event_at, data, attempt, created_at,
// due_at (also its shown_at) and first_at.
func insertDeliveries(ctx context.Context, tx *Tx, rows [][]any) (int, error) {
	size := insertDeliveryRows
	if tx.db.engine != Postgres {
		// No round trips to save: one row a statement, insertDeliverySQLite,
		// prepared (Tx.exec) and so parsed once, where a long VALUES list is
		// parsed every time (it made a fan-out of 10,000 deliveries take
		// 1.0 s instead of 0.4 s).
		size = 1
	}
	created := 0
	for chunk := range slices.Chunk(rows, size) {
		values := make([]string, len(chunk))
		args := make([]any, 0, len(chunk)*14)
		for r, row := range chunk {
			values[r] = deliveryValues(len(args))
			args = append(args, row...)
		}
		n, err := affected(tx.exec(ctx, insertDelivery+strings.Join(values, ", ")+" ON CONFLICT DO NOTHING", args...))
		created += int(n)
		if err != nil {
			return created, err
		}
	}
	return created, nil
}

// PruneWebhookDeliveries removes delivery rows created before before (the
// events retention), at most limit of them, none in flight, and returns
// how many it removed.
func (db *DB) PruneWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := db.WithTx(ctx, func(tx *Tx) error {
		var err error
		n, err = affected(tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE id IN
			(SELECT id FROM webhook_deliveries WHERE created_at < $1 AND lease_until < $2 LIMIT CAST($3 AS BIGINT))`, Millis(before), Millis(tx.Now()), limit))
		return err
	})
	return int(n), err
}
