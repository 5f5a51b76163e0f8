-- +goose Up
-- Cars, garages and saved searches (CONTRACT 6). Text fields a query
-- compares keep a lower-case copy (*_key, strings.ToLower in Go, the same
-- on both engines) so string matches ignore case and use plain indexes.
CREATE TABLE garages (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    name_key   TEXT NOT NULL,
    state      TEXT NOT NULL,
    state_key  TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX garages_name_idx ON garages (name_key);
CREATE INDEX garages_state_idx ON garages (state_key);

-- garage_state_key copies the state of the car's garage (kept in step when
-- a car moves or a garage changes state) so a garage.state filter is one
-- index range in id order, like any other field.
CREATE TABLE cars (
    id               TEXT PRIMARY KEY,
    color            TEXT NOT NULL,
    color_key        TEXT NOT NULL,
    type             TEXT NOT NULL,
    type_key         TEXT NOT NULL,
    doors            INTEGER NOT NULL,
    make             TEXT NOT NULL,
    make_key         TEXT NOT NULL,
    model            TEXT NOT NULL,
    model_key        TEXT NOT NULL,
    year             INTEGER NOT NULL,
    garage_id        TEXT REFERENCES garages (id),
    garage_state_key TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
-- Each index ends with id: an equality on the first column then yields
-- cars already in page order, so a first page reads about max rows.
CREATE INDEX cars_color_idx ON cars (color_key, id);
CREATE INDEX cars_type_idx ON cars (type_key, id);
CREATE INDEX cars_make_idx ON cars (make_key, id);
CREATE INDEX cars_model_idx ON cars (model_key, id);
CREATE INDEX cars_year_idx ON cars (year, id);
CREATE INDEX cars_garage_idx ON cars (garage_id, id);
CREATE INDEX cars_garage_state_idx ON cars (garage_state_key, id);

-- One row whose version changes with every write to cars or garages;
-- cached totals are valid while it stays the same.
CREATE TABLE car_version (
    id      INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO car_version (id, version) VALUES (1, 0);

CREATE TABLE searches (
    id         TEXT PRIMARY KEY,
    name       TEXT,
    name_key   TEXT UNIQUE,
    query      TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE searches;
DROP TABLE car_version;
DROP TABLE cars;
DROP TABLE garages;
