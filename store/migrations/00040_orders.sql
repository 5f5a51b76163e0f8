-- +goose Up
-- orders are the spec's cancellation example (docs/api.md, Orders). An
-- order keeps its customer's id as a plain value: orders are records and
-- outlive the person (CreateOrder checks that the customer exists).
CREATE TABLE orders (
    id          TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL,
    status      TEXT NOT NULL,            -- placed, shipped, delivered
    canceled    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX orders_customer_idx ON orders (customer_id, id);

-- +goose Down
DROP TABLE orders;
