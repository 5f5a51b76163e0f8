-- +goose Up
-- The W3C traceparent of the request that created a bark task
-- (docs/operations.md, "Metrics and traces"): the process that runs the
-- task starts the run's span with it as the parent, so the request and
-- the run are one trace whichever processes took them. NULL when the
-- creating request was not traced. Nullable and without a default, so the
-- binaries of the previous release, which do not name it, keep working
-- beside this one.
ALTER TABLE tasks ADD COLUMN traceparent TEXT;

-- +goose Down
ALTER TABLE tasks DROP COLUMN traceparent;
