-- +goose Up
-- The change feed of cars and garages (docs/cars.md, "The search index").
-- Every write transaction on cars or garages increments car_version.version
-- first; because writers serialise on that row, versions are in commit
-- order. Each row the transaction writes is stamped with that version in
-- changed_version, and each deletion leaves a tombstone with it, so a
-- process holding version V reads exactly what changed after V. Rows
-- written before this migration keep 0: every index reads them at its
-- first build.
ALTER TABLE cars ADD COLUMN changed_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE garages ADD COLUMN changed_version BIGINT NOT NULL DEFAULT 0;
CREATE INDEX cars_changed_idx ON cars (changed_version);
CREATE INDEX garages_changed_idx ON garages (changed_version);

-- kind is 'car' or 'garage'. One row per deleted id: deleting again
-- (after a re-creation) moves its version forward.
CREATE TABLE car_tombstones (
    kind    TEXT NOT NULL,
    id      TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX car_tombstones_version_idx ON car_tombstones (version);

-- +goose Down
DROP TABLE car_tombstones;
DROP INDEX garages_changed_idx;
DROP INDEX cars_changed_idx;
ALTER TABLE garages DROP COLUMN changed_version;
ALTER TABLE cars DROP COLUMN changed_version;
