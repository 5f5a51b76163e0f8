package store

import (
	"cmp"
	"context"
	"strings"

	"github.com/yard-api/yard"
)

const orderColumns = `id, customer_id, status, canceled, created_at, updated_at`

func scanOrder(row rowScanner) (*yard.Order, error) {
	var o yard.Order
	return scanned(&o, row.Scan(&o.ID, &o.CustomerID, &o.Status, &o.Canceled, ms(&o.CreatedAt), ms(&o.UpdatedAt)))
}

// FindOrderByID returns the order with that id, or ENOTFOUND.
func (db *DB) FindOrderByID(ctx context.Context, id string) (*yard.Order, error) {
	defer db.trace(&ctx, "store.FindOrderByID").End()
	o, err := scanOrder(db.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = $1`, id))
	return o, notFound(err, "Order")
}

// FindOrders returns a page of orders ordered by id (so by creation: ids
// are UUIDv7), and the total count of orders matching the filter.
func (db *DB) FindOrders(ctx context.Context, f yard.OrderFilter) ([]*yard.Order, int, error) {
	defer db.trace(&ctx, "store.FindOrders").End()
	var conds []string
	var c sqlArgs
	// in is col IN (or NOT IN) the values; IN no value holds for no row.
	in := func(col, op string, vals []string) {
		if len(vals) == 0 {
			conds = append(conds, "1 = 0")
			return
		}
		conds = append(conds, col+" "+op+" ("+c.list(yard.KindID, vals)+")")
	}
	if f.Customer != nil {
		conds = append(conds, "customer_id = "+c.arg(*f.Customer))
	}
	if f.CustomerIn != nil {
		in("customer_id", "IN", f.CustomerIn)
	}
	if len(f.CustomerNotIn) > 0 {
		in("customer_id", "NOT IN", f.CustomerNotIn)
	}
	if f.Status != nil && len(f.Status) < len(yard.OrderStatuses) {
		in("status", "IN", f.Status)
	}
	if f.Canceled != nil {
		switch {
		case len(f.Canceled) == 0:
			conds = append(conds, "1 = 0")
		case len(f.Canceled) == 1:
			conds = append(conds, "canceled = "+c.arg(f.Canceled[0]))
		}
	}
	from := `orders`
	if len(conds) > 0 {
		from += " WHERE " + strings.Join(conds, " AND ")
	}
	return findPage(ctx, db, orderColumns, from, `id`, c.args, pageMax(f.Limit), f.Offset, scanOrder)
}

// CreateOrder validates and stores o, setting its id and timestamps. An
// unknown customer is EINVALID.
func (db *DB) CreateOrder(ctx context.Context, o *yard.Order) error {
	defer db.trace(&ctx, "store.CreateOrder").End()
	o.Status = cmp.Or(o.Status, yard.OrderPlaced)
	if err := yard.ValidateNewOrder(o); err != nil {
		return err
	}
	return db.WithTx(ctx, func(tx *Tx) error {
		if err := personExists(ctx, tx, o.CustomerID, "order", "customerId"); err != nil {
			return err
		}
		o.ID = yard.NewID()
		now := tx.Now().UTC().Truncate(1e6)
		o.CreatedAt, o.UpdatedAt = now, now
		_, err := tx.ExecContext(ctx, `INSERT INTO orders (`+orderColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			o.ID, o.CustomerID, o.Status, o.Canceled, Millis(now), Millis(now))
		if err != nil {
			return err
		}
		return appendEvent(ctx, tx, yard.EventOrderCreated, yard.OrderPath(o.ID), o.CustomerID, o)
	})
}

// UpdateOrder changes an order in one transaction: it locks the row
// (PostgreSQL: SELECT ... FOR UPDATE; SQLite: the one writer connection),
// lets fn change a copy, checks the change with yard.CheckOrderChange, and
// writes it with an UPDATE that holds only while the row is still as read.
// A change that changes nothing writes nothing (cancelling twice keeps
// updatedAt).
func (db *DB) UpdateOrder(ctx context.Context, id string, fn func(o *yard.Order) error) (*yard.Order, error) {
	defer db.trace(&ctx, "store.UpdateOrder").End()
	var out *yard.Order
	err := db.WithTx(ctx, func(tx *Tx) error {
		old, err := scanOrder(tx.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM orders WHERE id = $1`+db.forUpdate(false), id))
		if err != nil {
			return notFound(err, "Order")
		}
		next := *old
		if err := fn(&next); err != nil {
			return err
		}
		// Only the status and canceled change; the rest is the stored order.
		next.ID, next.CustomerID, next.CreatedAt, next.UpdatedAt = old.ID, old.CustomerID, old.CreatedAt, old.UpdatedAt
		if err := yard.CheckOrderChange(*old, next); err != nil {
			return err
		}
		if next == *old {
			out = old
			return nil
		}
		next.UpdatedAt = tx.Now().UTC().Truncate(1e6)
		if !next.UpdatedAt.After(old.UpdatedAt) {
			next.UpdatedAt = old.UpdatedAt.Add(1e6)
		}
		k, err := affected(tx.ExecContext(ctx, `UPDATE orders SET status = $1, canceled = $2, updated_at = $3
			WHERE id = $4 AND status = $5 AND canceled = $6`,
			next.Status, next.Canceled, Millis(next.UpdatedAt), id, old.Status, old.Canceled))
		if err != nil {
			return err
		}
		if k != 1 {
			return yard.Errorf(yard.ECONFLICT, "The order changed while this request was applied; read it again.")
		}
		out = &next
		return appendEvent(ctx, tx, yard.EventOrderUpdated, yard.OrderPath(id), next.CustomerID, out)
	})
	return out, err
}
