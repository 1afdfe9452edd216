// Package recall finds what an agent should remember for a message: its
// long-term memories and the chunks of its knowledge documents most
// relevant to it. Both are ranked the same way: by the cosine of
// embeddings where the agent's provider has an embeddings API, otherwise,
// or when embedding fails, by BM25 over the candidates the database's
// full-text index finds (SQLite FTS4, PostgreSQL tsvector). The search
// terms are made here (Terms), so both databases index and match the same
// tokens and give the same answers.
//
// recall knows nothing of HTTP or of the turn: it depends on the Memories,
// Knowledge and Embedder interfaces it declares, which the store's faces
// and *llm.Client implement.
package recall
