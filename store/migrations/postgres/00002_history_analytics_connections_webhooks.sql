-- Everything since the first release: derived columns of accounts, agents
-- and conversations (filled for the rows that predate them), token and
-- timing columns of messages, who spoke in each conversation, hourly
-- analytics, platform connections and webhooks.

-- +goose Up
ALTER TABLE accounts ADD COLUMN agent_count bigint DEFAULT 0 NOT NULL;
UPDATE accounts SET agent_count = (SELECT COUNT(*) FROM agents WHERE agents.account_id = accounts.id);

-- clients is the "clients" member of fields as stored ('' when unset or
-- null); the json type (not jsonb) keeps the member's text as written.
ALTER TABLE agents ADD COLUMN clients text DEFAULT ''::text NOT NULL;
UPDATE agents SET clients = COALESCE((SELECT c::text FROM (SELECT fields::json -> 'clients' AS c) member
    WHERE json_typeof(c) <> 'null'), '');
CREATE INDEX idx_agents_updated ON agents (updated_at);

ALTER TABLE conversations
    ADD COLUMN kind text DEFAULT ''::text NOT NULL,
    ADD COLUMN room_id text DEFAULT ''::text NOT NULL,
    ADD COLUMN user_id text DEFAULT ''::text NOT NULL,
    ADD COLUMN platform text COLLATE "C" DEFAULT 'api'::text NOT NULL,
    ADD COLUMN message_count bigint DEFAULT 0 NOT NULL,
    ADD COLUMN last_message_at timestamp with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL;
UPDATE conversations SET
    kind = CASE WHEN key LIKE 'room:%' THEN 'room' ELSE 'direct' END,
    room_id = CASE WHEN key LIKE 'room:%' THEN substr(key, 6) ELSE '' END,
    user_id = CASE WHEN key LIKE 'user:%' THEN substr(key, 6) ELSE '' END,
    message_count = (SELECT COUNT(*) FROM messages WHERE messages.conversation_id = conversations.id),
    last_message_at = COALESCE((SELECT MAX(created_at) FROM messages WHERE messages.conversation_id = conversations.id),
        created_at);
CREATE INDEX idx_conversations_agent_platform ON conversations (agent_id, platform, last_message_at, id);
CREATE INDEX idx_conversations_agent_active ON conversations (agent_id, last_message_at, id);

ALTER TABLE messages
    ADD COLUMN tokens_used bigint DEFAULT 0 NOT NULL,
    ADD COLUMN response_millis numeric DEFAULT 0 NOT NULL,
    ADD COLUMN partial boolean DEFAULT false NOT NULL;

CREATE TABLE conversation_users (
    conversation_id text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    CONSTRAINT conversation_users_pkey PRIMARY KEY (conversation_id, user_id),
    CONSTRAINT fk_conversations_speakers FOREIGN KEY (conversation_id) REFERENCES conversations (id) ON DELETE CASCADE
);
CREATE INDEX idx_conversation_users_agent_user ON conversation_users (agent_id, user_id);
INSERT INTO conversation_users (conversation_id, user_id, agent_id)
    SELECT DISTINCT m.conversation_id, m.user_id, c.agent_id FROM messages m
    JOIN conversations c ON c.id = m.conversation_id
    WHERE m.role = 'user' AND m.user_id <> '';

CREATE TABLE agent_hour_stats (
    agent_id text COLLATE "C" NOT NULL,
    hour timestamp with time zone NOT NULL,
    messages bigint NOT NULL,
    tokens_used bigint NOT NULL,
    replies bigint NOT NULL,
    response_millis numeric NOT NULL,
    errors bigint NOT NULL,
    CONSTRAINT agent_hour_stats_pkey PRIMARY KEY (agent_id, hour)
);
CREATE TABLE agent_hour_latency (
    agent_id text COLLATE "C" NOT NULL,
    hour timestamp with time zone NOT NULL,
    bucket bigint NOT NULL,
    count bigint NOT NULL,
    CONSTRAINT agent_hour_latency_pkey PRIMARY KEY (agent_id, hour, bucket)
);
CREATE TABLE agent_hour_sketches (
    agent_id text COLLATE "C" NOT NULL,
    hour timestamp with time zone NOT NULL,
    users bytea NOT NULL,
    conversations bytea NOT NULL,
    CONSTRAINT agent_hour_sketches_pkey PRIMARY KEY (agent_id, hour)
);
CREATE TABLE agent_hour_errors (
    agent_id text COLLATE "C" NOT NULL,
    hour timestamp with time zone NOT NULL,
    kind text NOT NULL,
    count bigint NOT NULL,
    CONSTRAINT agent_hour_errors_pkey PRIMARY KEY (agent_id, hour, kind)
);

CREATE TABLE connections (
    agent_id text COLLATE "C" NOT NULL,
    platform text COLLATE "C" NOT NULL,
    bot_id text COLLATE "C" DEFAULT ''::text NOT NULL,
    bot_username text,
    state text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    since timestamp with time zone NOT NULL,
    last_event_at timestamp with time zone,
    messages_in bigint DEFAULT 0 NOT NULL,
    messages_out bigint DEFAULT 0 NOT NULL,
    cursor text DEFAULT ''::text NOT NULL,
    lease_owner text DEFAULT ''::text NOT NULL,
    lease_epoch bigint DEFAULT 0 NOT NULL,
    lease_expires_at timestamp with time zone,
    CONSTRAINT connections_pkey PRIMARY KEY (agent_id, platform)
);
CREATE INDEX idx_connections_platform_bot ON connections (platform, bot_id);
CREATE TABLE platform_messages (
    agent_id text COLLATE "C" NOT NULL,
    platform text COLLATE "C" NOT NULL,
    message_id text COLLATE "C" NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT platform_messages_pkey PRIMARY KEY (agent_id, platform, message_id)
);

CREATE TABLE webhooks (
    id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    url text NOT NULL,
    events text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    agent_id text COLLATE "C" DEFAULT ''::text NOT NULL,
    enabled boolean NOT NULL,
    disabled_reason text DEFAULT ''::text NOT NULL,
    secret text NOT NULL,
    prev_secret text DEFAULT ''::text NOT NULL,
    prev_secret_until timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT webhooks_pkey PRIMARY KEY (id)
);
CREATE INDEX idx_webhooks_account_created ON webhooks (account_id, created_at, id);
CREATE TABLE webhook_events (
    id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" DEFAULT ''::text NOT NULL,
    type text NOT NULL,
    body text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT webhook_events_pkey PRIMARY KEY (id)
);
CREATE TABLE webhook_deliveries (
    id text COLLATE "C" NOT NULL,
    webhook_id text COLLATE "C" NOT NULL,
    event_id text COLLATE "C" NOT NULL,
    type text NOT NULL,
    status text NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL,
    last_status_code bigint DEFAULT 0 NOT NULL,
    last_error text DEFAULT ''::text NOT NULL,
    next_attempt_at timestamp with time zone,
    claim text DEFAULT ''::text NOT NULL,
    final boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_attempt_at timestamp with time zone,
    CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id)
);
CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX idx_webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at, id);
CREATE TABLE webhook_attempts (
    id bigserial NOT NULL,
    delivery_id text COLLATE "C" NOT NULL,
    at timestamp with time zone NOT NULL,
    status_code bigint NOT NULL,
    error text NOT NULL,
    millis bigint NOT NULL,
    CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id)
);
CREATE INDEX idx_webhook_attempts_delivery ON webhook_attempts (delivery_id);
