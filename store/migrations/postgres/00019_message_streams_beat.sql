-- A stream keeps its owner's heartbeat, renewed while the owner runs it,
-- so followers on other replicas end a stream whose owner died (and mark
-- it lost). Streams written before it have none and are never taken for
-- lost.
--
-- +goose Up
ALTER TABLE message_streams ADD COLUMN beat_at timestamp with time zone;
ALTER TABLE message_streams ADD COLUMN lost boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE message_streams DROP COLUMN lost;
ALTER TABLE message_streams DROP COLUMN beat_at;
