package store

import (
	"context"
	"database/sql"
	"runtime"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/internal/batch"
)

// Batched primary-key reads of cars on PostgreSQL. A read of one car by id
// is a round trip to the database whose cost is nearly all fixed: the
// network write and read, waking a backend, executing a prepared
// statement. Concurrent reads are therefore gathered into one
// `WHERE id = ANY($1)` query, a few of them in flight at a time. Nothing
// waits to fill a batch: a batch is whatever queued while the earlier
// queries ran, so an idle server adds no latency, and a busy one pays one
// round trip for many cars. Every query starts after each of its requests
// arrived, so a read still sees every write committed before it began.
// SQLite reads are calls into the process, and stay one query each.

// carLoadFlights is how many batch queries run at once: few, so that
// requests queue and share them (on two cores, 2 flights served 23% more
// reads than 4, whose batches averaged 2 cars instead of 3), one per core
// the server has, since a busier server makes bigger batches anyway.
func carLoadFlights() int { return max(2, runtime.GOMAXPROCS(0)) }

// carLoadTimeout bounds one batch query, which no caller's context does.
const carLoadTimeout = 30 * time.Second

// maxCarLoad bounds the ids one query asks for.
const maxCarLoad = 128

type carLoader = batch.Queue[string, *yard.Car]

// carLoaderOf returns the store's loader, made on first use.
func (db *DB) carLoaderOf() *carLoader {
	db.carLoaderOnce.Do(func() {
		db.carLoad = &carLoader{Flights: carLoadFlights(), Max: maxCarLoad, Run: db.loadCars}
	})
	return db.carLoad
}

// loadCars answers every request of one batch with one query.
func (db *DB) loadCars(ids []string, res []batch.Result[*yard.Car]) {
	found, err := db.carsByID(ids) // a repeated id matches its row once
	for i, id := range ids {
		switch c, ok := found[id]; {
		case err != nil:
			res[i].Err = err
		case ok:
			// Each caller gets its own copy, as if it had read alone (one
			// car may be asked for twice in a batch).
			cp := *c
			res[i].Val = &cp
		default:
			res[i].Err = notFound(sql.ErrNoRows, "Car")
		}
	}
}

// carsByID reads the cars with those ids, by id.
func (db *DB) carsByID(ids []string) (map[string]*yard.Car, error) {
	// The query belongs to no one request: a caller that gives up must not
	// cancel the others' reads.
	ctx, cancel := context.WithTimeout(context.Background(), carLoadTimeout)
	defer cancel()
	rows, err := db.read.QueryContext(ctx, `SELECT `+carColumns+` FROM cars WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[string]*yard.Car, len(ids))
	for rows.Next() {
		c, err := scanCar(rows)
		if err != nil {
			return nil, err
		}
		found[c.ID] = c
	}
	return found, rows.Err()
}
