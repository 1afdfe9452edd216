// Package store persists agentd's accounts, API keys, agents,
// conversations and messages, memories and knowledge, the hourly
// analytics, webhooks with their outbox (events, deliveries, attempts),
// platform connections (leases, cursors, states, the inbox of claimed
// messages), idempotency keys, A2A tasks and the database's stream log, in
// SQLite or PostgreSQL through GORM. An agent's members are an agent.Document, checked by its Validate
// on every write; settings.secrets are sealed with secretbox when a key is
// configured.
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
// The package knows nothing about HTTP. It takes and returns the types of
// package domain (domain.Account, domain.Agent, domain.Message,
// domain.Lease, ...); its rows are unexported and never leave it. The
// consumers (turn, connect, server, a2a, recall, webhook) declare the
// methods they need in domain's types and never import store, so only
// cmd/agentd, which asserts that *Store implements each of them, compiles
// the ORM with them. Every timestamp it hands out is UTC with millisecond
// precision.
package store
