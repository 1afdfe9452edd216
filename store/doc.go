// Package store persists agentd's accounts, API keys, agents, conversations
// messages, webhooks with their outbox and deliveries, platform connections
// and analytics, in SQLite or PostgreSQL through GORM.
//
// It owns its error vocabulary: every error it returns is an *Error with a
// Code (see Codes), wrapped with the operation that failed, or a context
// error, or an internal failure whose text only the log sees. No GORM or
// driver error ever leaves the package.
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
// The package knows nothing about HTTP: it takes and returns its own domain
// types (Account, APIKey, Agent, Message, ...), and every timestamp it hands
// out is UTC with millisecond precision.
package store
