-- Replies keep the tool calls of their turn, and the hourly rollups count
-- tool calls and failed ones.
--
-- +goose Up
ALTER TABLE messages ADD COLUMN tool_calls text DEFAULT ''::text NOT NULL;
ALTER TABLE agent_hour_stats ADD COLUMN tool_calls bigint DEFAULT 0 NOT NULL;
ALTER TABLE agent_hour_stats ADD COLUMN tool_errors bigint DEFAULT 0 NOT NULL;

-- +goose Down
ALTER TABLE agent_hour_stats DROP COLUMN tool_errors;
ALTER TABLE agent_hour_stats DROP COLUMN tool_calls;
ALTER TABLE messages DROP COLUMN tool_calls;
