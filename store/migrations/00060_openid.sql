-- +goose Up
-- OpenID 2.0 provider associations: shared ones made by associate
-- requests, private ones made to sign one assertion (stateless mode). The
-- MAC key is sealed with the server's key.
CREATE TABLE openid_associations (
    handle     TEXT PRIMARY KEY,
    assoc_type TEXT NOT NULL,
    sealed_key TEXT NOT NULL,
    private    BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX openid_associations_expires_idx ON openid_associations (expires_at);

-- Response nonces already verified by check_authentication: each
-- assertion is verified at most once, whichever process is asked.
CREATE TABLE openid_nonces (
    nonce      TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX openid_nonces_expires_idx ON openid_nonces (expires_at);

-- Realms a user chose to trust, with the Simple Registration fields
-- (comma-separated) they agreed to share.
CREATE TABLE openid_approvals (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    realm      TEXT NOT NULL,
    sreg       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, realm)
);

-- +goose Down
DROP TABLE openid_approvals;
DROP TABLE openid_nonces;
DROP TABLE openid_associations;
