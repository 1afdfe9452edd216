package connect

import (
	"context"
	"time"

	"github.com/agentd/agentd/turn"
)

// Reply is how a platform sends an answer: the one part of answering that
// is its own, besides reading the message. Conn.Answer does the rest.
type Reply struct {
	// Send sends part i (from 0) of the answer to the chat; where the
	// platform quotes the message answered, part 0 quotes it. An error
	// leaves the later parts unsent. Send reports its failure itself, as
	// its platform's errors ask (a token to redact, credentials rejected).
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
}

// Answer answers in, a message taken with Take, with the agent's turn for
// req, and sends the answer with r: a Platform's Handler reads the message
// into req and r, and leaves the rest to it. The turn is Turn's, or
// Compose's when req.Post asks for a post of the agent's own (in is then
// the post's slot, and no message is counted in). A turn that fails leaves
// in unanswered (Unanswered); an answer goes as AnswerText sends it.
func (c *Conn) Answer(ctx context.Context, in Inbound, req turn.Input, r Reply) {
	stop := func() {}
	if r.Typing != nil {
		stop = Indicate(ctx, r.TypingEvery, r.Typing)
	}
	res, err := c.reply(ctx, req, !req.Post)
	stop()
	if err != nil {
		c.Unanswered(ctx, in.Chat, err)
		return
	}
	c.AnswerText(ctx, in, res.Text, r)
}

// AnswerText sends text as the answer to in, as Answer does once its turn
// is over; a Platform calls it for an answer of its own (a bot command's).
// An empty text is logged and nothing is sent. Otherwise Answering
// finishes in, and when the reply may go its parts are sent, in order,
// each counted once sent (Sent), until one fails; then r.Then runs.
func (c *Conn) AnswerText(ctx context.Context, in Inbound, text string, r Reply) {
	if text == "" {
		c.Logger.WarnContext(ctx, "platform message not answered: the answer is empty", "chat", in.Chat)
		return
	}
	send, done, ok := c.Answering(ctx, in)
	if !ok {
		return
	}
	defer done()
	parts := []string{text}
	if r.Limit > 0 {
		parts = Split(text, r.Limit)
	}
	for i, part := range parts {
		if r.Send(send, i, part) != nil {
			break
		}
		c.Sent(send)
	}
	if r.Then != nil {
		r.Then(send)
	}
}
