-- Events name the conversation whose messages they quote, so deleting a
-- conversation or an agent deletes that text from the webhook outbox too;
-- the events written before are given theirs from their bodies.
--
-- +goose Up
ALTER TABLE `webhook_events` ADD COLUMN `conversation_id` text NOT NULL DEFAULT "";
UPDATE `webhook_events` SET `conversation_id` = COALESCE(json_extract(`body`, '$.data.conversationId'), '')
  WHERE `type` = 'message.completed';
CREATE INDEX `idx_webhook_events_agent` ON `webhook_events`(`agent_id`);
CREATE INDEX `idx_webhook_events_conversation` ON `webhook_events`(`conversation_id`);

-- +goose Down
DROP INDEX `idx_webhook_events_conversation`;
DROP INDEX `idx_webhook_events_agent`;
ALTER TABLE `webhook_events` DROP COLUMN `conversation_id`;
