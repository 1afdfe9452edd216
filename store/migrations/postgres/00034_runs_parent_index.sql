-- Get Run lists the runs a run asked (its children) by parent_run_id,
-- which without an index meant reading every run of the account.
--
-- +goose Up
CREATE INDEX idx_runs_parent ON runs(parent_run_id);

-- +goose Down
DROP INDEX idx_runs_parent;
