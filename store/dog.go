package store

import (
	"cmp"
	"context"

	"github.com/yard-api/yard"
)

const dogColumns = `id, name, email, owner_id, bark_count, bark_effect, code_url, code_revision, created_at, updated_at`

func scanDog(row rowScanner) (*yard.Dog, error) {
	var d yard.Dog
	return scanned(&d, row.Scan(&d.ID, &d.Name, &d.Email, &d.Owner, &d.BarkCount, &d.BarkEffect, &d.CodeURL, &d.CodeRevision,
		ms(&d.CreatedAt), ms(&d.UpdatedAt)))
}

// FindDogByID returns the dog with that id, or ENOTFOUND.
func (db *DB) FindDogByID(ctx context.Context, id string) (*yard.Dog, error) {
	defer db.trace(&ctx, "store.FindDogByID").End()
	return dogWithSchedule(ctx, db, id)
}

// FindDogs returns a page of dogs ordered by id, and the total count.
func (db *DB) FindDogs(ctx context.Context, f yard.DogFilter) ([]*yard.Dog, int, error) {
	defer db.trace(&ctx, "store.FindDogs").End()
	from, args := `dogs`, []any{}
	if f.Owner != nil {
		from, args = `dogs WHERE owner_id = $1`, append(args, *f.Owner)
	}
	out, total, err := findPage(ctx, db, dogColumns, from, `id`, args, pageMax(f.Limit), f.Offset, scanDog)
	if err != nil {
		return nil, 0, err
	}
	return out, total, db.attachSchedules(ctx, out...)
}

// CreateDog validates and stores d, setting its id (when empty) and
// timestamps. An unknown owner is EINVALID; a taken id is ECONFLICT.
func (db *DB) CreateDog(ctx context.Context, d *yard.Dog) error {
	defer db.trace(&ctx, "store.CreateDog").End()
	d.BarkEffect = cmp.Or(d.BarkEffect, yard.EffectRecord)
	if err := yard.ValidateDog(d); err != nil {
		return err
	}
	return db.WithTx(ctx, func(tx *Tx) error {
		if err := personExists(ctx, tx, d.Owner, "dog", "owner"); err != nil {
			return err
		}
		ensureID(&d.ID)
		now := tx.Now().UTC().Truncate(1e6)
		d.CreatedAt, d.UpdatedAt = now, now
		_, err := tx.ExecContext(ctx, `INSERT INTO dogs (id, name, email, owner_id, bark_count, bark_effect, code_url, code_revision, created_at, updated_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
			d.ID, d.Name, d.Email, d.Owner, d.BarkCount, d.BarkEffect, d.CodeURL, d.CodeRevision, Millis(now), Millis(now))
		if err := conflictIf(err, "A dog with id %q already exists.", d.ID); err != nil {
			return err
		}
		return appendEvent(ctx, tx, yard.EventDogCreated, yard.DogPath(d.ID), d.Owner, d)
	})
}

// setIf sets *dst to *v, when v is not nil (a field of a partial update).
func setIf[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// personExists checks that the person id, the field of a what (a dog's
// owner, an order's customer), exists: EINVALID naming the field when not.
func personExists(ctx context.Context, tx *Tx, id, what, field string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE id = $1`, id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return yard.Invalid("The "+what+" has invalid fields.", yard.FieldError{Field: field, Message: "no person has this id"})
	}
	return nil
}

// UpdateDog applies upd to the dog and returns the result.
func (db *DB) UpdateDog(ctx context.Context, id string, upd yard.DogUpdate) (*yard.Dog, error) {
	// span, not trace: WithBatchTx's closure keeps ctx (trace.go).
	ctx, span := db.span(ctx, "store.UpdateDog")
	defer span.End()
	var out *yard.Dog
	// Group-committed on SQLite (batch.go): a rename shares its commit,
	// and its fsync, with the other writes queued meanwhile. PostgreSQL
	// has many writers and updates of one dog seldom meet: no key, no
	// batch.
	err := db.WithBatchTx(ctx, "", func(tx *Tx) error {
		var err error
		out, err = db.updateDogTx(ctx, tx, id, upd)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, db.attachSchedules(ctx, out)
}

// updateDogTx applies upd to the dog inside tx.
func (db *DB) updateDogTx(ctx context.Context, tx *Tx, id string, upd yard.DogUpdate) (*yard.Dog, error) {
	d, err := db.lockDog(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	setIf(&d.Name, upd.Name)
	setIf(&d.Email, upd.Email)
	setIf(&d.Owner, upd.Owner)
	setIf(&d.BarkEffect, upd.BarkEffect)
	setIf(&d.CodeURL, upd.CodeURL)
	if err := yard.ValidateDog(d); err != nil {
		return nil, err
	}
	if upd.Owner != nil {
		if err := personExists(ctx, tx, d.Owner, "dog", "owner"); err != nil {
			return nil, err
		}
	}
	d.UpdatedAt = tx.Now().UTC().Truncate(1e6)
	_, err = tx.ExecContext(ctx, `UPDATE dogs SET name=$1, email=$2, owner_id=$3, bark_effect=$4, code_url=$5, updated_at=$6 WHERE id=$7`,
		d.Name, d.Email, d.Owner, d.BarkEffect, d.CodeURL, Millis(d.UpdatedAt), id)
	tx.markDog(id)
	return d, err
}

// DeleteDog removes a dog.
func (db *DB) DeleteDog(ctx context.Context, id string) error {
	defer db.trace(&ctx, "store.DeleteDog").End()
	return db.WithTx(ctx, func(tx *Tx) error {
		owner, err := scanValue[string](tx.QueryRowContext(ctx, `DELETE FROM dogs WHERE id = $1 RETURNING owner_id`, id))
		if err != nil {
			return notFound(err, "Dog")
		}
		return appendEvent(ctx, tx, yard.EventDogDeleted, yard.DogPath(id), owner, yard.EventDeleted{ID: id})
	})
}
