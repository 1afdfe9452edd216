-- A conversation's title is its first user message, cut to 80 characters,
-- so lists show what a conversation is about without reading messages.
-- Existing conversations take theirs from their stored messages.
--
-- +goose Up
ALTER TABLE `conversations` ADD COLUMN `title` text NOT NULL DEFAULT "";
UPDATE conversations SET title = COALESCE(substr((SELECT m.text FROM messages m
	WHERE m.conversation_id = conversations.id AND m.role = 'user' ORDER BY m.created_at, m.id LIMIT 1), 1, 80), '');

-- +goose Down
ALTER TABLE `conversations` DROP COLUMN `title`;
