-- +goose Up
-- yard:incompatible: older binaries write cars without announcing them on
-- yard_cars, and a process of this release that holds a read lease would
-- not see those writes (docs/operations.md).
-- car_readers: the read leases of the car search index on PostgreSQL
-- (docs/cars.md, "Read leases"): one row per process that holds one, when
-- it ends by the store's clock (Unix milliseconds) and the snapshot it
-- began at (a pg_snapshot as text). SQLite has one process and no use
-- for it.
CREATE TABLE car_readers (
    id         TEXT PRIMARY KEY,
    expires_ms BIGINT NOT NULL,
    started    TEXT NOT NULL
);

-- +goose Down
DROP TABLE car_readers;
