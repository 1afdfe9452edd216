package turn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// MaxSummary bounds a conversation's summary, in characters.
const MaxSummary = 2000

// summaryTimeout bounds the background work of one summary.
const summaryTimeout = 2 * time.Minute

// summarySystem is the system prompt of the call that folds messages
// into a conversation's summary.
const summarySystem = `You keep the running summary of a conversation between an AI agent and the people it talks with. ` +
	`Fold the new messages into the summary. Keep names, facts, decisions, open questions and promises; drop small talk. ` +
	`Answer with the new summary only, in at most 2000 characters.`

// summary is the conversation's summary when the agent keeps them.
func (s *Service) summary(ctx context.Context, t *Turn) (string, error) {
	if !memoryOf(t.agent).RememberConversations || t.in.Conv == (domain.ConversationRef{Platform: t.in.Conv.Platform}) {
		return "", nil
	}
	summary, _, err := s.cfg.Stores.Conversations.ConversationSummary(ctx, t.agent.AccountID, t.agent.ID, t.in.Conv)
	return summary, err
}

// summarizeLater folds what has slid out of the conversation's window into
// its summary, after the turn and off its path; Close waits for it.
func (s *Service) summarizeLater(t *Turn) {
	if !memoryOf(t.agent).RememberConversations || t.in.Conv == (domain.ConversationRef{Platform: t.in.Conv.Platform}) {
		return
	}
	s.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), summaryTimeout)
		defer cancel()
		if err := s.summarize(ctx, t); err != nil {
			s.cfg.Logger.Warn("conversation summary not updated", "agent", t.agent.ID, "error", err)
		}
	})
}

// summarize asks the agent's own model to fold the messages that left the
// window since the last summary into it. Its tokens count in the agent's
// analytics, a provider failure as a failed turn of its kind; nothing else
// changes (the agent's status stays).
func (s *Service) summarize(ctx context.Context, t *Turn) error {
	window := s.chars.of(t.agent).HistoryWindow()
	if window <= 0 {
		return nil
	}
	st, acct, id := s.cfg.Stores.Conversations, t.agent.AccountID, t.agent.ID
	if t.convID == "" {
		return nil
	}
	conv, err := st.GetConversation(ctx, acct, id, t.convID)
	if err != nil {
		return err
	}
	summary, done, err := st.ConversationSummary(ctx, acct, id, t.in.Conv)
	out := int(conv.MessageCount) - window
	if err != nil || out <= done {
		return err
	}
	msgs, err := st.MessagesRange(ctx, acct, id, t.in.Conv, done, out)
	if err != nil {
		return err
	}
	reply, err := s.cfg.Model.Generate(ctx, llm.Request{Provider: t.agent.ModelProvider, Model: t.agent.Model,
		APIKey: t.apiKey, System: summarySystem, Text: foldPrompt(summary, msgs)})
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			s.recordTurnError(ctx, "", t.agent, le)
		}
		return err
	}
	if err := s.cfg.Stores.Analytics.RecordTokens(ctx, acct, id, s.metadata(t, reply).TokensUsed, time.Now()); err != nil {
		return err
	}
	return st.SaveSummary(ctx, acct, id, t.in.Conv, cutRunes(strings.TrimSpace(reply.Text), MaxSummary), out)
}

// foldPrompt is the message of a summary call: the summary so far and the
// messages to fold into it.
func foldPrompt(summary string, msgs []domain.Message) string {
	var b strings.Builder
	if summary != "" {
		fmt.Fprintf(&b, "The summary so far:\n%s\n\n", summary)
	}
	b.WriteString("The new messages:\n")
	for _, m := range msgs {
		who := "Agent"
		if m.Role == domain.RoleUser {
			who = "User"
			if m.UserID != "" {
				who = "User " + m.UserID
			}
		}
		fmt.Fprintf(&b, "%s: %s\n", who, m.Text)
	}
	return b.String()
}
