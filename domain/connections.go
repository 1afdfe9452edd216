package domain

import "time"

// ConnState is the state of an agent's connection to a platform.
type ConnState string

// The connection states.
const (
	ConnConnecting   ConnState = "connecting"
	ConnConnected    ConnState = "connected"
	ConnDisconnected ConnState = "disconnected"
	ConnError        ConnState = "error"
	ConnDisabled     ConnState = "disabled"
)

// Connection is the stored state of one agent's connection to one platform.
type Connection struct {
	AgentID     string
	Platform    string
	State       ConnState
	Reason      string
	BotID       string // the bot's own account id, "" until known
	BotUsername string
	Since       time.Time  // when State was entered
	LastEventAt *time.Time // the last message in or out
	MessagesIn  int64
	MessagesOut int64
}

// Lease is the right of one runner (Owner) to run an agent's connection to
// a platform until ExpiresAt. Epoch grows with each acquisition, so a runner
// that lost its lease cannot write with it even if it is acquired again.
type Lease struct {
	AgentID   string
	Platform  string
	Owner     string
	Epoch     int64
	ExpiresAt time.Time
	Cursor    string // the platform's stored cursor ("" before the first)
}

// AgentVersion is an agent's id, version and clients: what the connection
// supervisor compares with what it applied, and checks for a platform it
// runs, before it reads an agent whole.
type AgentVersion struct {
	ID      string
	Version int64
	// Clients is the agent's "clients" member as stored (a JSON array),
	// "" when unset.
	Clients string
	// UpdatedAt is when the agent's configuration last changed; with ID,
	// where the next page of AgentVersionsChangedSince starts.
	UpdatedAt time.Time
}

// IdleConnection is the state of a connection no runner holds: one that
// cannot start (its credentials are missing).
type IdleConnection struct {
	AgentID, Platform string
	State             ConnState
	Reason            string
}

// ConnKey names one agent's connection to one platform.
type ConnKey struct {
	AgentID  string
	Platform string
}

// HeldLease is a lease as a batch renewal found it: still its owner's.
type HeldLease struct {
	ConnKey
	Epoch int64
}

// InboxMessage is a platform message a connection has taken in and not yet
// finished: it stays in the inbox until it is answered (or found not to
// need an answer), so a stop, a crash or a lease move never loses it.
type InboxMessage struct {
	ID         string // the platform's id, unique per agent and platform
	Chat       string // its chat: one chat's messages are answered in order
	Payload    []byte // what the platform needs to answer it
	ReceivedAt time.Time
}

// ConnectionCount is how many platform connections of every account are in
// one state on one platform.
type ConnectionCount struct {
	Platform string
	State    ConnState
	N        int64
}
