-- The connection supervisor reads the agents changed since a time every
-- second, a page at a time, now by (updated_at, id): this index serves
-- the keyset from the first changed agent to the last.
--
-- +goose Up
DROP INDEX idx_agents_updated;
CREATE INDEX idx_agents_updated ON agents (updated_at, id);

-- +goose Down
DROP INDEX idx_agents_updated;
CREATE INDEX idx_agents_updated ON agents (updated_at);
