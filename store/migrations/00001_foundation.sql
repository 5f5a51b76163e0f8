-- +goose Up
CREATE TABLE users (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    name_key            TEXT NOT NULL UNIQUE, -- lower(name): names are unique ignoring case
    email               TEXT NOT NULL DEFAULT '',
    phone               TEXT NOT NULL DEFAULT '',
    roles               TEXT NOT NULL,        -- comma-separated
    disabled            BOOLEAN NOT NULL DEFAULT FALSE,
    password_hash       TEXT NOT NULL DEFAULT '',
    ha1_md5             TEXT NOT NULL DEFAULT '',
    ha1_sha256          TEXT NOT NULL DEFAULT '',
    password_changed_at BIGINT NOT NULL DEFAULT 0,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL
);

CREATE TABLE dogs (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    email         TEXT NOT NULL,
    owner_id      TEXT NOT NULL REFERENCES users (id),
    bark_count    BIGINT NOT NULL DEFAULT 0,
    bark_effect   TEXT NOT NULL,
    code_url      TEXT NOT NULL DEFAULT '',
    code_revision TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
CREATE INDEX dogs_owner_idx ON dogs (owner_id, id);

-- +goose Down
DROP TABLE dogs;
DROP TABLE users;
