package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/turn"
	"github.com/oapi-codegen/nullable"
)

// OpenAI's Chat Completions and Models API over the account's agents: the
// shapes are OpenAI's (openapi.yaml's ChatCompletion* and OpenAI*), the
// turn is Send Message's, and errors are the contract's, rendered in
// OpenAI's shape by handleError (openAIPaths).

// maxChatText bounds the new message of a chat completion, as MessageRequest
// bounds `text`.
const maxChatText = 16000

// modelsPage is how many agents ListModels reads at a time.
const modelsPage = 100

// ListModels lists the account's agents as OpenAI models, oldest first.
func (s *Server) ListModels(ctx context.Context, _ gen.ListModelsRequestObject) (gen.ListModelsResponseObject, error) {
	account := principalFrom(ctx).Account
	list := gen.OpenAIModelList{Object: gen.List, Data: []gen.OpenAIModel{}}
	q := store.ListQuery{Page: 1, Limit: modelsPage, SortBy: store.SortCreatedAt}
	for {
		agents, total, err := s.cfg.Store.ListAgents(ctx, account.ID, q)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			list.Data = append(list.Data, gen.OpenAIModel{Id: a.ID, Object: gen.Model, Created: a.CreatedAt.Unix(),
				OwnedBy: account.Name, Name: a.Name})
		}
		if len(agents) < q.Limit || int64(len(list.Data)) >= total {
			return gen.ListModels200JSONResponse{Body: list}, nil
		}
		q.Page++
	}
}

// CreateChatCompletion runs the turn of Send Message for an OpenAI Chat
// Completions request and answers with the completion, or streams it as
// chunks when the body asks for `stream: true`.
func (s *Server) CreateChatCompletion(ctx context.Context, req gen.CreateChatCompletionRequestObject) (gen.CreateChatCompletionResponseObject, error) {
	b := req.Body
	in, text, err := chatTurn(ctx, b)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Turns.Prepare(ctx, in)
	if errors.Is(err, turn.ErrEmptyText) {
		return nil, invalidRequest(text, "must hold text, not only whitespace")
	}
	if err != nil {
		return nil, err
	}
	c := completion{id: "chatcmpl-" + requestIDFrom(ctx), model: b.Model, created: time.Now().Unix()}
	if flag(b.Stream) {
		usage := false
		if opts, err := b.StreamOptions.Get(); err == nil {
			usage = flag(opts.IncludeUsage)
		}
		return &chatStream{s: s, ctx: ctx, turn: t, c: c, usage: usage}, nil
	}
	res, err := s.cfg.Turns.Generate(ctx, t)
	if err != nil {
		return nil, err
	}
	return gen.CreateChatCompletion200JSONResponse{Body: c.whole(res)}, nil
}

// chatTurn is the turn of a Chat Completions body, and the dotted path of
// the new message's content. `model` names the agent; an id no agent can
// have is a model that does not exist. The last `user` message is the new
// message. With `user` (else `safety_identifier`) the turn is that user's
// and their stored conversation is the context; without, the request's
// earlier user and assistant messages are (Input.Given) and the exchange is
// stored in no conversation. Like Send Message, the turn is limited by the
// agent's concurrency cap.
func chatTurn(ctx context.Context, b *gen.ChatCompletionRequest) (turn.Input, string, error) {
	if !cleanText(b.Model) {
		return turn.Input{}, "", errAgentNotFound
	}
	last := -1
	for i, m := range b.Messages {
		if m.Role == gen.ChatCompletionRoleUser {
			last = i
		}
	}
	if last < 0 {
		return turn.Input{}, "", invalidRequest("messages", "must hold a user message")
	}
	field := fmt.Sprintf("messages[%d].content", last)
	text := messageText(b.Messages[last])
	if utf8.RuneCountInString(text) > maxChatText {
		return turn.Input{}, "", invalidRequest(field, fmt.Sprintf("must be at most %d characters", maxChatText))
	}
	user := deref(b.User)
	if user == "" {
		user = deref(b.SafetyIdentifier)
	}
	in := turn.Input{AccountID: principalFrom(ctx).Account.ID, AgentID: b.Model, Text: text, UserID: user,
		Limited: true, RequestID: requestIDFrom(ctx), Conv: store.ConversationRef{UserID: user, Platform: store.PlatformAPI}}
	if user == "" {
		in.Given = givenContext(b.Messages[:last])
	}
	return in, field, nil
}

// givenContext is the context a request gives: its user and assistant
// messages that hold text, in order. Never nil, so the turn reads no
// stored history.
func givenContext(msgs []gen.ChatCompletionRequestMessage) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		role := llm.RoleUser
		switch m.Role {
		case gen.ChatCompletionRoleUser:
		case gen.ChatCompletionRoleAssistant:
			role = llm.RoleAssistant
		default:
			continue // the agent's own system prompt and tools apply
		}
		if text := messageText(m); strings.TrimSpace(text) != "" {
			out = append(out, llm.Message{Role: role, Content: text})
		}
	}
	return out
}

// messageText is a message's text: its content string, or its text parts
// joined by newlines; "" for null content and parts of other kinds.
func messageText(m gen.ChatCompletionRequestMessage) string {
	content := m.Content
	if content == nil {
		return ""
	}
	if s, err := content.AsChatCompletionMessageContent0(); err == nil {
		return s
	}
	parts, err := content.AsChatCompletionMessageContent1()
	if err != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" && p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// flag is a nullable boolean of the request, false unless true.
func flag(v nullable.Nullable[bool]) bool {
	b, err := v.Get()
	return err == nil && b
}

// completion is what every answer of one Chat Completions request shares.
type completion struct {
	id, model string
	created   int64
}

// whole is the completion of a turn's reply.
func (c completion) whole(r turn.Result) gen.ChatCompletion {
	return gen.ChatCompletion{Id: c.id, Object: gen.ChatCompletionObjectChatCompletion, Created: c.created, Model: c.model,
		Choices: []gen.ChatCompletionChoice{{Index: 0, FinishReason: gen.ChatCompletionFinishReasonStop,
			Message: gen.ChatCompletionResponseMessage{Role: gen.ChatCompletionAssistantRoleAssistant, Content: r.Text}}},
		Usage: chatUsage(r.Metadata)}
}

// chatUsage is OpenAI's usage of a turn: total_tokens is tokensUsed.
func chatUsage(m turn.Metadata) gen.ChatCompletionUsage {
	return gen.ChatCompletionUsage{PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, TotalTokens: m.TokensUsed}
}
