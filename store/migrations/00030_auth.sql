-- +goose Up
-- Cookie sessions: only a SHA-256 of the key is kept.
CREATE TABLE sessions (
    key_hash     TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_last_seen_idx ON sessions (last_seen_at);

-- Refresh-token families: one per login; current_jti is the one usable token.
CREATE TABLE refresh_families (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    current_jti TEXT NOT NULL,
    expires_at  BIGINT NOT NULL,
    revoked_at  BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL
);
CREATE INDEX refresh_families_expires_idx ON refresh_families (expires_at);

-- Highest Digest nonce count seen per nonce (replay protection).
CREATE TABLE digest_nonces (
    nonce      TEXT PRIMARY KEY,
    nc         BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX digest_nonces_expires_idx ON digest_nonces (expires_at);

-- Signed-request keys; the secret is sealed with the server's key.
CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sealed_secret TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id);

-- Signatures of signed requests seen inside their time window. expires_at
-- is the signed timestamp plus the window, so one signature always has one
-- expires_at: keying on (expires_at, signature) is as unique as the
-- signature alone, keeps inserts near the end of the index, and lets the
-- purge delete a range of the key instead of needing a second index.
CREATE TABLE signed_requests (
    expires_at BIGINT NOT NULL,
    signature  TEXT NOT NULL,
    PRIMARY KEY (expires_at, signature)
);

-- +goose Down
DROP TABLE signed_requests;
DROP TABLE api_keys;
DROP TABLE digest_nonces;
DROP TABLE refresh_families;
DROP TABLE sessions;
