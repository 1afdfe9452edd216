// Package streamlog keeps the events of streamed replies where every
// replica can read them, so a client that lost a stream resumes it from the
// last event it got, on any replica, and so a reply running on one replica
// can be stopped from another.
//
// A Hub holds the streams its replica runs in memory: the client that
// started a stream, and any that resumes it on the same replica, follow it
// from there. The Hub writes new events to a Backend in batches (one write
// for all its streams every FlushInterval), where the other replicas read
// them; the Backend is Redis when it is configured and the database
// otherwise.
package streamlog

import (
	"context"
	"errors"
	"time"
)

// Retention is how long a stream's events are kept after its last event;
// resuming is promised for at least 5 minutes.
const Retention = 10 * time.Minute

// StaleAfter is how long a stream that never ended is kept: longer than
// any reply runs.
const StaleAfter = time.Hour

// ErrNotFound is returned for a stream that is not kept (never started,
// expired, or another account's or agent's).
var ErrNotFound = errors.New("streamlog: stream not found")

// Key names a stream: the reply's message id, and whose it is.
type Key struct {
	AccountID, AgentID, MessageID string
}

// Event is one event of a stream: its SSE id (1 for the first) and its
// JSON.
type Event struct {
	ID   int
	Data []byte
}

// State is what is known of a stream's end.
type State struct {
	// Done is set once the last event is written.
	Done bool
	// Partial is set when the reply was cut (cancelled, or a provider
	// failure after it started) and what was said is stored as partial.
	Partial bool
	// Lost is set when the stream was ended by a follower because its
	// owner died (with Done and Partial): its last event is the lost
	// event, whose id a client may hold already for an event the owner
	// streamed from memory and never wrote.
	Lost bool
}

// Batch is what a Hub writes of one stream in a flush.
type Batch struct {
	Key
	// Owner is the replica running the stream; cancels are sent to it.
	Owner string
	// Events are the new events, in order, following those written before.
	Events []Event
	// End, when Done is set, marks the stream ended.
	End State
}

// Backend keeps streams for every replica.
type Backend interface {
	// AppendStreams writes the batches in one go: a stream's first batch
	// creates it, a batch whose End.Done is set ends it.
	AppendStreams(ctx context.Context, batches []Batch) error
	// ReadStream returns the stream's events after the one with id after,
	// in order, and its State; ErrNotFound when it is not kept.
	ReadStream(ctx context.Context, k Key, after int) ([]Event, State, error)
	// RequestStreamCancel asks the stream's owner to stop it and returns
	// its State; a stream that is done is left as it is. ErrNotFound when
	// it is not kept.
	RequestStreamCancel(ctx context.Context, k Key) (State, error)
	// TakeStreamCancels returns the message ids of owner's streams whose
	// cancel was requested since the last call.
	TakeStreamCancels(ctx context.Context, owner string) ([]string, error)
	// KeepStreams records that owner still runs the streams ids (message
	// ids): their heartbeat, which a stream's first batch starts.
	KeepStreams(ctx context.Context, owner string, ids []string) error
	// EndLostStream ends the stream k, when it is not done and its owner's
	// last heartbeat is more than silent ago (the owner died), with one
	// last event data after those written, and marks it done, partial and
	// lost; it reports whether it did. A stream ends this way once,
	// however many replicas ask together. A stream without a heartbeat
	// (written before heartbeats were) is never taken for lost.
	// ErrNotFound when it is not kept.
	EndLostStream(ctx context.Context, k Key, silent time.Duration, data []byte) (bool, error)
	// PruneStreams forgets, a bounded batch at a time, the streams that
	// ended Retention before now and those started StaleAfter before now
	// that never ended (their replica died).
	PruneStreams(ctx context.Context, now time.Time) error
}
