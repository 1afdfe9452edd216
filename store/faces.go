package store

// Store is agentd's persistence. It is safe for concurrent use. Its
// methods hang on one face per resource, each sharing the same database:
// a consumer takes the faces it needs (st.Agents(), st.Conversations(),
// ...) and declares, in its own package, the few methods it calls.
type Store struct{ *core }

// Accounts are the accounts and their API keys (accounts.go, keys.go).
type Accounts struct{ *core }

// Agents are the agents' documents, lists, updates, states and secrets
// (agents.go, list.go, update.go, document.go, secrets.go, rotate.go).
type Agents struct{ *core }

// Conversations are the conversations, their messages and summaries, the
// exchanges a turn saves and imported history (conversations.go,
// history.go, import.go).
type Conversations struct{ *core }

// Analytics are the hourly rollups of turns, tokens and errors
// (analytics.go).
type Analytics struct{ *core }

// Memories are an agent's memories and their embeddings (memories.go,
// search.go).
type Memories struct{ *core }

// Knowledge is an agent's knowledge documents, their chunks and
// embeddings (knowledge.go, search.go).
type Knowledge struct{ *core }

// Connections are the platform connections: their state, cursors and
// counts, leases and replica heartbeats, the messages taken and not yet
// answered, and the users who wrote to a bot in private (connections.go,
// leases.go, inbox.go, contacts.go).
type Connections struct{ *core }

// Webhooks are the webhooks, the events a change emits and their
// deliveries (webhooks.go, events.go, deliveries.go).
type Webhooks struct{ *core }

// Idempotency keeps the answers of requests made with an Idempotency-Key
// (idempotency.go).
type Idempotency struct{ *core }

// Streams are the stored copies of streamed replies, streamlog's database
// backend (streams.go).
type Streams struct{ *core }

// Tasks are the A2A tasks (a2atasks.go).
type Tasks struct{ *core }

// Runs are the runs: every message to an agent, queued one at a time per
// conversation, and those waiting for decisions (runs.go, resume.go,
// approvals.go).
type Runs struct{ *core }

// Schedules are the agents' schedules, and the claims that fire their due
// times once (schedules.go).
type Schedules struct{ *core }

// Responses are the responses of the OpenAI Responses API, kept beside
// their runs (responses.go).
type Responses struct{ *core }

// Accounts is the store's accounts and API keys.
func (s *Store) Accounts() Accounts { return Accounts{s.core} }

// Agents is the store's agents.
func (s *Store) Agents() Agents { return Agents{s.core} }

// Conversations is the store's conversations and messages.
func (s *Store) Conversations() Conversations { return Conversations{s.core} }

// Analytics is the store's analytics rollups.
func (s *Store) Analytics() Analytics { return Analytics{s.core} }

// Memories is the store's memories.
func (s *Store) Memories() Memories { return Memories{s.core} }

// Knowledge is the store's knowledge.
func (s *Store) Knowledge() Knowledge { return Knowledge{s.core} }

// Connections is the store's platform connections.
func (s *Store) Connections() Connections { return Connections{s.core} }

// Webhooks is the store's webhooks and deliveries.
func (s *Store) Webhooks() Webhooks { return Webhooks{s.core} }

// Idempotency is the store's idempotency keys.
func (s *Store) Idempotency() Idempotency { return Idempotency{s.core} }

// Streams is the store's stream logs.
func (s *Store) Streams() Streams { return Streams{s.core} }

// Runs is the store's runs.
func (s *Store) Runs() Runs { return Runs{s.core} }

// Schedules is the store's schedules.
func (s *Store) Schedules() Schedules { return Schedules{s.core} }

// Responses is the store's responses.
func (s *Store) Responses() Responses { return Responses{s.core} }

// Tasks is the store's A2A tasks.
func (s *Store) Tasks() Tasks { return Tasks{s.core} }
