-- Agents and webhooks carry a version that grows with every change their
-- Get shows: it is their ETag, and conditional writes (If-Match) compare
-- it inside the write's transaction.
--
-- +goose Up
ALTER TABLE agents ADD COLUMN version bigint DEFAULT 1 NOT NULL;
ALTER TABLE webhooks ADD COLUMN version bigint DEFAULT 1 NOT NULL;

-- +goose Down
ALTER TABLE webhooks DROP COLUMN version;
ALTER TABLE agents DROP COLUMN version;
