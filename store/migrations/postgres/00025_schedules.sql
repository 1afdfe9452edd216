-- Schedules: messages an agent receives on a clock. next_run_at is the
-- next due time (NULL when disabled or when a one-off's time has passed):
-- every process looks for the due ones through its index, and fires one by
-- moving it on in the transaction that stores the run, on the condition
-- that it still holds the due time read, so each due time makes one run
-- whatever the number of processes. They cascade from their agent.
--
-- +goose Up
CREATE TABLE schedules (
    id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    name text NOT NULL DEFAULT '',
    cron text NOT NULL DEFAULT '',
    at timestamp with time zone,
    timezone text NOT NULL,
    input_text text NOT NULL,
    user_id text NOT NULL,
    room_id text NOT NULL DEFAULT '',
    target_platform text NOT NULL DEFAULT '',
    target_chat text NOT NULL DEFAULT '',
    enabled boolean NOT NULL,
    reminder boolean NOT NULL DEFAULT false,
    next_run_at timestamp with time zone,
    last_run_at timestamp with time zone,
    last_run_id text NOT NULL DEFAULT '',
    last_error text NOT NULL DEFAULT '',
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT schedules_pkey PRIMARY KEY (id),
    CONSTRAINT fk_agents_schedules FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
);
CREATE INDEX idx_schedules_agent_created ON schedules (agent_id, created_at, id);
CREATE INDEX idx_schedules_due ON schedules (next_run_at);

-- +goose Down
DROP TABLE schedules;
