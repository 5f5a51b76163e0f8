-- +goose Up
-- Webhook subscriptions (docs/events.md, "Webhooks"). cursor_tx,
-- cursor_seq is the last event the subscription has turned into
-- deliveries: the fan-out takes the row (FOR UPDATE SKIP LOCKED on
-- PostgreSQL), reads the events after it, inserts their deliveries and
-- moves it on, in one transaction, so each event becomes one delivery
-- whichever process does it.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    url             TEXT NOT NULL,
    types           TEXT NOT NULL DEFAULT '',    -- comma-separated patterns; '' for every type
    secret          TEXT NOT NULL,               -- whsec_ and base64
    enabled         BOOLEAN NOT NULL DEFAULT TRUE,
    disabled_reason TEXT NOT NULL DEFAULT '',
    failing_since   BIGINT NOT NULL DEFAULT 0,   -- first failed attempt since the last success (Unix ms); 0: none
    cursor_tx       BIGINT NOT NULL DEFAULT 0,
    cursor_seq      BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX webhooks_owner_idx ON webhooks (owner_id, created_at, id);
CREATE INDEX webhooks_cursor_idx ON webhooks (enabled, cursor_tx, cursor_seq);

-- One row per delivery attempt. A pending row holds a copy of the event
-- (so a delivery outlives a short events retention) and is claimed by a
-- worker of any process with a lease (lease_token, lease_until) while it
-- is tried; a failed attempt that may be retried inserts the next pending
-- one. owner_id is the subscription's owner, for the per-person bound on
-- attempts in flight.
CREATE TABLE webhook_deliveries (
    id            TEXT PRIMARY KEY,
    webhook_id    TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    owner_id      TEXT NOT NULL,
    event_tx      BIGINT NOT NULL,
    event_seq     BIGINT NOT NULL,
    event_type    TEXT NOT NULL,
    event_subject TEXT NOT NULL,
    event_owner   TEXT NOT NULL,
    event_at      BIGINT NOT NULL,             -- Unix ms
    data          TEXT NOT NULL DEFAULT '',    -- the event's data while pending; '' once tried
    attempt       INTEGER NOT NULL,
    status        TEXT NOT NULL,               -- pending, succeeded, failed
    code          INTEGER NOT NULL DEFAULT 0,  -- the receiver's status; 0: no answer
    error         TEXT NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    due_at        BIGINT NOT NULL,             -- not tried before this time (back-off)
    attempted_at  BIGINT NOT NULL DEFAULT 0,
    shown_at      BIGINT NOT NULL,             -- the attempt's time in lists: due_at while pending, then attempted_at
    first_at      BIGINT NOT NULL DEFAULT 0,   -- the event's first attempt; retries stop 24 h after it
    lease_token   TEXT NOT NULL DEFAULT '',
    lease_until   BIGINT NOT NULL DEFAULT 0,
    UNIQUE (webhook_id, event_tx, event_seq, attempt)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (status, due_at, id);
CREATE INDEX webhook_deliveries_next_idx ON webhook_deliveries (webhook_id, status, due_at, id);
CREATE INDEX webhook_deliveries_lease_idx ON webhook_deliveries (status, lease_until);
CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, shown_at);
CREATE INDEX webhook_deliveries_created_idx ON webhook_deliveries (created_at);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
