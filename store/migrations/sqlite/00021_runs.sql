-- Runs: every message to an agent, whichever way it came in, and the work
-- that answers it. The runs of a lane (a conversation, or a run without
-- one) run one at a time in the order they were accepted, which the index
-- on (lane, created_at, id) finds. Whoever holds a run that has not ended
-- (waiting its turn or running) renews its beat_at: a run whose beat is
-- long past lost its replica, and no longer blocks its conversation. They
-- cascade from their agent.
--
-- +goose Up
CREATE TABLE `runs` (`id` text,`account_id` text NOT NULL,`agent_id` text NOT NULL,
  `conversation_id` text NOT NULL DEFAULT "",`lane` text NOT NULL,`user_id` text NOT NULL DEFAULT "",
  `room_id` text NOT NULL DEFAULT "",`source` text NOT NULL,`status` text NOT NULL,`input_text` text NOT NULL,
  `message_id` text NOT NULL,`reply` text NOT NULL DEFAULT "",`error_code` text NOT NULL DEFAULT "",
  `error_message` text NOT NULL DEFAULT "",`parent_run_id` text NOT NULL DEFAULT "",
  `schedule_id` text NOT NULL DEFAULT "",`strategy` text NOT NULL,`attempts` integer NOT NULL DEFAULT 0,
  `created_at` datetime NOT NULL,`started_at` datetime,`finished_at` datetime,`beat_at` datetime NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_agents_runs` FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_runs_agent_created` ON `runs`(`agent_id`,`created_at`,`id`);
CREATE INDEX `idx_runs_account_created` ON `runs`(`account_id`,`created_at`,`id`);
CREATE INDEX `idx_runs_lane_created` ON `runs`(`lane`,`created_at`,`id`);

-- +goose Down
DROP TABLE `runs`;
