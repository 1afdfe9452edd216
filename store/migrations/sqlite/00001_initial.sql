-- The schema of the first release, as GORM's AutoMigrate created it then.
-- A database that release created has this schema without goose's version
-- table: store adopts it as version 1 (see adopt in store/migrate.go).

-- +goose Up
CREATE TABLE `accounts` (`id` text,`name` text NOT NULL,`tier` text NOT NULL,`rpm` integer NOT NULL,
  `endpoint_multiplier` integer NOT NULL,`agent_quota` integer NOT NULL,`created_at` datetime NOT NULL,
  PRIMARY KEY (`id`));
CREATE UNIQUE INDEX `idx_accounts_name` ON `accounts`(`name`);

CREATE TABLE `api_keys` (`id` text,`account_id` text NOT NULL,`prefix` text NOT NULL,`hash` text NOT NULL,
  `scope` text NOT NULL,`created_at` datetime NOT NULL,`expires_at` datetime,`revoked_at` datetime,
  `last_used_at` datetime,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_accounts_keys` FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON DELETE CASCADE);
CREATE UNIQUE INDEX `idx_api_keys_hash` ON `api_keys`(`hash`);
CREATE INDEX `idx_api_keys_prefix` ON `api_keys`(`prefix`);
CREATE INDEX `idx_api_keys_account` ON `api_keys`(`account_id`);

CREATE TABLE `agents` (`id` text,`account_id` text NOT NULL,`name` text NOT NULL,`model_provider` text NOT NULL,
  `model` text NOT NULL,`delete_protection` numeric NOT NULL,`status` text NOT NULL,`status_reason` text NOT NULL,
  `retry_at` datetime,`fields` text NOT NULL,`created_at` datetime NOT NULL,`updated_at` datetime NOT NULL,
  `total_messages` integer NOT NULL,`total_conversations` integer NOT NULL,`error_since` datetime,
  `error_millis` integer NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_accounts_agents` FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_agents_account_status` ON `agents`(`account_id`,`status`,`id`);
CREATE INDEX `idx_agents_account_name` ON `agents`(`account_id`,`name`,`id`);
CREATE INDEX `idx_agents_account_created` ON `agents`(`account_id`,`created_at`,`id`);

CREATE TABLE `conversations` (`id` text,`agent_id` text NOT NULL,`key` text NOT NULL,`created_at` datetime NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_agents_conversations` FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON DELETE CASCADE);
CREATE UNIQUE INDEX `idx_conversations_agent_key` ON `conversations`(`agent_id`,`key`);

CREATE TABLE `messages` (`id` text,`conversation_id` text NOT NULL,`role` text NOT NULL,`user_id` text NOT NULL,
  `text` text NOT NULL,`model` text NOT NULL,`prompt_tokens` integer NOT NULL,`completion_tokens` integer NOT NULL,
  `created_at` datetime NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_conversations_messages` FOREIGN KEY (`conversation_id`) REFERENCES `conversations`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_messages_conversation_created` ON `messages`(`conversation_id`,`created_at`,`id`);

