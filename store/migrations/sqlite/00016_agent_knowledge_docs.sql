-- Agents count their knowledge documents, moved by the transactions that
-- add and delete them, so a turn of an agent without any skips the
-- knowledge lookup (two reads a turn).
--
-- +goose Up
ALTER TABLE `agents` ADD COLUMN `knowledge_docs` integer NOT NULL DEFAULT 0;
UPDATE `agents` SET `knowledge_docs` = (SELECT COUNT(*) FROM `knowledge_documents` WHERE `knowledge_documents`.`agent_id` = `agents`.`id`);

-- +goose Down
ALTER TABLE `agents` DROP COLUMN `knowledge_docs`;
