-- Memories and knowledge: what an agent keeps about its users (or for
-- everyone) and the documents it was given, cut into chunks; both cascade
-- from their agent. Conversations gain a summary of their oldest messages,
-- and the hourly rollups count memories saved.
--
-- Memories and chunks are searched by their `terms` (normalised tokens,
-- see store/search.go) through an FTS4 table each (the driver is built with
-- FTS3/4, not FTS5): a row's docid there is its rowid here, kept by the
-- triggers, which fire for the rows a foreign key cascades too. Terms never
-- change, so there is no update trigger. VACUUM may renumber the rowids of
-- these tables (their key is text); agentd never runs it, and after one the
-- FTS tables must be refilled: DELETE FROM fts_memories; INSERT INTO
-- fts_memories (docid, terms) SELECT rowid, terms FROM memories; (and so for
-- knowledge_chunks).
--
-- +goose Up
ALTER TABLE `conversations` ADD COLUMN `summary` text NOT NULL DEFAULT "";
ALTER TABLE `conversations` ADD COLUMN `summarized` integer NOT NULL DEFAULT 0;
ALTER TABLE `agent_hour_stats` ADD COLUMN `memories_saved` integer NOT NULL DEFAULT 0;

CREATE TABLE `memories` (`id` text,`agent_id` text NOT NULL,`user_id` text NOT NULL,`text` text NOT NULL,
  `source` text NOT NULL,`conversation_id` text NOT NULL,`terms` text NOT NULL,`embedding` blob NOT NULL,
  `embedding_model` text NOT NULL,`created_at` datetime NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_agents_memories` FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_memories_agent_created` ON `memories`(`agent_id`,`created_at`,`id`);
CREATE INDEX `idx_memories_agent_user_created` ON `memories`(`agent_id`,`user_id`,`created_at`,`id`);

CREATE TABLE `knowledge_documents` (`id` text,`agent_id` text NOT NULL,`name` text NOT NULL,
  `chunk_count` integer NOT NULL,`bytes` integer NOT NULL,`created_at` datetime NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_agents_knowledge_documents` FOREIGN KEY (`agent_id`) REFERENCES `agents`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_knowledge_documents_agent_created` ON `knowledge_documents`(`agent_id`,`created_at`,`id`);

CREATE TABLE `knowledge_chunks` (`id` text,`document_id` text NOT NULL,`agent_id` text NOT NULL,`seq` integer NOT NULL,
  `text` text NOT NULL,`terms` text NOT NULL,`embedding` blob NOT NULL,`embedding_model` text NOT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `fk_knowledge_documents_chunks` FOREIGN KEY (`document_id`) REFERENCES `knowledge_documents`(`id`) ON DELETE CASCADE);
CREATE INDEX `idx_knowledge_chunks_document_seq` ON `knowledge_chunks`(`document_id`,`seq`);
CREATE INDEX `idx_knowledge_chunks_agent` ON `knowledge_chunks`(`agent_id`);

CREATE VIRTUAL TABLE `fts_memories` USING fts4(terms);
-- +goose StatementBegin
CREATE TRIGGER `fts_memories_insert` AFTER INSERT ON `memories` BEGIN
  INSERT INTO `fts_memories` (docid, terms) VALUES (new.rowid, new.terms);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER `fts_memories_delete` AFTER DELETE ON `memories` BEGIN
  DELETE FROM `fts_memories` WHERE docid = old.rowid;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE `fts_knowledge_chunks` USING fts4(terms);
-- +goose StatementBegin
CREATE TRIGGER `fts_knowledge_chunks_insert` AFTER INSERT ON `knowledge_chunks` BEGIN
  INSERT INTO `fts_knowledge_chunks` (docid, terms) VALUES (new.rowid, new.terms);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER `fts_knowledge_chunks_delete` AFTER DELETE ON `knowledge_chunks` BEGIN
  DELETE FROM `fts_knowledge_chunks` WHERE docid = old.rowid;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE `fts_knowledge_chunks`;
DROP TABLE `fts_memories`;
DROP TABLE `knowledge_chunks`;
DROP TABLE `knowledge_documents`;
DROP TABLE `memories`;
ALTER TABLE `agent_hour_stats` DROP COLUMN `memories_saved`;
ALTER TABLE `conversations` DROP COLUMN `summarized`;
ALTER TABLE `conversations` DROP COLUMN `summary`;
