package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
)

// Inbound is a platform message a connection takes to answer.
type Inbound struct {
	// ID is the platform's id of the message, unique per agent and
	// platform: a message taken twice (a redelivery, a second session in a
	// handover) is answered once.
	ID string
	// Chat is where it was said: one chat's messages are answered one at a
	// time, in order.
	Chat string
	// Payload is what the Platform needs to answer it, kept as it gave it:
	// after a restart or a lease move it is all the handler has.
	Payload json.RawMessage
}

// Handler answers one taken message, with Conn.Answer or Conn.AnswerText,
// which finish it just before the reply is sent. A message is finished
// then, or when its handler returns with the lease's work still running
// (left unanswered on purpose); when the work ended first (the lease was
// lost, or a stopping runner ran out of time) it stays in the inbox and
// the lease's next holder answers it.
type Handler func(ctx context.Context, m Inbound)

// inbox tracks the connection's messages between the stored inbox and the
// dispatcher.
type inbox struct {
	mu       sync.Mutex
	queued   map[string]bool // ids in the dispatcher now
	answered map[string]bool // ids of those among them already finished
	handler  Handler         // the last given, for messages queued later
	// behind is set when a stored message could not be queued (the
	// dispatcher was full): until the inbox is read again, nothing newer is
	// queued, so each chat keeps its order.
	behind    bool
	rereading bool
}

// Take stores msgs in the connection's inbox, with cursor (unless "") as
// the platform's cursor, in one write under the lease, and queues the new
// ones for h. Messages taken before, or answered within
// store.AnsweredFor, are skipped. Once Take returns nil the messages
// survive a crash: a pull platform may then move past them.
func (c *Conn) Take(ctx context.Context, cursor string, msgs []Inbound, h Handler) error {
	rows := make([]domain.InboxMessage, len(msgs))
	now := time.Now()
	for i, m := range msgs {
		// A microsecond apart, so the inbox keeps the order they came in
		// on both databases.
		rows[i] = domain.InboxMessage{ID: m.ID, Chat: m.Chat, Payload: m.Payload, ReceivedAt: now.Add(time.Duration(i) * time.Microsecond)}
	}
	fresh, err := c.stores.Connections.TakePlatformMessages(ctx, c.lease, cursor, rows)
	if err != nil {
		return c.leaseErr(fmt.Errorf("connect: take messages: %w", err))
	}
	if cursor != "" {
		c.mu.Lock()
		c.cursor = cursor
		c.mu.Unlock()
	}
	c.queue(h, fresh, false)
	return nil
}

// Resume queues for h the messages of the inbox not being answered now:
// those a stopped or failed runner left, and those that found the
// dispatcher full. A Platform calls it once connected.
func (c *Conn) Resume(ctx context.Context, h Handler) error {
	pending, err := c.stores.Connections.PendingPlatformMessages(ctx, c.lease)
	if err != nil {
		return c.leaseErr(fmt.Errorf("connect: read inbox: %w", err))
	}
	c.queue(h, pending, true)
	return nil
}

// Room waits until the connection can take more messages, and reports
// false when ctx ends first: a pull platform calls it before each fetch,
// so a busy connection leaves messages with the platform instead of
// dropping them.
func (c *Conn) Room(ctx context.Context) bool { return c.jobs.waitRoom(ctx) }

// queue hands msgs to the dispatcher in order, up to its room. A message
// it cannot queue stays in the inbox for the next reading (reread: this is
// one).
func (c *Conn) queue(h Handler, msgs []domain.InboxMessage, reread bool) {
	in := &c.inbox
	in.mu.Lock()
	defer in.mu.Unlock()
	in.handler = h
	if in.behind && !reread {
		return
	}
	in.behind = false
	for _, m := range msgs {
		if in.queued[m.ID] {
			continue
		}
		msg := Inbound{ID: m.ID, Chat: m.Chat, Payload: m.Payload}
		if !c.jobs.submit(m.Chat, c.job(h, msg)) {
			in.behind = true
			c.Logger.Info("connection busy: messages wait in the inbox")
			return
		}
		in.queued[m.ID] = true
	}
}

// sendTimeout bounds the sending of one reply once it is answering.
const sendTimeout = 2 * time.Minute

// answering finishes m just before its reply is sent, under the lease,
// and reports whether the reply may be sent: false when the lease is lost
// (its next holder answers m) or m was answered already. A crash after it
// loses that one reply rather than sending it twice. When it may be sent,
// the reply is sent with the context returned, and done called after:
// ctx's values without its end, within sendTimeout, since once m is
// finished no other runner will answer it, so a lease lost meanwhile must
// not cut the reply short.
func (c *Conn) answering(ctx context.Context, m Inbound) (send context.Context, done func(), ok bool) {
	if !c.finish(ctx, m) {
		return nil, nil, false
	}
	send, done = context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
	return send, done, true
}

// finish takes m out of the inbox, remembered as answered, under the
// lease, and reports whether it is this answer's to give: false when the
// lease is lost (its next holder answers m) or m was answered already.
func (c *Conn) finish(ctx context.Context, m Inbound) bool {
	first, err := c.stores.Connections.FinishPlatformMessage(ctx, c.lease, m.ID)
	if err != nil {
		c.Logger.WarnContext(ctx, "platform reply not sent", "error", c.leaseErr(fmt.Errorf("connect: finish message: %w", err)))
		return false
	}
	c.inbox.mu.Lock()
	c.inbox.answered[m.ID] = true
	c.inbox.mu.Unlock()
	return first
}

// job answers m with h and finishes it, unless the handler did or the
// lease's work ended.
func (c *Conn) job(h Handler, m Inbound) func(context.Context) {
	return func(ctx context.Context) {
		h(ctx, m)
		c.inbox.mu.Lock()
		answered := c.inbox.answered[m.ID]
		c.inbox.mu.Unlock()
		if ctx.Err() == nil && !answered {
			if _, err := c.stores.Connections.FinishPlatformMessage(ctx, c.lease, m.ID); err != nil {
				c.Logger.WarnContext(ctx, "finish platform message", "error", c.leaseErr(err))
			}
		}
		// Forgotten only once finished, so a reading of the inbox
		// meanwhile does not queue it again.
		c.inbox.mu.Lock()
		delete(c.inbox.queued, m.ID)
		delete(c.inbox.answered, m.ID)
		c.inbox.mu.Unlock()
	}
}

// freed runs after a job has left the dispatcher: when messages wait in
// the inbox, it reads it again (on the finished job's goroutine, which
// the dispatcher waits for).
func (c *Conn) freed(ctx context.Context) {
	in := &c.inbox
	in.mu.Lock()
	reread := in.behind && !in.rereading && ctx.Err() == nil
	in.rereading = in.rereading || reread
	h := in.handler
	in.mu.Unlock()
	if !reread {
		return
	}
	if err := c.Resume(ctx, h); err != nil && ctx.Err() == nil {
		c.Logger.Warn("read connection inbox", "error", err)
	}
	in.mu.Lock()
	in.rereading = false
	in.mu.Unlock()
}
