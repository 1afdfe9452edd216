-- Streamed replies, kept so that a client resumes a lost stream on any
-- replica: each stream (its reply's message id, whose it is, the replica
-- running it, a cancel another replica asked for, how it ended) and its
-- events by SSE id. A replica writes its streams' new events in batches;
-- streams are deleted in bounded batches 10 minutes after they ended (an
-- hour after they started when they never did), through the indexes on
-- ended_at and created_at.
--
-- +goose Up
CREATE TABLE message_streams (
    message_id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    owner text COLLATE "C" NOT NULL,
    cancel_requested boolean NOT NULL,
    done boolean NOT NULL,
    partial boolean NOT NULL,
    created_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    CONSTRAINT message_streams_pkey PRIMARY KEY (message_id)
);
CREATE INDEX idx_message_streams_owner_cancel ON message_streams (owner, cancel_requested);
CREATE INDEX idx_message_streams_created ON message_streams (created_at);
CREATE INDEX idx_message_streams_ended ON message_streams (ended_at);
CREATE TABLE message_stream_events (
    message_id text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    data bytea NOT NULL,
    CONSTRAINT message_stream_events_pkey PRIMARY KEY (message_id, seq)
);

-- +goose Down
DROP TABLE message_stream_events;
DROP TABLE message_streams;
