package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/prometheus/client_golang/prometheus"
)

// Platform connects agents to one chat platform.
type Platform interface {
	// Name is the platform's id in an agent's clients ("telegram").
	Name() string
	// Credentials names the secrets (settings.secrets) it cannot connect
	// without; a connection missing one is disabled.
	Credentials() []string
	// Run serves one connection until ctx ends. A *FatalError (a rejected
	// token, a bot used by another agent) puts the connection in error
	// until its configuration changes; other errors are retried with
	// back-off. It returns once every goroutine it started has stopped.
	Run(ctx context.Context, c *Conn) error
}

// FatalError is a failure that retrying cannot fix; Reason is shown as the
// connection's reason.
type FatalError struct{ Reason string }

func (e *FatalError) Error() string { return "connect: " + e.Reason }

// ErrNotAnswering means the agent answers nothing now (it is in error or
// inactive): the message is dropped.
var ErrNotAnswering = errors.New("connect: the agent is not answering")

// botInUseReason is the decided reason for a bot connected for another agent.
const botInUseReason = "this bot account is already connected to another agent"

// Conn is one running connection of an agent to a platform, as a Platform
// sees it: its configuration, and what it may do under the lease.
type Conn struct {
	// Agent is the agent as configured when the connection started.
	Agent domain.Agent
	// Settings is the agent's settings.<platform> object (nil when absent).
	Settings json.RawMessage
	// Secrets are the agent's decrypted settings.secrets.
	Secrets domain.Secrets
	Logger  *slog.Logger
	// Local is the Platform's own, kept across the Runs of one lease (a
	// gateway session to resume); nil at first. Runs of a Conn never
	// overlap, so Run may use it without locking.
	Local any

	platform string
	lease    domain.Lease // as acquired; never changed, so every goroutine may read it
	stores   Stores

	mu        sync.Mutex
	cursor    string    // the platform's cursor, the lease's at first
	connected time.Time // when the running Run reported Connected; zero before
	// chats makes the Reply of a chat the running Run's session sends to
	// unprompted (Chats); nil while none does.
	chats func(chat string) Reply

	turner Turner
	jobs   *dispatcher
	inbox  inbox
	// lose ends the lease's work at once: a lease-bound write found the
	// lease lost, so nothing more may be done under it.
	lose    func(error)
	dropped *prometheus.CounterVec
	policy  *Policy
	// admins are settings.<platform>.adminUsers, who decide the calls its
	// runs wait for (approvals.go).
	admins userSet
	// follows deliver the replies of runs that waited (follow.go).
	follows *followers
}

// DropNotAnswering is why Drop counts a message the agent could not answer
// (inactive, or in error); a refused Verdict's String is why for the
// others.
const DropNotAnswering = "not_answering"

// DropBudget is why Drop counts a message whose run a spent budget refused
// (the run is stored failed with BUDGET_EXCEEDED).
const DropBudget = "budget"

// Admit reports whether a message from user in chat (private: a direct
// conversation) is to be answered under settings.<platform>'s allowedUsers
// and userRateLimit; a refusal is logged and counted.
func (c *Conn) Admit(user Sender, private bool, chat string) bool {
	v := c.policy.Admit(user, private, time.Now())
	if v != Admitted {
		c.Drop(v.String(), chat)
	}
	return v == Admitted
}

// Unanswered reports a turn of chat that gave no reply: an agent not
// answering now is a drop (counted), any other failure is logged unless
// the lease's work ended. No failure is ever sent to the chat.
func (c *Conn) Unanswered(ctx context.Context, chat string, err error) {
	switch {
	case errors.Is(err, ErrNotAnswering):
		c.Drop(DropNotAnswering, chat)
	case errors.As(err, new(*domain.BudgetExceededError)):
		c.Drop(DropBudget, chat)
	case ctx.Err() == nil:
		c.Logger.WarnContext(ctx, "platform message not answered", "chat", chat, "error", err)
	}
}

// Drop logs and counts a message left unanswered on purpose, with why and
// the chat it came from.
func (c *Conn) Drop(why, chat string) {
	c.dropped.WithLabelValues(c.platform, why).Inc()
	c.Logger.Info("platform message not answered", "reason", why, "chat", chat)
}

// Cursor is the platform's cursor stored by the last runner ("" at first).
func (c *Conn) Cursor() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor
}

// SaveCursor stores the platform's cursor.
func (c *Conn) SaveCursor(ctx context.Context, cursor string) error {
	if err := c.stores.Connections.SaveCursor(ctx, c.lease, cursor); err != nil {
		return c.leaseErr(fmt.Errorf("connect: save cursor: %w", err))
	}
	c.mu.Lock()
	c.cursor = cursor
	c.mu.Unlock()
	return nil
}

// Connected records the bot's identity and the state connected. A bot
// already connected for another agent is a *FatalError.
func (c *Conn) Connected(ctx context.Context, botID, username string) error {
	if err := c.ClaimBot(ctx, botID, username); err != nil {
		return err
	}
	return c.MarkConnected(ctx)
}

// ClaimBot is the first half of Connected, for a platform with work to do
// between claiming the bot and saying it is connected: it records the bot
// account, refusing (FatalError) one connected for another agent.
func (c *Conn) ClaimBot(ctx context.Context, botID, username string) error {
	err := c.stores.Connections.ClaimBot(ctx, c.lease, botID, username)
	if errors.Is(err, domain.ErrBotInUse) {
		return &FatalError{Reason: botInUseReason}
	}
	if err != nil {
		return fmt.Errorf("connect: claim bot: %w", err)
	}
	return nil
}

// MarkConnected is the second half of Connected: the connection's state
// becomes connected.
func (c *Conn) MarkConnected(ctx context.Context) error {
	if err := c.setState(ctx, domain.ConnConnected, ""); err != nil {
		return err
	}
	c.setConnectedAt(time.Now())
	return nil
}

// Trouble reports that the connection cannot do its work now, with the
// reason: domain.ConnConnecting while it retries by itself,
// domain.ConnError for a fault only the operator can fix (it retries all
// the same). MarkConnected ends it.
func (c *Conn) Trouble(ctx context.Context, state domain.ConnState, reason string) error {
	return c.setState(ctx, state, reason)
}

func (c *Conn) setConnectedAt(t time.Time) {
	c.mu.Lock()
	c.connected = t
	c.mu.Unlock()
}

// connectedAt is when the running Run reported Connected, zero if it did not.
func (c *Conn) connectedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

func (c *Conn) setState(ctx context.Context, state domain.ConnState, reason string) error {
	if err := c.stores.Connections.SetConnectionState(ctx, c.lease, state, reason); err != nil {
		return c.leaseErr(fmt.Errorf("connect: set state %s: %w", state, err))
	}
	return nil
}

// leaseErr returns err, first ending the lease's work when err says the
// lease is lost: the runner learns of it at once, not at its next renewal.
func (c *Conn) leaseErr(err error) error {
	if errors.Is(err, domain.ErrLeaseLost) && c.lose != nil {
		c.lose(err)
	}
	return err
}

// Forget deletes the agent's conversation conv (a chat's /reset); a
// conversation that does not exist is already forgotten.
func (c *Conn) Forget(ctx context.Context, conv domain.ConversationRef) error {
	conv.Platform = c.platform
	found, err := c.stores.Conversations.FindConversation(ctx, c.Agent.AccountID, c.Agent.ID, conv)
	if errors.Is(err, domain.ErrConversationNotFound) {
		return nil
	}
	if err == nil {
		_, err = c.stores.Conversations.DeleteConversation(ctx, c.Agent.AccountID, c.Agent.ID, found.ID)
	}
	if err != nil {
		return fmt.Errorf("connect: forget conversation: %w", err)
	}
	return nil
}

// missingCredentials returns the reason of a disabled connection, "" when
// every credential is there.
func missingCredentials(p Platform, secrets domain.Secrets) string {
	var missing []string
	for _, name := range p.Credentials() {
		if strings.TrimSpace(secrets.String(name)) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return strings.Join(missing, ", ") + " missing from settings.secrets"
}
