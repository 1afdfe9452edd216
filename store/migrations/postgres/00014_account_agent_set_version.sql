-- Accounts version their set of agents, moved by the transactions that
-- create and delete agents: List keeps where its pages start under it, so a
-- deep page reads from its start instead of skipping the pages before it.
--
-- +goose Up
ALTER TABLE accounts ADD COLUMN agent_set_version bigint DEFAULT 0 NOT NULL;

-- +goose Down
ALTER TABLE accounts DROP COLUMN agent_set_version;
