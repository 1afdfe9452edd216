-- Responses of the OpenAI Responses API: what a request said that its run
-- does not keep (the response it continues, user, instructions, metadata,
-- input items), so any replica reads, continues and lists it. Keyed by the
-- run; they cascade from their agent.
--
-- +goose Up
CREATE TABLE responses (
    run_id text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    previous_run_id text NOT NULL DEFAULT '',
    user_id text NOT NULL DEFAULT '',
    instructions text NOT NULL DEFAULT '',
    metadata text NOT NULL DEFAULT '',
    background boolean NOT NULL DEFAULT false,
    input text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT responses_pkey PRIMARY KEY (run_id),
    CONSTRAINT fk_agents_responses FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
);
CREATE INDEX idx_responses_account ON responses (account_id);

-- +goose Down
DROP TABLE responses;
