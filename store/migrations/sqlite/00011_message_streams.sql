-- Streamed replies, kept so that a client resumes a lost stream on any
-- replica: each stream (its reply's message id, whose it is, the replica
-- running it, a cancel another replica asked for, how it ended) and its
-- events by SSE id. A replica writes its streams' new events in batches;
-- streams are deleted in bounded batches 10 minutes after they ended (an
-- hour after they started when they never did), through the indexes on
-- ended_at and created_at.
--
-- +goose Up
CREATE TABLE `message_streams` (`message_id` text,`account_id` text NOT NULL,`agent_id` text NOT NULL,
  `owner` text NOT NULL,`cancel_requested` numeric NOT NULL,`done` numeric NOT NULL,`partial` numeric NOT NULL,
  `created_at` datetime NOT NULL,`ended_at` datetime,
  PRIMARY KEY (`message_id`));
CREATE INDEX `idx_message_streams_owner_cancel` ON `message_streams`(`owner`,`cancel_requested`);
CREATE INDEX `idx_message_streams_created` ON `message_streams`(`created_at`);
CREATE INDEX `idx_message_streams_ended` ON `message_streams`(`ended_at`);
CREATE TABLE `message_stream_events` (`message_id` text,`seq` integer,`data` blob NOT NULL,
  PRIMARY KEY (`message_id`,`seq`));

-- +goose Down
DROP TABLE `message_stream_events`;
DROP TABLE `message_streams`;
