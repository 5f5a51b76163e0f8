-- +goose Up
-- tasks_dog_slot_idx: a dog's scheduled barks by slot. The last of them
-- (previousBarks) are read for every dog.updated event and every GET of a
-- dog with a schedule; without it that read went through every bark of
-- the dog, requests' included, and grew with them (docs/benchmark-journal.md,
-- "Renames group-committed, HTTP/1.1 streams out of net/http").
CREATE INDEX tasks_dog_slot_idx ON tasks (dog_id, slot_at) WHERE source = 'schedule';

-- +goose Down
DROP INDEX tasks_dog_slot_idx;
