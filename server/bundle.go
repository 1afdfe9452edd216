package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// The bounds of an export's agentd member, as the contract's AgentBundle
// states them: every memory and document an agent may have, and its most
// recently active conversations with their newest messages.
const (
	bundleConversations = 1000
	bundleMessages      = domain.MaxImportedMessages
)

// exportBundle reads what include names of agent a.
func (s *Server) exportBundle(ctx context.Context, a domain.Agent, include []gen.ExportInclude) (gen.AgentBundle, error) {
	var b gen.AgentBundle
	var err error
	if slices.Contains(include, gen.Memories) {
		if b.Memories, err = s.bundleMemories(ctx, a); err != nil {
			return b, err
		}
	}
	if slices.Contains(include, gen.Knowledge) {
		if b.Knowledge, err = s.bundleKnowledge(ctx, a); err != nil {
			return b, err
		}
	}
	if slices.Contains(include, gen.History) {
		if b.History, err = s.bundleHistory(ctx, a); err != nil {
			return b, err
		}
	}
	return b, nil
}

// bundleMemories lists every memory of a, oldest first.
func (s *Server) bundleMemories(ctx context.Context, a domain.Agent) (*[]gen.BundleMemory, error) {
	mems, _, err := s.cfg.Store.Memories.ListMemories(ctx, a.AccountID, a.ID, domain.MemoryQuery{Page: 1, Limit: domain.MaxMemories})
	if err != nil {
		return nil, err
	}
	out := make([]gen.BundleMemory, 0, len(mems))
	for _, m := range slices.Backward(mems) {
		bm := gen.BundleMemory{Text: m.Text, CreatedAt: &m.CreatedAt}
		if m.UserID != "" {
			bm.UserId = &m.UserID
		}
		out = append(out, bm)
	}
	return &out, nil
}

// bundleKnowledge lists every document of a with its text, oldest first.
func (s *Server) bundleKnowledge(ctx context.Context, a domain.Agent) (*[]gen.BundleKnowledge, error) {
	docs, _, err := s.cfg.Store.Knowledge.ListKnowledge(ctx, a.AccountID, a.ID, 1, domain.MaxKnowledgeDocs)
	if err != nil {
		return nil, err
	}
	out := make([]gen.BundleKnowledge, 0, len(docs))
	for _, d := range slices.Backward(docs) {
		text, err := s.cfg.Store.Knowledge.KnowledgeText(ctx, a.AccountID, a.ID, d.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, gen.BundleKnowledge{Name: d.Name, Text: text})
	}
	return &out, nil
}

// bundleHistory lists a's most recently active conversations, least recent
// first, each with its newest messages oldest first.
func (s *Server) bundleHistory(ctx context.Context, a domain.Agent) (*[]gen.BundleConversation, error) {
	convs, _, err := s.cfg.Store.Conversations.ListConversations(ctx, a.AccountID, a.ID, domain.ConversationQuery{Page: 1, Limit: bundleConversations})
	if err != nil {
		return nil, err
	}
	out := make([]gen.BundleConversation, 0, len(convs))
	for _, c := range slices.Backward(convs) {
		msgs, _, err := s.cfg.Store.Conversations.ListMessages(ctx, a.AccountID, a.ID, c.ID, domain.MessageQuery{Page: 1, Limit: bundleMessages, Desc: true})
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			continue
		}
		bc := gen.BundleConversation{Platform: (*gen.ConversationPlatform)(&c.Platform), Messages: make([]gen.BundleMessage, 0, len(msgs))}
		if c.RoomID != "" {
			bc.RoomId = &c.RoomID
		} else {
			bc.UserId = &c.UserID
		}
		for _, m := range slices.Backward(msgs) {
			bm := gen.BundleMessage{Role: gen.BundleRole(m.Role), Text: m.Text, CreatedAt: &m.CreatedAt}
			if m.UserID != "" {
				bm.UserId = &m.UserID
			}
			if m.Partial {
				bm.Partial = &m.Partial
			}
			bc.Messages = append(bc.Messages, bm)
		}
		out = append(out, bc)
	}
	return &out, nil
}

// takeBundle removes the agentd member from members, a Create Agent body
// as the validator decoded it from raw, and returns it decoded from raw's
// bytes; nil when the body has none. The validator checked its shape.
func takeBundle(members map[string]any, raw json.RawMessage) (*gen.AgentBundle, error) {
	if _, ok := members["agentd"]; !ok {
		return nil, nil
	}
	delete(members, "agentd")
	var whole map[string]json.RawMessage
	if err := json.Unmarshal(raw, &whole); err != nil {
		return nil, invalidRequest("body", "must be a JSON object")
	}
	var bundle gen.AgentBundle
	if err := json.Unmarshal(whole["agentd"], &bundle); err != nil {
		return nil, invalidRequest("agentd", "must be an agentd bundle")
	}
	return &bundle, nil
}

// createWithBundle creates an agent of fields with the memories, knowledge
// and history of bundle, whole or not at all: the agent is created without
// its deleteProtection, so that a failed import can delete it, and gets it
// once everything is stored.
//
// The agent is deleted in a deferred call, so that an import that stops by
// a panic leaves nothing behind either.
func (s *Server) createWithBundle(ctx context.Context, fields map[string]json.RawMessage, bundle *gen.AgentBundle) (gen.CreateAgentResponseObject, error) {
	if err := checkBundle(bundle); err != nil {
		return nil, err
	}
	p := principalFrom(ctx)
	protect, protected := fields["deleteProtection"]
	delete(fields, "deleteProtection")
	agent, err := s.cfg.Store.Agents.CreateAgent(ctx, domain.Agent{AccountID: p.Account.ID, Fields: fields}, p.Account.AgentQuota)
	if err != nil {
		return nil, err
	}
	imported := false
	defer func() {
		if imported {
			return
		}
		if _, derr := s.cfg.Store.Agents.DeleteAgent(context.WithoutCancel(ctx), p.Account.ID, agent.ID, domain.AnyVersion); derr != nil {
			s.cfg.Logger.ErrorContext(ctx, "delete agent after failed import", "agentId", agent.ID, "error", derr)
		}
	}()
	if err := s.importBundle(ctx, p.Account.ID, agent.ID, bundle); err != nil {
		return nil, err
	}
	if protected {
		if _, _, err := s.cfg.Store.Agents.UpdateAgent(ctx, p.Account.ID, agent.ID, map[string]json.RawMessage{"deleteProtection": protect}, nil, domain.AnyVersion); err != nil {
			return nil, err
		}
	}
	imported = true
	return s.agentCreated(agent), nil
}

// checkBundle refuses, before anything is stored, what the contract's
// schema cannot say of a bundle: a conversation without a key, and a time
// outside the years an id is made of.
func checkBundle(bundle *gen.AgentBundle) error {
	for i, m := range sliceOrNil(bundle.Memories) {
		if m.CreatedAt == nil {
			continue
		}
		if err := checkYears(fmt.Sprintf("agentd.memories[%d].createdAt", i), *m.CreatedAt, firstIDYear); err != nil {
			return err
		}
	}
	for i, c := range sliceOrNil(bundle.History) {
		if deref(c.RoomId) == "" && deref(c.UserId) == "" {
			return invalidRequest(fmt.Sprintf("agentd.history[%d]", i), "needs a roomId or a userId")
		}
		for j, m := range c.Messages {
			if m.CreatedAt == nil {
				continue
			}
			if err := checkYears(fmt.Sprintf("agentd.history[%d].messages[%d].createdAt", i, j), *m.CreatedAt, firstIDYear); err != nil {
				return err
			}
		}
	}
	return nil
}

// importBundle stores bundle for the new agent agentID: its memories,
// knowledge and history.
func (s *Server) importBundle(ctx context.Context, accountID, agentID string, bundle *gen.AgentBundle) error {
	if bundle.Memories != nil || bundle.Knowledge != nil {
		a, err := s.cfg.Turns.RecallAgent(ctx, accountID, agentID)
		if err != nil {
			return err
		}
		mems := make([]domain.Memory, len(sliceOrNil(bundle.Memories)))
		for i, m := range sliceOrNil(bundle.Memories) {
			mems[i] = domain.Memory{UserID: deref(m.UserId), Text: m.Text, Source: domain.MemorySourceAPI}
			if m.CreatedAt != nil {
				mems[i].CreatedAt = *m.CreatedAt
			}
		}
		// In batches: thousands of memories are a few embedding requests
		// and transactions, and a client that went away stops the rest.
		if err := s.cfg.Recall.SaveMemories(ctx, a, mems); err != nil {
			return err
		}
		for _, k := range sliceOrNil(bundle.Knowledge) {
			if _, err := s.cfg.Recall.AddKnowledge(ctx, a, k.Name, k.Text); err != nil {
				return err
			}
		}
	}
	for _, c := range sliceOrNil(bundle.History) {
		msgs := make([]domain.Message, len(c.Messages))
		for i, m := range c.Messages {
			msgs[i] = domain.Message{Role: domain.Role(m.Role), UserID: deref(m.UserId), Text: m.Text, Partial: m.Partial != nil && *m.Partial}
			if m.CreatedAt != nil {
				msgs[i].CreatedAt = *m.CreatedAt
			}
		}
		conv := domain.ConversationRef{RoomID: deref(c.RoomId), UserID: deref(c.UserId), Platform: string(deref(c.Platform))}
		if err := s.cfg.Store.Conversations.ImportConversation(ctx, accountID, agentID, conv, msgs); err != nil {
			return err
		}
	}
	return nil
}

// sliceOrNil is the slice p points to, or nil when p is nil (an optional
// list of the request body left out).
func sliceOrNil[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}
