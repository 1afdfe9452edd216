-- An account's monthly budget, set by the operator, in millionths of a US
-- dollar (0: none), as replies' costs are kept.
--
-- +goose Up
ALTER TABLE accounts ADD COLUMN monthly_budget_micros bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN monthly_budget_micros;
