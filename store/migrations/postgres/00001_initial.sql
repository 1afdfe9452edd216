-- The schema of the first release, as GORM's AutoMigrate created it then.
-- A database that release created has this schema without goose's version
-- table: store adopts it as version 1 (see adopt in store/migrate.go).
-- Identifiers and keys are COLLATE "C" (store's ctext) so that they sort
-- bytewise, as on SQLite.

-- +goose Up
CREATE TABLE accounts (
    id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    tier text NOT NULL,
    rpm bigint NOT NULL,
    endpoint_multiplier bigint NOT NULL,
    agent_quota bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT accounts_pkey PRIMARY KEY (id)
);
CREATE UNIQUE INDEX idx_accounts_name ON accounts (name);

CREATE TABLE api_keys (
    id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    prefix text COLLATE "C" NOT NULL,
    hash text COLLATE "C" NOT NULL,
    scope text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone,
    CONSTRAINT api_keys_pkey PRIMARY KEY (id),
    CONSTRAINT fk_accounts_keys FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX idx_api_keys_hash ON api_keys (hash);
CREATE INDEX idx_api_keys_prefix ON api_keys (prefix);
CREATE INDEX idx_api_keys_account ON api_keys (account_id);

CREATE TABLE agents (
    id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    model_provider text NOT NULL,
    model text NOT NULL,
    delete_protection boolean NOT NULL,
    status text COLLATE "C" NOT NULL,
    status_reason text NOT NULL,
    retry_at timestamp with time zone,
    fields text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    total_messages bigint NOT NULL,
    total_conversations bigint NOT NULL,
    error_since timestamp with time zone,
    error_millis bigint NOT NULL,
    CONSTRAINT agents_pkey PRIMARY KEY (id),
    CONSTRAINT fk_accounts_agents FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE
);
CREATE INDEX idx_agents_account_status ON agents (account_id, status, id);
CREATE INDEX idx_agents_account_name ON agents (account_id, name, id);
CREATE INDEX idx_agents_account_created ON agents (account_id, created_at, id);

CREATE TABLE conversations (
    id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT conversations_pkey PRIMARY KEY (id),
    CONSTRAINT fk_agents_conversations FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX idx_conversations_agent_key ON conversations (agent_id, key);

CREATE TABLE messages (
    id text COLLATE "C" NOT NULL,
    conversation_id text COLLATE "C" NOT NULL,
    role text NOT NULL,
    user_id text NOT NULL,
    text text NOT NULL,
    model text NOT NULL,
    prompt_tokens bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT messages_pkey PRIMARY KEY (id),
    CONSTRAINT fk_conversations_messages FOREIGN KEY (conversation_id) REFERENCES conversations (id) ON DELETE CASCADE
);
CREATE INDEX idx_messages_conversation_created ON messages (conversation_id, created_at, id);

