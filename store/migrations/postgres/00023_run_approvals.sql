-- A run waiting for a person's decision on its tool calls keeps when the
-- calls still waiting are denied as expired: every process looks for runs
-- past it, so expiry holds across restarts.
--
-- +goose Up
ALTER TABLE runs ADD COLUMN expires_at timestamp with time zone;

-- +goose Down
ALTER TABLE runs DROP COLUMN expires_at;
