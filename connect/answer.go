package connect

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/telemetry"
	"github.com/agentd/agentd/turn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Reply is how a platform sends an answer: the one part of answering that
// is its own, besides reading the message. Conn.Answer does the rest.
type Reply struct {
	// Send sends part i (from 0) of the answer to the chat; where the
	// platform quotes the message answered, part 0 quotes it. An error
	// leaves the later parts unsent. Send reports its failure itself, as
	// its platform's errors ask (a token to redact, credentials rejected),
	// and returns it free of secrets: a schedule's lastError may show it.
	Send func(ctx context.Context, i int, part string) error
	// Limit is the platform's limit on a message's length: a longer answer
	// goes in parts cut by Split. 0 sends it whole, for a platform whose
	// turn shortens it (turn.Input.MaxChars).
	Limit int
	// Typing, when not nil, shows the chat the bot typing, once: it is
	// shown while the turn works, renewed every TypingEvery (Indicate). An
	// answer without a turn (AnswerText) shows none.
	Typing      func(ctx context.Context)
	TypingEvery time.Duration
	// Then, when not nil, runs after the parts, sent or not, with Send's
	// context (X likes and reposts a mention it answered).
	Then func(ctx context.Context)
	// Ask, when not nil, sends an approval message to an admin's private
	// chat, when the turn's run waits for decisions on its tool calls; it
	// reports its failure itself, as Send does. Without it (X) no admin
	// is asked: the run waits for the API or the console. Either way the
	// answer goes out once the run has ended.
	Ask func(ctx context.Context, a Ask) error
}

// Answer answers in, a message taken with Take, with the agent's turn for
// req (reply), and sends the answer with r: a Platform's Handler reads the
// message into req and r, and leaves the rest to it. in is counted as a
// message in, unless req.Shape.Post asks for a post of the agent's own (in is
// then the post's slot). A turn that fails leaves in unanswered
// (Unanswered); an answer goes as AnswerText sends it. A turn whose run
// waits for decisions on its tool calls asks the admins (r.Ask) and
// answers once the run has ended (await).
func (c *Conn) Answer(ctx context.Context, in Inbound, req turn.Input, r Reply) {
	stop := func() {}
	if r.Typing != nil {
		stop = Indicate(ctx, r.TypingEvery, r.Typing)
	}
	req.ChatID = in.Chat // the chat answered: a reminder the agent sets there is sent there too
	res, err := c.reply(ctx, req, !req.Shape.Post)
	stop()
	var waiting *turn.AwaitingDecisionError
	switch {
	case errors.As(err, &waiting):
		c.await(ctx, in, waiting.Run, r)
	case err != nil:
		c.Unanswered(ctx, in.Chat, err)
	default:
		c.AnswerText(ctx, in, res.Text, r)
	}
}

// AnswerText sends text as the answer to in, as Answer does once its turn
// is over; a Platform calls it for an answer of its own (a bot command's).
// answering finishes in under the lease, so no reply goes out twice, and
// when the reply may go it is sent as deliver sends it.
func (c *Conn) AnswerText(ctx context.Context, in Inbound, text string, r Reply) {
	send, done, ok := c.answering(ctx, in)
	if !ok {
		return
	}
	defer done()
	_ = c.deliver(send, in, text, r) // Send reports its own failure
}

// deliver sends text, the answer to in, with r: its parts in order, each
// counted once sent, until one fails; then r.Then runs. An empty text is
// logged and nothing is sent. It returns why the answer, or a part of it,
// was not sent.
func (c *Conn) deliver(send context.Context, in Inbound, text string, r Reply) error {
	if text == "" {
		c.Logger.WarnContext(send, "platform message not answered: the answer is empty", "chat", in.Chat)
		return errors.New("the reply is empty")
	}
	parts := []string{text}
	if r.Limit > 0 {
		parts = Split(text, r.Limit)
	}
	var failed error
	for i, part := range parts {
		if err := r.Send(send, i, part); err != nil {
			failed = fmt.Errorf("part %d of %d not sent: %w", i+1, len(parts), err)
			break
		}
		c.sent(send)
	}
	if r.Then != nil {
		r.Then(send)
	}
	return failed
}

// The attributes of a platform turn's span, the root of its trace.
const (
	attrPlatform = attribute.Key("agentd.platform")
	attrAgent    = attribute.Key("agentd.agent.id")
)

// reply asks the agent through the Turner, with the agent's account and id
// and the platform filled in, as a trace of its own, "turn <platform>",
// counting the message it answers (incoming) under it. It returns an error
// matching ErrNotAnswering when the agent cannot answer now (the turn
// decides: inactive, or in error during its cool-down).
func (c *Conn) reply(ctx context.Context, in turn.Input, incoming bool) (turn.Result, error) {
	in.AccountID, in.AgentID = c.Agent.AccountID, c.Agent.ID
	in.Conv.Platform, in.Platform = c.platform, c.platform
	in.Slot = turn.SlotWait // a platform message waits for the agent's cap; it is never refused
	in.Source = domain.RunSource(c.platform)
	ctx, span := telemetry.Tracer("connect").Start(ctx, "turn "+c.platform, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrPlatform.String(c.platform), attrAgent.String(c.Agent.ID)))
	defer span.End()
	if incoming {
		c.count(ctx, true)
	}
	res, err := c.turner.Reply(ctx, in)
	if err != nil && !errors.As(err, new(*turn.AwaitingDecisionError)) { // a run that waits has not failed
		span.SetStatus(codes.Error, "")
	}
	var unavailable *turn.UnavailableError
	if errors.As(err, &unavailable) {
		return turn.Result{}, fmt.Errorf("%w: %w", ErrNotAnswering, err)
	}
	return res, err
}

// sent counts one message sent to the platform.
func (c *Conn) sent(ctx context.Context) { c.count(ctx, false) }

// count counts a message in or out, best effort: a lost count is logged.
func (c *Conn) count(ctx context.Context, in bool) {
	if err := c.stores.Connections.CountConnectionMessage(ctx, c.lease, in); err != nil {
		c.Logger.WarnContext(ctx, "count connection message", "error", err)
	}
}
