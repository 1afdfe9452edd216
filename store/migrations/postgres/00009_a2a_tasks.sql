-- A2A tasks: a message sent to an agent over the A2A protocol and its
-- reply, kept so that GetTask answers on every replica for 24 hours after
-- the task last changed (older ones are deleted as new ones are made,
-- through the index on updated_at). They cascade from their agent.
--
-- +goose Up
CREATE TABLE a2a_tasks (
    id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    context_id text COLLATE "C" NOT NULL,
    state text NOT NULL,
    request_message_id text NOT NULL,
    request_text text NOT NULL,
    reply_message_id text NOT NULL,
    reply_text text NOT NULL,
    reason text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT a2a_tasks_pkey PRIMARY KEY (id),
    CONSTRAINT fk_agents_a2a_tasks FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
);
CREATE INDEX idx_a2a_tasks_agent_context ON a2a_tasks (agent_id, context_id);
CREATE INDEX idx_a2a_tasks_updated ON a2a_tasks (updated_at);

-- +goose Down
DROP TABLE a2a_tasks;
