-- Idempotency keys: a keyed POST's fingerprint (method, path, hash of the
-- canonical body), its state (in flight while it runs, under a lease that
-- another request may take over when it runs out; done once answered) and
-- its stored answer, per account and key, kept 24 hours. Expired keys are
-- deleted in bounded batches as new ones are claimed, through the index on
-- expires_at.
--
-- +goose Up
CREATE TABLE idempotency_keys (
    account_id text COLLATE "C" NOT NULL,
    idem_key text COLLATE "C" NOT NULL,
    fingerprint text NOT NULL,
    state text NOT NULL,
    owner text NOT NULL,
    status bigint NOT NULL,
    header bytea NOT NULL,
    body bytea NOT NULL,
    lease_until timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (account_id, idem_key)
);
CREATE INDEX idx_idempotency_keys_expires ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
