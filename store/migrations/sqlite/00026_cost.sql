-- What replies cost, in millionths of a US dollar (integers, so a day's or
-- a month's spend sums exactly): each reply keeps its own; the hourly
-- rollups sum input and output tokens and cost, so analytics and budgets
-- read a few rows, not the messages; a run keeps its own tokens and its
-- cost with that of the runs it asked.
--
-- +goose Up
ALTER TABLE `messages` ADD COLUMN `cost_micros` integer NOT NULL DEFAULT 0;
ALTER TABLE `agent_hour_stats` ADD COLUMN `input_tokens` integer NOT NULL DEFAULT 0;
ALTER TABLE `agent_hour_stats` ADD COLUMN `output_tokens` integer NOT NULL DEFAULT 0;
ALTER TABLE `agent_hour_stats` ADD COLUMN `cost_micros` integer NOT NULL DEFAULT 0;
ALTER TABLE `runs` ADD COLUMN `input_tokens` integer NOT NULL DEFAULT 0;
ALTER TABLE `runs` ADD COLUMN `output_tokens` integer NOT NULL DEFAULT 0;
ALTER TABLE `runs` ADD COLUMN `cost_micros` integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE `runs` DROP COLUMN `cost_micros`;
ALTER TABLE `runs` DROP COLUMN `output_tokens`;
ALTER TABLE `runs` DROP COLUMN `input_tokens`;
ALTER TABLE `agent_hour_stats` DROP COLUMN `cost_micros`;
ALTER TABLE `agent_hour_stats` DROP COLUMN `output_tokens`;
ALTER TABLE `agent_hour_stats` DROP COLUMN `input_tokens`;
ALTER TABLE `messages` DROP COLUMN `cost_micros`;
