-- Accounts count their webhooks, kept by the transactions that create and
-- delete them, so Create Agent does not look for webhooks to notify on an
-- account that has none. Existing accounts are counted here.
--
-- +goose Up
ALTER TABLE accounts ADD COLUMN webhook_count bigint DEFAULT 0 NOT NULL;
UPDATE accounts SET webhook_count = (SELECT COUNT(*) FROM webhooks WHERE webhooks.account_id = accounts.id);

-- +goose Down
ALTER TABLE accounts DROP COLUMN webhook_count;
