-- Budgets. A run's spend so far, so a budget check counts the runs still
-- running: own_cost_micros is what its own provider calls cost (its
-- stored steps while it runs, its reply's whole cost once stored; the
-- per-user daily budget sums it over the user's runs of the day, from
-- idx_runs_agent_user_created alone),
-- step_cost_micros what of it the hourly rollups do not hold yet (zeroed
-- when the reply's cost goes to them, in the same transaction), summed
-- over the few runs not finished through idx_runs_status.
-- budget_alerts holds each alert sent, one row per budget, window and
-- percent: its key lets only one transaction send it, whatever the
-- number of replicas.
--
-- +goose Up
ALTER TABLE `runs` ADD COLUMN `own_cost_micros` integer NOT NULL DEFAULT 0;
ALTER TABLE `runs` ADD COLUMN `step_cost_micros` integer NOT NULL DEFAULT 0;
CREATE INDEX `idx_runs_agent_user_created` ON `runs`(`agent_id`,`user_id`,`created_at`,`own_cost_micros`);
CREATE INDEX `idx_runs_status` ON `runs`(`status`);
CREATE TABLE `budget_alerts` (
    `account_id` text NOT NULL,
    `agent_id` text NOT NULL,
    `user_id` text NOT NULL,
    `scope` text NOT NULL,
    `period` text NOT NULL,
    `window_start` datetime NOT NULL,
    `percent` integer NOT NULL,
    `created_at` datetime NOT NULL,
    PRIMARY KEY (`account_id`,`agent_id`,`user_id`,`scope`,`period`,`window_start`,`percent`)
);

-- +goose Down
DROP TABLE `budget_alerts`;
DROP INDEX `idx_runs_status`;
DROP INDEX `idx_runs_agent_user_created`;
ALTER TABLE `runs` DROP COLUMN `step_cost_micros`;
ALTER TABLE `runs` DROP COLUMN `own_cost_micros`;
