-- A stream keeps its owner's heartbeat, renewed while the owner runs it,
-- so followers on other replicas end a stream whose owner died. Streams
-- written before it have none and are never taken for lost.
--
-- +goose Up
ALTER TABLE message_streams ADD COLUMN beat_at timestamp with time zone;

-- +goose Down
ALTER TABLE message_streams DROP COLUMN beat_at;
