package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm"
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
	q := domain.ListQuery{Page: 1, Limit: modelsPage, SortBy: domain.SortCreatedAt}
	for {
		agents, total, err := s.cfg.Store.Agents.ListAgents(ctx, account.ID, q)
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
// chunks when the body asks for `stream: true`. Like a synchronous Send
// Message it waits RunWait for its run; OpenAI's shapes have no 202, so a
// run still going is a 504 naming it.
func (s *Server) CreateChatCompletion(ctx context.Context, req gen.CreateChatCompletionRequestObject) (gen.CreateChatCompletionResponseObject, error) {
	b := req.Body
	in, text, err := chatTurn(ctx, b)
	if err != nil {
		return nil, err
	}
	t, err := s.cfg.Turns.Accept(ctx, in)
	if errors.Is(err, turn.ErrEmptyText) {
		return nil, invalidRequest(text, "must hold text, not only whitespace")
	}
	if err != nil {
		return nil, err
	}
	c := completion{id: "chatcmpl-" + requestIDFrom(ctx), model: b.Model, created: time.Now().Unix()}
	ignored := ignoredHeader(ctx)
	if flag(b.Stream) {
		usage := false
		if opts, err := b.StreamOptions.Get(); err == nil {
			usage = flag(opts.IncludeUsage)
		}
		return &chatStream{s: s, ctx: ctx, turn: t, c: c, usage: usage, ignored: ignored}, nil
	}
	res, err := s.awaitReply(ctx, t)
	if err != nil {
		return nil, err
	}
	return gen.CreateChatCompletion200JSONResponse{Body: c.whole(res),
		Headers: gen.CreateChatCompletion200ResponseHeaders{AgentdIgnored: ignored}}, nil
}

// ignoredChatMembers are the members of a Chat Completions request that
// would change what the model does, which agentd ignores (the agent's own
// tools and settings apply): the client's tools, old and new, and the
// sampling members. A client that declared them learns so from the
// agentd-ignored header instead of taking the answer as theirs.
var ignoredChatMembers = map[string]bool{
	"tools": true, "tool_choice": true, "functions": true, "function_call": true, "parallel_tool_calls": true,
	"temperature": true, "top_p": true, "max_tokens": true, "max_completion_tokens": true,
	"presence_penalty": true, "frequency_penalty": true, "n": true, "stop": true, "seed": true,
	"logit_bias": true, "logprobs": true, "top_logprobs": true, "reasoning_effort": true, "verbosity": true,
}

// ignoredKey is the context key of the ignored members of an OpenAI
// body, read by the gate, which has the body's bytes.
type ignoredKey struct{}

// ignoredMembers returns the top-level members of a JSON object body that
// ignores tells ignored and are not null, in body order, each once.
func ignoredMembers(raw []byte, ignores func(member string) bool) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		var value json.RawMessage
		if err != nil || dec.Decode(&value) != nil {
			return out
		}
		name, _ := tok.(string)
		if ignores(name) && string(value) != "null" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// ignoredHeader is the agentd-ignored header of the request in ctx; nil
// (no header) when nothing was ignored.
func ignoredHeader(ctx context.Context) *string {
	members, _ := ctx.Value(ignoredKey{}).([]string)
	if len(members) == 0 {
		return nil
	}
	return new(strings.Join(members, ", "))
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
	if !domain.CleanText(b.Model) {
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
		Slot: turn.SlotRefuseWhenFull, RequestID: requestIDFrom(ctx), Source: domain.SourceOpenAI,
		Conv: domain.ConversationRef{UserID: user, Platform: domain.PlatformAPI}}
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
