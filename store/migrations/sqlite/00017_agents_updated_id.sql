-- The connection supervisor reads the agents changed since a time every
-- second, a page at a time. Paged by id, SQLite walked the primary key
-- and looked up every agent's updated_at: the whole table each second.
-- Paged by (updated_at, id) from this index, it reads only the changed.
--
-- +goose Up
DROP INDEX `idx_agents_updated`;
CREATE INDEX `idx_agents_updated` ON `agents`(`updated_at`, `id`);

-- +goose Down
DROP INDEX `idx_agents_updated`;
CREATE INDEX `idx_agents_updated` ON `agents`(`updated_at`);
