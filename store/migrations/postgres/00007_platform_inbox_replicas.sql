-- Platform messages are kept in an inbox from when a connection takes
-- them until they are answered, so a stop, a crash or a lease move loses
-- none; answered ones are pruned by age. Replicas record themselves so
-- that each takes its share of the connections, and each renews all its
-- leases in one statement (by owner).
--
-- +goose Up
CREATE TABLE platform_inbox (
    agent_id text COLLATE "C" NOT NULL,
    platform text COLLATE "C" NOT NULL,
    message_id text COLLATE "C" NOT NULL,
    chat text NOT NULL,
    payload bytea NOT NULL,
    received_at timestamp with time zone NOT NULL,
    CONSTRAINT platform_inbox_pkey PRIMARY KEY (agent_id, platform, message_id)
);
CREATE TABLE replicas (
    owner text COLLATE "C" NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT replicas_pkey PRIMARY KEY (owner)
);
CREATE INDEX idx_platform_messages_created ON platform_messages (created_at);
CREATE INDEX idx_connections_lease_owner ON connections (lease_owner);

-- +goose Down
DROP INDEX idx_connections_lease_owner;
DROP INDEX idx_platform_messages_created;
DROP TABLE replicas;
DROP TABLE platform_inbox;
