-- Idempotency keys: a keyed POST's fingerprint (method, path, hash of the
-- canonical body), its state (in flight while it runs, under a lease that
-- another request may take over when it runs out; done once answered) and
-- its stored answer, per account and key, kept 24 hours. Expired keys are
-- deleted in bounded batches as new ones are claimed, through the index on
-- expires_at.
--
-- +goose Up
CREATE TABLE `idempotency_keys` (`account_id` text,`idem_key` text,`fingerprint` text NOT NULL,`state` text NOT NULL,
  `owner` text NOT NULL,`status` integer NOT NULL,`header` blob NOT NULL,`body` blob NOT NULL,
  `lease_until` datetime NOT NULL,`created_at` datetime NOT NULL,`expires_at` datetime NOT NULL,
  PRIMARY KEY (`account_id`,`idem_key`));
CREATE INDEX `idx_idempotency_keys_expires` ON `idempotency_keys`(`expires_at`);

-- +goose Down
DROP TABLE `idempotency_keys`;
