package connect

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/domain"
)

// Chats registers how the session of the running Run sends to a chat it
// was not written from, with no message to quote (a schedule's reply):
// reply makes the Reply of a chat id. A Platform calls it once its
// session is connected; it holds until that Run returns.
func (c *Conn) Chats(reply func(chat string) Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chats = reply
}

// chatReply is the Reply of chat through the running session; false when
// none is connected.
func (c *Conn) chatReply(chat string) (Reply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.chats == nil || c.connected.IsZero() {
		return Reply{}, false
	}
	return c.chats(chat), true
}

// Owner names this replica as the leases of the connections it holds
// name their holder.
func (s *Supervisor) Owner() string { return s.cfg.Owner }

// DeliverRun sends the reply of run to chat through the agent's bot on
// platform, connected on this replica, once the run has ended: the path
// of a platform message's run that waited for decisions (follow), asking
// the platform's admins about the calls the run waits for meanwhile. done
// gets nil once the reply was sent, else why it was not; it is called on
// the follower's goroutine, or at once when the bot is not connected
// here. Like every follower it belongs to the replica: a stop loses the
// delivery (done says so).
func (s *Supervisor) DeliverRun(agentID, platform, chat string, run domain.Run, done func(error)) {
	c := s.conn(agentID, platform)
	var r Reply
	ok := c != nil
	if ok {
		r, ok = c.chatReply(chat)
	}
	if !ok {
		done(fmt.Errorf("the agent's %s bot is not connected on the replica that made the run", platform))
		return
	}
	if !s.follows.spawn(func(ctx context.Context) { done(c.follow(ctx, Inbound{Chat: chat}, run, r)) }) {
		done(errFollowStopped)
	}
}

// conn is the Conn of the agent's connection to platform while this
// replica holds its lease; nil otherwise.
func (s *Supervisor) conn(agentID, platform string) *Conn {
	s.mu.Lock()
	r := s.runners[runnerKey{agentID, platform}]
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold == nil {
		return nil
	}
	return r.hold.conn
}
