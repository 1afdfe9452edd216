// Package domain is agentd's shared vocabulary: the entity and value types
// that the store keeps and that turn, connect and its platforms, server,
// a2a, recall, tools and webhook exchange (agents and their statuses,
// conversations, messages and tool calls, memories and knowledge, secrets,
// platform leases and connection states, accounts and principals,
// webhooks, events and deliveries), and the one coded Error with its Codes.
//
// It imports the standard library and, for Agent.Fields, agent's Document
// (agent imports only netguard), so a package that speaks of an agent or a
// message need not compile the store's ORM and drivers: the
// store implements persistence over these types, and each consumer
// declares the small interface it needs in their terms. A new entity or
// value type that more than one package exchanges is born here; a type
// only the store needs (a query's row, a migration) stays in store.
package domain
