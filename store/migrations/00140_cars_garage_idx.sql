-- +goose Up
-- cars_garage_idx on garage_id alone. A garage's cars are found by it (its
-- car count, its change of state, its deletion, the foreign key), and none
-- of those wants them in id order: car lists come from the search index
-- (00090). Shorter keys made the index about a fifth cheaper to build,
-- which `yard import` does after loading an empty table (docs/cars.md,
-- "How an import is made fast"). IF EXISTS: an import killed half-way
-- may have left it out.
DROP INDEX IF EXISTS cars_garage_idx;
CREATE INDEX cars_garage_idx ON cars (garage_id);

-- +goose Down
DROP INDEX IF EXISTS cars_garage_idx;
CREATE INDEX cars_garage_idx ON cars (garage_id, id);
