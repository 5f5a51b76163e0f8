-- +goose Up
-- Sign-in attempts counted by the login limiter (docs/auth.md, "Login
-- rate limit"), shared by every process on the store. One row per attempt
-- and limiter key (a client address or a user name); an attempt is written
-- before its password is checked and deleted again when the check succeeds.
CREATE TABLE login_attempts (
    key        TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    at         BIGINT NOT NULL,
    PRIMARY KEY (key, attempt_id)
);
CREATE INDEX login_attempts_at_idx ON login_attempts (at);

-- One row per limiter key, written first in every reservation so that two
-- processes reserving for the same key take turns (the row lock on
-- PostgreSQL, the single writer on SQLite): the count and the insert that
-- follows it cannot interleave.
CREATE TABLE login_keys (
    key TEXT PRIMARY KEY,
    at  BIGINT NOT NULL
);
CREATE INDEX login_keys_at_idx ON login_keys (at);

-- +goose Down
DROP TABLE login_keys;
DROP TABLE login_attempts;
