-- +goose Up
-- OAuth 1.0a consumers (RFC 5849 clients), registered by an administrator.
-- The secret is sealed with the server's key (as API-key secrets are).
CREATE TABLE oauth_consumers (
    consumer_key  TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    callback_url  TEXT NOT NULL DEFAULT '',
    sealed_secret TEXT NOT NULL,
    created_by    TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL
);

-- Request tokens (temporary credentials) and access tokens (token
-- credentials). Deleting a consumer or a user deletes its tokens.
CREATE TABLE oauth_tokens (
    id            TEXT PRIMARY KEY,
    token         TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    state         TEXT NOT NULL,
    consumer_key  TEXT NOT NULL REFERENCES oauth_consumers (consumer_key) ON DELETE CASCADE,
    sealed_secret TEXT NOT NULL,
    callback      TEXT NOT NULL DEFAULT '',
    user_id       TEXT REFERENCES users (id) ON DELETE CASCADE,
    verifier_hash TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX oauth_tokens_consumer_idx ON oauth_tokens (consumer_key);
CREATE INDEX oauth_tokens_user_idx ON oauth_tokens (user_id);
CREATE INDEX oauth_tokens_expires_idx ON oauth_tokens (expires_at);

-- +goose Down
DROP TABLE oauth_tokens;
DROP TABLE oauth_consumers;
