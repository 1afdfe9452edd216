package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/turn"
	"github.com/oapi-codegen/nullable"
)

// responseRequest is a Responses request read: the turn it asks for, what
// is kept of it beside the run, and the dotted path of the new message.
type responseRequest struct {
	in        turn.Input
	resp      domain.Response
	textField string
}

// responseTurn reads a Responses request. `model` names the agent (an id
// no agent can have is a model that does not exist). The last `user` item
// is the new message; `system` and `developer` items join `instructions`.
// The context is previous_response_id's conversation, else `user`'s
// stored one, else the request's other items (Input.Given), as Chat
// Completions takes it. Like Send Message, the turn is limited by the
// agent's concurrency cap.
func (s *Server) responseTurn(ctx context.Context, b *gen.ResponseRequest) (responseRequest, error) {
	if !domain.CleanText(b.Model) {
		return responseRequest{}, errAgentNotFound
	}
	items, fields, err := s.inputItems(ctx, b.Model, b.Input)
	if err != nil {
		return responseRequest{}, err
	}
	last := -1
	for i, it := range items {
		if it.Role == string(gen.ResponseInputRoleUser) {
			last = i
		}
	}
	if last < 0 {
		return responseRequest{}, invalidRequest("input", "must hold a user message")
	}
	if utf8.RuneCountInString(items[last].Text) > maxChatText {
		return responseRequest{}, invalidRequest(fields[last], fmt.Sprintf("must be at most %d characters", maxChatText))
	}
	user := firstUser(b.User, b.SafetyIdentifier)
	rr := responseRequest{textField: fields[last], resp: domain.Response{AccountID: principalFrom(ctx).Account.ID,
		UserID: user, Instructions: instructions(nullableValue(b.Instructions), items), Input: items}}
	if meta, err := b.Metadata.Get(); err == nil {
		rr.resp.Metadata = meta
	}
	rr.in = turn.Input{AccountID: rr.resp.AccountID, AgentID: b.Model, Text: items[last].Text,
		Slot: turn.SlotRefuseWhenFull, RequestID: requestIDFrom(ctx), Source: domain.SourceOpenAI,
		Instructions: rr.resp.Instructions, MaxTokens: nullablePtr(b.MaxOutputTokens), Temperature: nullablePtr(b.Temperature)}
	given := givenItems(items[:last])
	switch previous := nullableValue(b.PreviousResponseId); {
	case previous != "":
		return rr, s.continueResponse(ctx, &rr, b.Model, previous, given)
	case user != "":
		rr.in.UserID, rr.in.Conv = user, domain.ConversationRef{UserID: user, Platform: domain.PlatformAPI}
	default:
		rr.in.Given = given
	}
	return rr, nil
}

// continueResponse makes rr continue response previous of the same agent:
// in its stored conversation when it had one, else after its own context,
// input and output, followed by the request's other items.
func (s *Server) continueResponse(ctx context.Context, rr *responseRequest, agentID, previous string, given []llm.Message) error {
	_, prev, err := s.findResponse(ctx, previous)
	if err != nil {
		return err
	}
	if prev.AgentID != agentID {
		return invalidRequest("previous_response_id", "must be a response of the agent `model` names")
	}
	rr.resp.PreviousRunID = prev.ID
	if prev.ConversationID != "" {
		rr.in.UserID, rr.in.Conv = prev.UserID, prev.Input.Conv
		return nil
	}
	before := make([]llm.Message, 0, len(prev.Input.Given)+2+len(given))
	for _, m := range prev.Input.Given {
		before = append(before, llm.Message{Role: llm.Role(m.Role), Content: m.Text})
	}
	before = append(before, llm.Message{Role: llm.RoleUser, Content: prev.Text})
	if prev.Reply != nil && strings.TrimSpace(prev.Reply.Text) != "" {
		before = append(before, llm.Message{Role: llm.RoleAssistant, Content: prev.Reply.Text})
	}
	rr.in.Given = append(before, given...)
	return nil
}

// inputItems reads a request's `input` to agent agentID: a string is one
// user item; an item_reference is the agent's reply it names, as an
// assistant item. It returns the items with the dotted path of each one's
// text, or a 400 naming the first item or part that is not a message of
// text.
func (s *Server) inputItems(ctx context.Context, agentID string, input gen.ResponseInput) ([]domain.ResponseItem, []string, error) {
	if text, err := input.AsResponseInput0(); err == nil {
		return []domain.ResponseItem{{Role: string(gen.ResponseInputRoleUser), Text: text}}, []string{"input"}, nil
	}
	list, err := input.AsResponseInput1()
	if err != nil {
		return nil, nil, invalidRequest("input", "must be a string or a list of message items")
	}
	items := make([]domain.ResponseItem, len(list))
	fields := make([]string, len(list))
	for i, it := range list {
		field := fmt.Sprintf("input[%d]", i)
		fields[i] = field + ".content"
		if deref(it.Type) == itemReference {
			if items[i], err = s.referencedReply(ctx, agentID, deref(it.Id), field); err != nil {
				return nil, nil, err
			}
			continue
		}
		if kind := deref(it.Type); kind != "" && kind != string(gen.Message) {
			return nil, nil, invalidRequest(field, fmt.Sprintf("items of type %q are not supported, only messages", kind))
		}
		role := gen.ResponseInputRole(deref(it.Role))
		if !role.Valid() {
			return nil, nil, invalidRequest(field+".role", "must be user, assistant, system or developer")
		}
		text, err := itemText(it.Content, role, fields[i])
		if err != nil {
			return nil, nil, err
		}
		items[i] = domain.ResponseItem{Role: string(role), Text: text}
	}
	return items, fields, nil
}

// itemReference is the type of an item that names an earlier item by its
// id instead of repeating it.
const itemReference = "item_reference"

// referencedReply is the reply of agent agentID with message id as an
// assistant item: the output message of an earlier response, which
// clients that keep their own history (the AI SDK) name by its id. A
// reference to anything else is a 400 naming the item.
func (s *Server) referencedReply(ctx context.Context, agentID, id, field string) (domain.ResponseItem, error) {
	run, err := s.cfg.Store.Runs.RunOfMessage(ctx, principalFrom(ctx).Account.ID, agentID, id)
	if err == nil && run.Reply != nil {
		return domain.ResponseItem{Role: string(gen.ResponseInputRoleAssistant), Text: run.Reply.Text}, nil
	}
	if err != nil && !errors.Is(err, domain.ErrRunNotFound) && !errors.Is(err, domain.ErrNotFound) {
		return domain.ResponseItem{}, err
	}
	return domain.ResponseItem{}, invalidRequest(field, "must reference a reply of the agent `model` names")
}

// itemText is an item's text: its content string, or its text parts
// joined by newlines (input_text, and output_text in an assistant item,
// as the SDKs send earlier replies); a part of another type is a 400
// naming it.
func itemText(content *gen.ResponseInputContent, role gen.ResponseInputRole, field string) (string, error) {
	if content == nil {
		return "", nil
	}
	if s, err := content.AsResponseInputContent0(); err == nil {
		return s, nil
	}
	parts, err := content.AsResponseInputContent1()
	if err != nil {
		return "", invalidRequest(field, "must be a string or a list of text parts")
	}
	texts := make([]string, len(parts))
	for j, p := range parts {
		kind := gen.ResponseContentType(p.Type)
		if kind != gen.InputText && (kind != gen.OutputText || role != gen.ResponseInputRoleAssistant) {
			return "", invalidRequest(fmt.Sprintf("%s[%d].type", field, j), fmt.Sprintf("parts of type %q are not supported, only text", p.Type))
		}
		texts[j] = deref(p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// instructions are the request's `instructions` and the text of its
// system and developer items, in that order, for the end of the system
// prompt.
func instructions(given string, items []domain.ResponseItem) string {
	var parts []string
	if strings.TrimSpace(given) != "" {
		parts = append(parts, given)
	}
	for _, it := range items {
		role := gen.ResponseInputRole(it.Role)
		if (role == gen.ResponseInputRoleSystem || role == gen.ResponseInputRoleDeveloper) && strings.TrimSpace(it.Text) != "" {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// givenItems is the context the request's user and assistant items give,
// in order; never nil, so the turn reads no stored history.
func givenItems(items []domain.ResponseItem) []llm.Message {
	out := make([]llm.Message, 0, len(items))
	for _, it := range items {
		role := llm.Role(it.Role)
		if (role == llm.RoleUser || role == llm.RoleAssistant) && strings.TrimSpace(it.Text) != "" {
			out = append(out, llm.Message{Role: role, Content: it.Text})
		}
	}
	return out
}

// nullableValue is a nullable string of the request, "" when absent or
// null.
func nullableValue[T ~string](v nullable.Nullable[T]) string {
	s, _ := v.Get()
	return string(s)
}

// nullablePtr is a nullable member of the request as a pointer, nil when
// absent or null.
func nullablePtr[T any](v nullable.Nullable[T]) *T {
	x, err := v.Get()
	if err != nil {
		return nil
	}
	return &x
}

// firstUser is the first of the request's user members that is set.
func firstUser(users ...*gen.ChatCompletionUser) string {
	for _, u := range users {
		if v := deref(u); v != "" {
			return v
		}
	}
	return ""
}

// responseStatus is the status of a response whose run is in status st: a
// run waiting for a decision is still in progress; a run stopped by any
// means is cancelled.
func responseStatus(st domain.RunStatus) gen.ResponseStatus {
	switch st {
	case domain.RunQueued:
		return gen.ResponseStatusQueued
	case domain.RunRunning, domain.RunRequiresAction:
		return gen.ResponseStatusInProgress
	case domain.RunCompleted:
		return gen.ResponseStatusCompleted
	case domain.RunFailed:
		return gen.ResponseStatusFailed
	}
	return gen.ResponseStatusCancelled
}

// responseOut renders response r as its run is: the reply (once there is
// one) as its one output message, its tokens as usage once the run ended.
func responseOut(r domain.Response, run domain.Run) gen.Response {
	meta := r.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	out := gen.Response{Id: responseID(run.ID), Object: gen.ResponseObjectResponse, CreatedAt: r.CreatedAt.Unix(),
		Status: responseStatus(run.Status), Model: run.AgentID, Output: []gen.ResponseOutputMessage{},
		PreviousResponseId: nullString(""), Instructions: nullString(r.Instructions), Metadata: meta,
		Error: nullable.NewNullNullable[gen.ResponseError](), IncompleteDetails: nullable.NewNullNullable[gen.ResponseIncompleteDetails](),
		Usage: nullable.NewNullNullable[gen.ResponseUsage](), Background: r.Background, User: nullString(r.UserID)}
	if r.PreviousRunID != "" {
		out.PreviousResponseId = nullString(responseID(r.PreviousRunID))
	}
	if run.Reply != nil {
		item := gen.ResponseItemStatusCompleted
		if run.Status == domain.RunCompleted && run.Reply.Metadata.Truncated {
			// Stopped for its length: OpenAI's incomplete, one reason for
			// both the token limit and the character's maxLength.
			out.Status, item = gen.ResponseStatusIncomplete, gen.ResponseItemStatusIncomplete
			out.IncompleteDetails.Set(gen.ResponseIncompleteDetails{Reason: gen.MaxOutputTokens})
		}
		out.Output = append(out.Output, outputMessage(run.Reply.MessageID, run.Reply.Text, item))
		if run.Status.Final() {
			m := run.Reply.Metadata
			out.Usage.Set(gen.ResponseUsage{InputTokens: m.PromptTokens, OutputTokens: m.CompletionTokens, TotalTokens: m.TokensUsed})
		}
	}
	if run.Status == domain.RunFailed {
		out.Error.Set(gen.ResponseError{Code: strings.ToLower(run.ErrorCode), Message: run.ErrorMessage})
	}
	return out
}

// outputMessage is the output item of a reply.
func outputMessage(id, text string, st gen.ResponseItemStatus) gen.ResponseOutputMessage {
	return gen.ResponseOutputMessage{Type: gen.Message, Id: id, Role: gen.ChatCompletionAssistantRoleAssistant, Status: st,
		Content: []gen.ResponseOutputText{outputText(text)}}
}

// outputText is a reply's text as its one content part.
func outputText(text string) gen.ResponseOutputText {
	return gen.ResponseOutputText{Type: gen.OutputText, Text: text, Annotations: []map[string]any{}}
}
