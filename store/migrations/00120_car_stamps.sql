-- +goose Up
-- yard:incompatible: an older binary stamps car changes from car_version,
-- which this drops; replace every process at once (docs/operations.md).
-- Cars and garages are stamped like events (docs/cars.md, "The search
-- index"): changed_version and car_tombstones.version now hold the writing
-- transaction's number (the transaction id on PostgreSQL, the event clock
-- on SQLite), read up to the oldest transaction still running. The one
-- car_version row that every car writer queued on goes. On SQLite the
-- clock moves past every version stamped before, so the stamps keep
-- growing; PostgreSQL's transaction ids are past them already (each
-- version was taken by a transaction of its own). Every process of a
-- deployment must run the new code: an older one would stamp from
-- car_version.
UPDATE event_clock SET tx = (SELECT CASE WHEN c.version > event_clock.tx THEN c.version ELSE event_clock.tx END
    FROM car_version c WHERE c.id = 1) WHERE id = 1;
DROP TABLE car_version;

-- +goose Down
CREATE TABLE car_version (
    id      INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO car_version (id, version) SELECT 1, MAX(v) FROM (
    SELECT tx AS v FROM event_clock
    UNION ALL SELECT MAX(changed_version) FROM cars
    UNION ALL SELECT MAX(changed_version) FROM garages
    UNION ALL SELECT MAX(version) FROM car_tombstones) m;
