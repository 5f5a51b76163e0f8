-- +goose Up
-- The event log (docs/events.md): every change a client can see, written
-- in the transaction of the change. An event's place is (tx, seq): tx is
-- the writing transaction's number and seq the event's ordinal in it.
-- On PostgreSQL tx is the transaction id (pg_current_xact_id), and readers
-- see only rows of transactions older than the oldest one still running
-- (pg_snapshot_xmin), so no event can ever appear before one already read,
-- without any lock that writers queue on. On SQLite, whose one writer
-- orders every transaction, tx comes from event_clock.
CREATE TABLE events (
    tx       BIGINT NOT NULL,
    seq      BIGINT NOT NULL,
    type     TEXT NOT NULL,
    subject  TEXT NOT NULL,
    owner_id TEXT NOT NULL DEFAULT '',  -- who may see it; '' for administrators only
    at       BIGINT NOT NULL,           -- Unix milliseconds
    data     TEXT NOT NULL,
    PRIMARY KEY (tx, seq)
);
CREATE INDEX events_owner_idx ON events (owner_id, tx, seq);
-- No index on at: the retention prunes from the oldest id on (PruneEvents),
-- and every write pays for each index.

-- One row. tx is SQLite's transaction counter (unused on PostgreSQL);
-- pruned_tx, pruned_seq are the newest event the retention removed: a
-- reader resuming before it has missed events (410).
CREATE TABLE event_clock (
    id         INTEGER PRIMARY KEY,
    tx         BIGINT NOT NULL DEFAULT 0,
    pruned_tx  BIGINT NOT NULL DEFAULT 0,
    pruned_seq BIGINT NOT NULL DEFAULT 0
);
INSERT INTO event_clock (id) VALUES (1);

-- +goose Down
DROP TABLE event_clock;
DROP TABLE events;
