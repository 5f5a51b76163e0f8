-- +goose Up
-- tasks holds every bark: the durable background work (async barks and
-- scheduled slots) and the finished barks, including bark records.
CREATE TABLE tasks (
    id           TEXT PRIMARY KEY,
    dog_id       TEXT NOT NULL REFERENCES dogs (id) ON DELETE CASCADE,
    effect       TEXT NOT NULL,
    status       TEXT NOT NULL,            -- pending, running, succeeded, failed, canceled
    async        BOOLEAN NOT NULL,
    source       TEXT NOT NULL,            -- request, schedule
    slot_key     TEXT UNIQUE,              -- dog_id@slot millis for scheduled barks: one task per slot
    slot_at      BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    run_at       BIGINT NOT NULL,          -- not before this time (back-off)
    started_at   BIGINT NOT NULL DEFAULT 0,
    finished_at  BIGINT NOT NULL DEFAULT 0,
    barked_at    BIGINT NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 0,
    lease_owner  TEXT NOT NULL DEFAULT '',
    lease_token  TEXT NOT NULL DEFAULT '',
    lease_until  BIGINT NOT NULL DEFAULT 0,
    error        TEXT NOT NULL DEFAULT '',
    output       TEXT NOT NULL DEFAULT '',
    dog_changed  BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX tasks_due_idx ON tasks (status, run_at);
CREATE INDEX tasks_lease_idx ON tasks (status, lease_until);
CREATE INDEX tasks_dog_idx ON tasks (dog_id, created_at);
CREATE INDEX tasks_dog_barked_idx ON tasks (dog_id, barked_at);

-- bark_schedules is the one schedule of a dog; a row stays (frequency 0)
-- after the schedule stops so the last applied change is remembered.
CREATE TABLE bark_schedules (
    dog_id        TEXT PRIMARY KEY REFERENCES dogs (id) ON DELETE CASCADE,
    next_at       BIGINT NOT NULL DEFAULT 0,
    frequency     INTEGER NOT NULL DEFAULT 0, -- minutes; 0: stopped
    last_at       BIGINT NOT NULL DEFAULT 0,  -- the last slot fired
    change_date   BIGINT NOT NULL DEFAULT 0,  -- If-Unmodified-Since of the last applied PATCH (Unix seconds)
    change_hash   TEXT NOT NULL DEFAULT '',   -- hash of its body
    change_status INTEGER NOT NULL DEFAULT 0, -- and the status it was answered with
    updated_at    BIGINT NOT NULL
);
CREATE INDEX bark_schedules_due_idx ON bark_schedules (frequency, next_at);

-- bark_schedule_tokens remembers the tokens of POST /bark-schedule.
CREATE TABLE bark_schedule_tokens (
    dog_id     TEXT NOT NULL REFERENCES dogs (id) ON DELETE CASCADE,
    token      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (dog_id, token)
);

-- +goose Down
DROP TABLE bark_schedule_tokens;
DROP TABLE bark_schedules;
DROP TABLE tasks;
