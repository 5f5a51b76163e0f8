-- +goose Up
-- Car lists are answered by the search index (docs/cars.md, "The search
-- index"); SQL answers them only while a process builds its index at
-- start. The per-field indexes of 00020 served that SQL path, and every
-- write of a car moved an entry in each of them: without them PUT
-- /cars/{id} ran about 50% faster on SQLite (docs/benchmark-journal.md), while a
-- list through the SQL path (a COUNT(*) and a page) went from about 80 to
-- 130 ms on a million cars. cars_garage_idx stays: a garage's change of
-- state and its deletion find its cars by it.
DROP INDEX cars_color_idx;
DROP INDEX cars_type_idx;
DROP INDEX cars_make_idx;
DROP INDEX cars_model_idx;
DROP INDEX cars_year_idx;
DROP INDEX cars_garage_state_idx;

-- +goose Down
CREATE INDEX cars_color_idx ON cars (color_key, id);
CREATE INDEX cars_type_idx ON cars (type_key, id);
CREATE INDEX cars_make_idx ON cars (make_key, id);
CREATE INDEX cars_model_idx ON cars (model_key, id);
CREATE INDEX cars_year_idx ON cars (year, id);
CREATE INDEX cars_garage_state_idx ON cars (garage_state_key, id);
