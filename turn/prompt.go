package turn

import (
	"context"
	"strings"
	"unicode"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// providerRequest shapes the provider call from the agent's character, the
// conversation's recent history and the message.
func (s *Service) providerRequest(ctx context.Context, t *Turn) (llm.Request, error) {
	ch := s.chars.of(t.agent)
	if t.in.Shape.Post {
		t.in.Text = llm.PostPrompt(ch, t.in.Shape.MaxChars)
	}
	cx := llm.Context{Platform: t.in.Platform, Channel: t.in.Channel, User: talkingWith(t.in)}
	summary, err := s.summary(ctx, t)
	if err != nil {
		return llm.Request{}, err
	}
	if t.memories, t.chunks, err = s.recalled(ctx, t); err != nil {
		return llm.Request{}, err
	}
	req := llm.Request{
		Provider: t.agent.ModelProvider, Model: t.agent.Model, APIKey: t.apiKey,
		System: llm.BuildSystemPrompt(ch, cx, promptRecall(summary, t.memories, t.chunks)), Text: speaker(t.in) + t.in.Text,
		Options: callerOptions(ch.Options(), t.in), MaxReplyChars: ch.MaxReplyChars(),
	}
	if t.in.Instructions != "" {
		req.System += "\n\n" + t.in.Instructions
	}
	if window := ch.HistoryWindow(); window > 0 {
		history, err := s.history(ctx, t, window)
		if err != nil {
			return llm.Request{}, err
		}
		req.History = llm.FitHistory(history, ch.ContextTokens())
	}
	return req, nil
}

// callerOptions are the character's sampling options with what the
// caller overrides for this turn.
func callerOptions(o llm.Options, in Input) llm.Options {
	if in.MaxTokens != nil {
		o.MaxTokens = in.MaxTokens
	}
	if in.Temperature != nil {
		o.Temperature = in.Temperature
	}
	return o
}

// history is the last window messages of the turn's conversation: the
// ones the caller gave (Input.Given), else the stored ones.
func (s *Service) history(ctx context.Context, t *Turn, window int) ([]llm.Message, error) {
	if given := t.in.Given; given != nil {
		return given[max(0, len(given)-window):], nil
	}
	history, err := s.cfg.Stores.Conversations.History(ctx, t.agent.AccountID, t.agent.ID, t.in.Conv, window)
	if err != nil {
		return nil, err
	}
	return llmHistory(history, t.in.Conv.RoomID != ""), nil
}

// talkingWith names the other side of a direct conversation for the
// prompt: the display name with the user id, or the id alone; "" in a room
// or when the message names nobody.
func talkingWith(in Input) string {
	switch {
	case in.Conv.RoomID != "" || in.UserID == "":
		return ""
	}
	if name := displayName(in.UserName); name != "" {
		return name + " (" + in.UserID + ")"
	}
	return in.UserID
}

// maxDisplayName bounds the display name the system prompt shows.
const maxDisplayName = 64

// displayName is a platform user's display name as the system prompt may
// show it: the user chooses it, so it is kept to one line of printable
// characters (no control or format characters, which could fake a new
// instruction or reorder text), spaces collapsed, at most maxDisplayName.
func displayName(name string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, name)
	clean = strings.Join(strings.Fields(clean), " ")
	if r := []rune(clean); len(r) > maxDisplayName {
		clean = strings.TrimSpace(string(r[:maxDisplayName]))
	}
	return clean
}

// speaker prefixes room messages with their author, so the model can tell
// the people of a room apart.
func speaker(in Input) string {
	if in.Conv.RoomID != "" && in.UserID != "" {
		return in.UserID + ": "
	}
	return ""
}

// llmHistory is the conversation's history as the provider gets it, each
// room message prefixed with its author as speaker does.
func llmHistory(msgs []domain.Message, room bool) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = llm.Message{Role: llm.Role(m.Role), Content: m.Text}
		if room && m.Role == domain.RoleUser && m.UserID != "" {
			out[i].Content = m.UserID + ": " + m.Text
		}
	}
	return out
}
