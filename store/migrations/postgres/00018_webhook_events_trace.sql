-- An event keeps the traceparent of the traced request or turn that made
-- it, so the spans of its deliveries link back to that trace.
--
-- +goose Up
ALTER TABLE webhook_events ADD COLUMN trace_parent text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_events DROP COLUMN trace_parent;
