-- Platform messages are kept in an inbox from when a connection takes
-- them until they are answered, so a stop, a crash or a lease move loses
-- none; answered ones are pruned by age. Replicas record themselves so
-- that each takes its share of the connections, and each renews all its
-- leases in one statement (by owner).
--
-- +goose Up
CREATE TABLE `platform_inbox` (`agent_id` text,`platform` text,`message_id` text,`chat` text NOT NULL,
  `payload` blob NOT NULL,`received_at` datetime NOT NULL,
  PRIMARY KEY (`agent_id`,`platform`,`message_id`));
CREATE TABLE `replicas` (`owner` text,`expires_at` datetime NOT NULL,PRIMARY KEY (`owner`));
CREATE INDEX `idx_platform_messages_created` ON `platform_messages`(`created_at`);
CREATE INDEX `idx_connections_lease_owner` ON `connections`(`lease_owner`);

-- +goose Down
DROP INDEX `idx_connections_lease_owner`;
DROP INDEX `idx_platform_messages_created`;
DROP TABLE `replicas`;
DROP TABLE `platform_inbox`;
