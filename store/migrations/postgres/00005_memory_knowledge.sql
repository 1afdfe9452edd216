-- Memories and knowledge: what an agent keeps about its users (or for
-- everyone) and the documents it was given, cut into chunks; both cascade
-- from their agent. Conversations gain a summary of their oldest messages,
-- and the hourly rollups count memories saved.
--
-- Memories and chunks are searched by their `terms` (normalised tokens,
-- see store/search.go) through a GIN index on to_tsvector('simple', terms):
-- queries must use that very expression for the index to serve them.
--
-- +goose Up
ALTER TABLE conversations
    ADD COLUMN summary text DEFAULT ''::text NOT NULL,
    ADD COLUMN summarized bigint DEFAULT 0 NOT NULL;
ALTER TABLE agent_hour_stats ADD COLUMN memories_saved bigint DEFAULT 0 NOT NULL;

CREATE TABLE memories (
    id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    text text NOT NULL,
    source text NOT NULL,
    conversation_id text NOT NULL,
    terms text NOT NULL,
    embedding bytea NOT NULL,
    embedding_model text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT memories_pkey PRIMARY KEY (id),
    CONSTRAINT fk_agents_memories FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
);
CREATE INDEX idx_memories_agent_created ON memories (agent_id, created_at, id);
CREATE INDEX idx_memories_agent_user_created ON memories (agent_id, user_id, created_at, id);
CREATE INDEX fts_memories ON memories USING gin (to_tsvector('simple', terms));

CREATE TABLE knowledge_documents (
    id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    name text NOT NULL,
    chunk_count bigint NOT NULL,
    bytes bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT knowledge_documents_pkey PRIMARY KEY (id),
    CONSTRAINT fk_agents_knowledge_documents FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
);
CREATE INDEX idx_knowledge_documents_agent_created ON knowledge_documents (agent_id, created_at, id);

CREATE TABLE knowledge_chunks (
    id text COLLATE "C" NOT NULL,
    document_id text COLLATE "C" NOT NULL,
    agent_id text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    text text NOT NULL,
    terms text NOT NULL,
    embedding bytea NOT NULL,
    embedding_model text NOT NULL,
    CONSTRAINT knowledge_chunks_pkey PRIMARY KEY (id),
    CONSTRAINT fk_knowledge_documents_chunks FOREIGN KEY (document_id) REFERENCES knowledge_documents (id) ON DELETE CASCADE
);
CREATE INDEX idx_knowledge_chunks_document_seq ON knowledge_chunks (document_id, seq);
CREATE INDEX idx_knowledge_chunks_agent ON knowledge_chunks (agent_id);
CREATE INDEX fts_knowledge_chunks ON knowledge_chunks USING gin (to_tsvector('simple', terms));

-- +goose Down
DROP TABLE knowledge_chunks;
DROP TABLE knowledge_documents;
DROP TABLE memories;
ALTER TABLE agent_hour_stats DROP COLUMN memories_saved;
ALTER TABLE conversations DROP COLUMN summarized, DROP COLUMN summary;
