// Package store persists agentd in SQLite or PostgreSQL through GORM. It
// takes and returns the types of package domain (domain.Account,
// domain.Agent, domain.Message, domain.Lease, ...); its rows are unexported
// and never leave it. An agent's members
// are an agent.Document, checked by its Validate on every write;
// settings.secrets are sealed with secretbox when a key is configured.
//
// Its parts, each with its files:
//
//   - accounts and API keys: accounts.go, keys.go; authentication's cache
//     (authcache.go) and the keys' last use, written off the request path
//     (lastused.go);
//   - agents: agents.go (with AgentVersionsChangedSince and AgentsByID,
//     the changed agents the connection supervisor reads), update.go
//     (UpdateAgent), fields.go and canonical.go (members stored
//     canonically), list.go, storedtime.go and pagestarts.go (ListAgents,
//     read without GORM, deep pages at the cost of the first), document.go (Get Agent's document,
//     CharacterFile), secrets.go and rotate.go (sealed secrets,
//     RotateSecrets);
//   - conversations and their history: conversations.go (SaveExchange, one
//     transaction for both messages, analytics and events;
//     FindConversation), history.go (pages of conversations and messages,
//     summaries), import.go (ImportConversation);
//   - memories and knowledge: memories.go, knowledge.go, and search.go, the
//     full-text candidates and the embeddings package recall ranks;
//   - idempotency keys: idempotency.go (ClaimIdempotencyKey and the stored
//     answers);
//   - stream logs: streams.go, streamlog's database Backend;
//   - A2A tasks: a2atasks.go;
//   - platform connections: connections.go (state, cursor, counts),
//     leases.go (leases and replica heartbeats), inbox.go (the messages a
//     connection took and has not answered), gauges.go (the counts metrics
//     read);
//   - webhooks and their outbox: webhooks.go, events.go (the events a
//     change writes), deliveries.go (due deliveries claimed, attempts,
//     WakeWorkers);
//   - analytics: analytics.go, the hourly rollups, with sketch.go's
//     HyperLogLog sketches for distinct counts;
//   - errors: errors.go, the translation of GORM's and the drivers' errors
//     into domain's;
//   - the database: store.go (Open, the SQLite writer and readers),
//     pool.go, groupcommit.go, stmtcache.go, tracing.go, and models.go (the
//     row types);
//   - migrations: migrate.go (Migrate, MigrationStatus) over the SQL files
//     of migrations/, one folder per dialect.
//
// Every error it returns is a *domain.Error with a Code (see domain.Codes),
// wrapped with the operation that failed, or a context error, or an
// internal failure whose text only the log sees. No GORM or driver error
// ever leaves the package. Callers map codes, not messages.
//
// A change that reports a webhook event writes the event and its
// deliveries in its own transaction (the outbox), so a rolled-back change
// emits nothing and a committed one is never lost; WakeWorkers then tells
// this process's delivery workers.
//
// With SQLite the store keeps one writer connection (every write and every
// transaction goes through it, BEGIN IMMEDIATE) and a separate pool of
// read-only connections for plain reads; WAL lets the two proceed together.
// With PostgreSQL one pool serves both and row locks (SELECT ... FOR UPDATE)
// keep read-modify-write transactions consistent.
//
// The schema is versioned: Open applies the SQL migrations of migrations/
// (goose, one folder per dialect) before anything else, under an advisory
// lock on PostgreSQL; Migrate and MigrationStatus do so without a Store.
//
// A Store's methods hang on one face per resource (faces.go: Accounts,
// Agents, Conversations, Analytics, Memories, Knowledge, Connections,
// Webhooks, Idempotency, Streams, Tasks), small values sharing its
// database, so a consumer is handed only the resources it works on. A
// transaction that spans resources (an exchange: messages, analytics and
// the outbox) is still one transaction, inside the face that owns it.
//
// The package knows nothing about HTTP. The consumers (turn, connect,
// server, a2a, recall, webhook) declare the methods they need in domain's
// types and never import store, so only cmd/agentd, which hands each of
// them the faces it declared, compiles the ORM with them. Every
// timestamp it hands out is UTC with millisecond precision.
package store
