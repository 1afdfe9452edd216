-- Everything since the first release: derived columns of accounts, agents
-- and conversations (filled for the rows that predate them), token and
-- timing columns of messages, who spoke in each conversation, hourly
-- analytics, platform connections and webhooks.
--
-- SQLite cannot add a column whose default is CURRENT_TIMESTAMP to a table
-- with rows, so conversations is rebuilt (SQLite's documented procedure:
-- create, copy, drop, rename). Dropping it with foreign keys on would
-- cascade to messages, and foreign_keys cannot change inside a
-- transaction: this migration therefore turns them off and runs its own
-- transaction.

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

ALTER TABLE `accounts` ADD COLUMN `agent_count` integer NOT NULL DEFAULT 0;
UPDATE `accounts` SET `agent_count` = (SELECT COUNT(*) FROM `agents` WHERE `agents`.`account_id` = `accounts`.`id`);

-- clients is the "clients" member of fields as stored ('' when unset or null).
ALTER TABLE `agents` ADD COLUMN `clients` text NOT NULL DEFAULT "";
UPDATE `agents` SET `clients` = CASE WHEN COALESCE(json_type(`fields`, '$.clients'), 'null') = 'null'
    THEN '' ELSE `fields` -> '$.clients' END;
CREATE INDEX `idx_agents_updated` ON `agents`(`updated_at`);

CREATE TABLE `conversations_new` (`id` text,`agent_id` text NOT NULL,`key` text NOT NULL,`kind` text NOT NULL DEFAULT "",
  `room_id` text NOT NULL DEFAULT "",`user_id` text NOT NULL DEFAULT "",`platform` text NOT NULL DEFAULT "api",
  `message_count` integer NOT NULL DEFAULT 0,`created_at` datetime NOT NULL,
  `last_message_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_agents_conversations` FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON DELETE CASCADE);
INSERT INTO `conversations_new` (`id`, `agent_id`, `key`, `kind`, `room_id`, `user_id`, `message_count`, `created_at`, `last_message_at`)
    SELECT c.`id`, c.`agent_id`, c.`key`,
        CASE WHEN c.`key` LIKE 'room:%' THEN 'room' ELSE 'direct' END,
        CASE WHEN c.`key` LIKE 'room:%' THEN substr(c.`key`, 6) ELSE '' END,
        CASE WHEN c.`key` LIKE 'user:%' THEN substr(c.`key`, 6) ELSE '' END,
        (SELECT COUNT(*) FROM `messages` m WHERE m.`conversation_id` = c.`id`),
        c.`created_at`,
        COALESCE((SELECT MAX(m.`created_at`) FROM `messages` m WHERE m.`conversation_id` = c.`id`), c.`created_at`)
    FROM `conversations` c;
DROP TABLE `conversations`;
ALTER TABLE `conversations_new` RENAME TO `conversations`;
CREATE UNIQUE INDEX `idx_conversations_agent_key` ON `conversations`(`agent_id`,`key`);
CREATE INDEX `idx_conversations_agent_platform` ON `conversations`(`agent_id`,`platform`,`last_message_at`,`id`);
CREATE INDEX `idx_conversations_agent_active` ON `conversations`(`agent_id`,`last_message_at`,`id`);

ALTER TABLE `messages` ADD COLUMN `tokens_used` integer NOT NULL DEFAULT 0;
ALTER TABLE `messages` ADD COLUMN `response_millis` real NOT NULL DEFAULT 0;
ALTER TABLE `messages` ADD COLUMN `partial` numeric NOT NULL DEFAULT false;

CREATE TABLE `conversation_users` (`conversation_id` text,`user_id` text,`agent_id` text NOT NULL,
  PRIMARY KEY (`conversation_id`,`user_id`),
  CONSTRAINT `fk_conversations_speakers` FOREIGN KEY (`conversation_id`) REFERENCES `conversations`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_conversation_users_agent_user` ON `conversation_users`(`agent_id`,`user_id`);
INSERT INTO `conversation_users` (`conversation_id`, `user_id`, `agent_id`)
    SELECT DISTINCT m.`conversation_id`, m.`user_id`, c.`agent_id` FROM `messages` m
    JOIN `conversations` c ON c.`id` = m.`conversation_id`
    WHERE m.`role` = 'user' AND m.`user_id` <> '';

CREATE TABLE `agent_hour_stats` (`agent_id` text,`hour` datetime,`messages` integer NOT NULL,`tokens_used` integer NOT NULL,
  `replies` integer NOT NULL,`response_millis` real NOT NULL,`errors` integer NOT NULL,
  PRIMARY KEY (`agent_id`,`hour`));
CREATE TABLE `agent_hour_latency` (`agent_id` text,`hour` datetime,`bucket` integer,`count` integer NOT NULL,
  PRIMARY KEY (`agent_id`,`hour`,`bucket`));
CREATE TABLE `agent_hour_sketches` (`agent_id` text,`hour` datetime,`users` blob NOT NULL,`conversations` blob NOT NULL,
  PRIMARY KEY (`agent_id`,`hour`));
CREATE TABLE `agent_hour_errors` (`agent_id` text,`hour` datetime,`kind` text,`count` integer NOT NULL,
  PRIMARY KEY (`agent_id`,`hour`,`kind`));

CREATE TABLE `connections` (`agent_id` text,`platform` text,`bot_id` text NOT NULL DEFAULT "",`bot_username` text,
  `state` text NOT NULL,`reason` text NOT NULL DEFAULT "",`since` datetime NOT NULL,`last_event_at` datetime,
  `messages_in` integer NOT NULL DEFAULT 0,`messages_out` integer NOT NULL DEFAULT 0,`cursor` text NOT NULL DEFAULT "",
  `lease_owner` text NOT NULL DEFAULT "",`lease_epoch` integer NOT NULL DEFAULT 0,`lease_expires_at` datetime,
  PRIMARY KEY (`agent_id`,`platform`));
CREATE INDEX `idx_connections_platform_bot` ON `connections`(`platform`,`bot_id`);
CREATE TABLE `platform_messages` (`agent_id` text,`platform` text,`message_id` text,`created_at` datetime NOT NULL,
  PRIMARY KEY (`agent_id`,`platform`,`message_id`));

CREATE TABLE `webhooks` (`id` text,`account_id` text NOT NULL,`url` text NOT NULL,`events` text NOT NULL,
  `description` text NOT NULL DEFAULT "",`agent_id` text NOT NULL DEFAULT "",`enabled` numeric NOT NULL,
  `disabled_reason` text NOT NULL DEFAULT "",`secret` text NOT NULL,`prev_secret` text NOT NULL DEFAULT "",
  `prev_secret_until` datetime,`created_at` datetime NOT NULL,`updated_at` datetime NOT NULL,
  PRIMARY KEY (`id`));
CREATE INDEX `idx_webhooks_account_created` ON `webhooks`(`account_id`,`created_at`,`id`);
CREATE TABLE `webhook_events` (`id` text,`account_id` text NOT NULL,`agent_id` text NOT NULL DEFAULT "",`type` text NOT NULL,
  `body` text NOT NULL,`created_at` datetime NOT NULL,
  PRIMARY KEY (`id`));
CREATE TABLE `webhook_deliveries` (`id` text,`webhook_id` text NOT NULL,`event_id` text NOT NULL,`type` text NOT NULL,
  `status` text NOT NULL,`attempts` integer NOT NULL DEFAULT 0,`last_status_code` integer NOT NULL DEFAULT 0,
  `last_error` text NOT NULL DEFAULT "",`next_attempt_at` datetime,`claim` text NOT NULL DEFAULT "",
  `final` numeric NOT NULL DEFAULT false,`created_at` datetime NOT NULL,`last_attempt_at` datetime,
  PRIMARY KEY (`id`));
CREATE INDEX `idx_webhook_deliveries_due` ON `webhook_deliveries`(`status`,`next_attempt_at`);
CREATE INDEX `idx_webhook_deliveries_webhook` ON `webhook_deliveries`(`webhook_id`,`created_at`,`id`);
CREATE TABLE `webhook_attempts` (`id` integer PRIMARY KEY AUTOINCREMENT,`delivery_id` text NOT NULL,`at` datetime NOT NULL,
  `status_code` integer NOT NULL,`error` text NOT NULL,`millis` integer NOT NULL);
CREATE INDEX `idx_webhook_attempts_delivery` ON `webhook_attempts`(`delivery_id`);

COMMIT;
PRAGMA foreign_keys = ON;
