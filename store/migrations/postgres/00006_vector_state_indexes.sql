-- A recall checks that the vectors it keeps in memory are still current
-- by counting an agent's memories and chunks per embedding model: these
-- indexes answer it without reading the rows, whose embeddings are large.
--
-- +goose Up
CREATE INDEX idx_memories_agent_model ON memories (agent_id, embedding_model, id);
CREATE INDEX idx_knowledge_chunks_agent_model ON knowledge_chunks (agent_id, embedding_model, id);

-- +goose Down
DROP INDEX idx_knowledge_chunks_agent_model;
DROP INDEX idx_memories_agent_model;
