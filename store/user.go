package store

import (
	"context"
	"strings"

	"github.com/yard-api/yard"
)

const userColumns = `id, name, email, phone, roles, disabled, created_at, updated_at`

func scanUser(row rowScanner) (*yard.User, error) {
	var u yard.User
	var roles string
	if err := row.Scan(&u.ID, &u.Name, &u.Email, &u.Phone, &roles, &u.Disabled, ms(&u.CreatedAt), ms(&u.UpdatedAt)); err != nil {
		return nil, err
	}
	if roles != "" {
		u.Roles = strings.Split(roles, ",")
	}
	return &u, nil
}

// FindUserByID returns the user with that id, or ENOTFOUND.
func (db *DB) FindUserByID(ctx context.Context, id string) (*yard.User, error) {
	defer db.trace(&ctx, "store.FindUserByID").End()
	u, err := scanUser(db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	return u, notFound(err, "Person")
}

// FindUserByName returns the user with that name (ignoring case), or ENOTFOUND.
func (db *DB) FindUserByName(ctx context.Context, name string) (*yard.User, error) {
	defer db.trace(&ctx, "store.FindUserByName").End()
	u, err := scanUser(db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE name_key = $1`, strings.ToLower(name)))
	return u, notFound(err, "Person")
}

// FindUsers returns a page of users ordered by id, and the total count.
func (db *DB) FindUsers(ctx context.Context, f yard.UserFilter) ([]*yard.User, int, error) {
	defer db.trace(&ctx, "store.FindUsers").End()
	from, args := `users`, []any{}
	if f.Name != nil {
		from, args = `users WHERE name_key = $1`, append(args, strings.ToLower(*f.Name))
	}
	return findPage(ctx, db, userColumns, from, `id`, args, pageMax(f.Limit), f.Offset, scanUser)
}

// CountUsers returns how many users exist.
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	return scanValue[int](db.QueryRow(ctx, `SELECT COUNT(*) FROM users`))
}

// CreateUser validates and stores u with its credentials, setting its id
// (when empty) and timestamps. A taken name is ECONFLICT.
func (db *DB) CreateUser(ctx context.Context, u *yard.User, creds *yard.Credentials) error {
	defer db.trace(&ctx, "store.CreateUser").End()
	if err := yard.ValidateUser(u); err != nil {
		return err
	}
	if creds == nil {
		creds = &yard.Credentials{}
	}
	return db.WithTx(ctx, func(tx *Tx) error {
		ensureID(&u.ID)
		u.CreatedAt, u.UpdatedAt = tx.Now().UTC().Truncate(1e6), tx.Now().UTC().Truncate(1e6)
		changed := creds.PasswordChangedAt
		if changed.IsZero() && creds.PasswordHash != "" {
			changed = u.CreatedAt
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO users (id, name, name_key, email, phone, roles, disabled,
			password_hash, ha1_md5, ha1_sha256, password_changed_at, created_at, updated_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)`,
			u.ID, u.Name, strings.ToLower(u.Name), u.Email, u.Phone, strings.Join(u.Roles, ","), u.Disabled,
			creds.PasswordHash, creds.HA1MD5, creds.HA1SHA256, Millis(changed), Millis(u.CreatedAt), Millis(u.UpdatedAt))
		return conflictIf(err, "A person of this name already exists (names are compared ignoring case).")
	})
}

// UpdateUser applies upd to the user and returns the result.
func (db *DB) UpdateUser(ctx context.Context, id string, upd yard.UserUpdate) (*yard.User, error) {
	defer db.trace(&ctx, "store.UpdateUser").End()
	var out *yard.User
	err := db.WithTx(ctx, func(tx *Tx) error {
		u, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
		if err != nil {
			return notFound(err, "Person")
		}
		setIf(&u.Name, upd.Name)
		setIf(&u.Email, upd.Email)
		setIf(&u.Phone, upd.Phone)
		setIf(&u.Roles, upd.Roles)
		setIf(&u.Disabled, upd.Disabled)
		if err := yard.ValidateUser(u); err != nil {
			return err
		}
		u.UpdatedAt = tx.Now().UTC().Truncate(1e6)
		_, err = tx.ExecContext(ctx, `UPDATE users SET name=$1, name_key=$2, email=$3, phone=$4, roles=$5, disabled=$6, updated_at=$7 WHERE id=$8`,
			u.Name, strings.ToLower(u.Name), u.Email, u.Phone, strings.Join(u.Roles, ","), u.Disabled, Millis(u.UpdatedAt), id)
		out = u
		return conflictIf(err, "A person of this name already exists (names are compared ignoring case).")
	})
	return out, err
}

// DeleteUser removes a user who owns no dogs (ECONFLICT otherwise).
func (db *DB) DeleteUser(ctx context.Context, id string) error {
	defer db.trace(&ctx, "store.DeleteUser").End()
	return db.WithTx(ctx, func(tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM dogs WHERE owner_id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return yard.Errorf(yard.ECONFLICT, "The person still owns %d dog(s).", n)
		}
		_, err := scanValue[string](tx.QueryRowContext(ctx, `DELETE FROM users WHERE id = $1 RETURNING id`, id))
		return notFound(err, "Person")
	})
}

// FindCredentials returns the stored secrets of a user.
func (db *DB) FindCredentials(ctx context.Context, userID string) (*yard.Credentials, error) {
	defer db.trace(&ctx, "store.FindCredentials").End()
	var c yard.Credentials
	found, err := scanned(&c, db.QueryRow(ctx, `SELECT password_hash, ha1_md5, ha1_sha256, password_changed_at FROM users WHERE id = $1`, userID).
		Scan(&c.PasswordHash, &c.HA1MD5, &c.HA1SHA256, ms(&c.PasswordChangedAt)))
	return found, notFound(err, "Person")
}

// SetCredentials replaces a user's secrets and ends the user's sessions
// and refresh-token families.
func (db *DB) SetCredentials(ctx context.Context, userID string, c *yard.Credentials) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		changed := c.PasswordChangedAt
		if changed.IsZero() {
			changed = tx.Now()
		}
		_, err := scanValue[string](tx.QueryRowContext(ctx, `UPDATE users SET password_hash=$1, ha1_md5=$2, ha1_sha256=$3, password_changed_at=$4,
			updated_at=$5 WHERE id=$6 RETURNING id`, c.PasswordHash, c.HA1MD5, c.HA1SHA256, Millis(changed), Millis(tx.Now()), userID))
		if err != nil {
			return notFound(err, "Person")
		}
		// A new password ends the user's cookie sessions and refresh-token
		// families, so whoever held the old one is signed out everywhere.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = $1`, userID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE refresh_families SET revoked_at = $1 WHERE user_id = $2 AND revoked_at = 0`, Millis(tx.Now()), userID)
		return err
	})
}
