package server

import (
	"context"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/recall"
)

// Recall stores and ranks memories and knowledge; *recall.Service
// implements it.
type Recall interface {
	SaveMemory(ctx context.Context, a recall.Agent, m domain.Memory, dropOldest bool) (domain.Memory, error)
	SaveMemories(ctx context.Context, a recall.Agent, ms []domain.Memory) error
	Memories(ctx context.Context, a recall.Agent, scope []string, query string, k int) ([]domain.Memory, error)
	AddKnowledge(ctx context.Context, a recall.Agent, name, text string) (domain.KnowledgeDoc, error)
}

var _ Recall = (*recall.Service)(nil)

// The bounds of the memory and knowledge operations.
const (
	// maxRankedMemories is how many memories a search with q answers.
	maxRankedMemories = 20
	// maxKnowledgeText bounds a knowledge document, in bytes.
	maxKnowledgeText = 1_000_000
)

// CreateMemory stores a memory given by a client.
func (s *Server) CreateMemory(ctx context.Context, req gen.CreateMemoryRequestObject) (gen.CreateMemoryResponseObject, error) {
	a, err := s.cfg.Turns.RecallAgent(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	m, err := s.cfg.Recall.SaveMemory(ctx, a, domain.Memory{UserID: deref(req.Body.UserId), Text: req.Body.Text, Source: domain.MemorySourceAPI}, false)
	if err != nil {
		return nil, err
	}
	return gen.CreateMemory201JSONResponse{Body: gen.MemoryEnvelope{Success: true, Data: memory(m)}}, nil
}

// ListMemories lists the agent's memories newest first, or the most
// relevant to q.
func (s *Server) ListMemories(ctx context.Context, req gen.ListMemoriesRequestObject) (gen.ListMemoriesResponseObject, error) {
	acct, p := principalFrom(ctx).Account.ID, req.Params
	if p.Q != nil {
		return s.searchMemories(ctx, acct, req.AgentId, deref(p.UserId), *p.Q)
	}
	page, limit := pageParams(p.Page, p.Limit)
	mems, total, err := s.cfg.Store.Memories.ListMemories(ctx, acct, req.AgentId, domain.MemoryQuery{Page: page, Limit: limit, UserID: (*string)(p.UserId)})
	if err != nil {
		return nil, err
	}
	return gen.ListMemories200JSONResponse{Body: gen.MemoryListEnvelope{Success: true, Data: gen.MemoryList{
		Items: memories(mems), Pagination: pagination(page, limit, total)}}}, nil
}

// searchMemories answers the at most maxRankedMemories memories most
// relevant to q, of userID when given, else of the whole agent.
func (s *Server) searchMemories(ctx context.Context, acct, agentID, userID, q string) (gen.ListMemoriesResponseObject, error) {
	a, err := s.cfg.Turns.RecallAgent(ctx, acct, agentID)
	if err != nil {
		return nil, err
	}
	var scope []string // every memory of the agent
	if userID != "" {
		scope = []string{userID}
	}
	mems, err := s.cfg.Recall.Memories(ctx, a, scope, q, maxRankedMemories)
	if err != nil {
		return nil, err
	}
	return gen.ListMemories200JSONResponse{Body: gen.MemoryListEnvelope{Success: true, Data: gen.MemoryList{
		Items: memories(mems), Pagination: pagination(1, maxRankedMemories, int64(len(mems)))}}}, nil
}

// ForgetUser deletes every memory of a user.
func (s *Server) ForgetUser(ctx context.Context, req gen.ForgetUserRequestObject) (gen.ForgetUserResponseObject, error) {
	n, err := s.cfg.Store.Memories.DeleteUserMemories(ctx, principalFrom(ctx).Account.ID, req.AgentId, string(req.Params.UserId))
	if err != nil {
		return nil, err
	}
	return gen.ForgetUser200JSONResponse{Body: gen.MemoriesDeletedEnvelope{Success: true, Data: gen.MemoriesDeleted{Deleted: int(n)}}}, nil
}

// DeleteMemory deletes one memory.
func (s *Server) DeleteMemory(ctx context.Context, req gen.DeleteMemoryRequestObject) (gen.DeleteMemoryResponseObject, error) {
	if err := s.cfg.Store.Memories.DeleteMemory(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.MemoryId); err != nil {
		return nil, err
	}
	return gen.DeleteMemory200JSONResponse{Body: gen.IdEnvelope{Success: true, Data: gen.IdOnly{Id: req.MemoryId}}}, nil
}

// CreateKnowledge adds a document to the agent's knowledge.
func (s *Server) CreateKnowledge(ctx context.Context, req gen.CreateKnowledgeRequestObject) (gen.CreateKnowledgeResponseObject, error) {
	if len(req.Body.Text) > maxKnowledgeText {
		return nil, invalidRequest("text", "must be at most 1000000 bytes")
	}
	a, err := s.cfg.Turns.RecallAgent(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	doc, err := s.cfg.Recall.AddKnowledge(ctx, a, req.Body.Name, req.Body.Text)
	if err != nil {
		return nil, err
	}
	return gen.CreateKnowledge201JSONResponse{Body: gen.KnowledgeDocumentEnvelope{Success: true, Data: knowledgeDoc(doc)}}, nil
}

// ListKnowledge lists the agent's documents, newest first.
func (s *Server) ListKnowledge(ctx context.Context, req gen.ListKnowledgeRequestObject) (gen.ListKnowledgeResponseObject, error) {
	page, limit := pageParams(req.Params.Page, req.Params.Limit)
	docs, total, err := s.cfg.Store.Knowledge.ListKnowledge(ctx, principalFrom(ctx).Account.ID, req.AgentId, page, limit)
	if err != nil {
		return nil, err
	}
	items := make([]gen.KnowledgeDocument, len(docs))
	for i, d := range docs {
		items[i] = knowledgeDoc(d)
	}
	return gen.ListKnowledge200JSONResponse{Body: gen.KnowledgeListEnvelope{Success: true, Data: gen.KnowledgeDocumentList{
		Items: items, Pagination: pagination(page, limit, total)}}}, nil
}

// DeleteKnowledge deletes a document and its chunks.
func (s *Server) DeleteKnowledge(ctx context.Context, req gen.DeleteKnowledgeRequestObject) (gen.DeleteKnowledgeResponseObject, error) {
	if err := s.cfg.Store.Knowledge.DeleteKnowledge(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.KnowledgeId); err != nil {
		return nil, err
	}
	return gen.DeleteKnowledge200JSONResponse{Body: gen.IdEnvelope{Success: true, Data: gen.IdOnly{Id: req.KnowledgeId}}}, nil
}

// PreviewContext answers what the next turn would send the model.
func (s *Server) PreviewContext(ctx context.Context, req gen.PreviewContextRequestObject) (gen.PreviewContextResponseObject, error) {
	p, err := s.cfg.Turns.Preview(ctx, apiTurn(ctx, req.AgentId, req.Body))
	if err != nil {
		return nil, err
	}
	out := gen.ContextPreview{System: p.System, EstimatedTokens: p.EstimatedTokens,
		History: make([]gen.ContextMessage, len(p.History)), Memories: make([]gen.ContextMemory, len(p.Memories)),
		Knowledge: make([]gen.ContextKnowledge, len(p.Knowledge)), Tools: make([]gen.ContextTool, len(p.Tools))}
	for i, m := range p.History {
		out.History[i] = gen.ContextMessage{Role: historyRole(string(m.Role)), Text: m.Content}
	}
	for i, m := range p.Memories {
		out.Memories[i] = gen.ContextMemory{Id: m.ID, Text: m.Text}
	}
	for i, c := range p.Knowledge {
		out.Knowledge[i] = gen.ContextKnowledge{DocumentId: c.DocumentID, Name: c.DocumentName, Text: c.Text}
	}
	for i, t := range p.Tools {
		out.Tools[i] = gen.ContextTool{Name: t.Name, Source: gen.ToolSource(t.Source)}
	}
	return gen.PreviewContext200JSONResponse{Body: gen.ContextPreviewEnvelope{Success: true, Data: out}}, nil
}

// historyRole is the API's role of a provider message role.
func historyRole(role string) gen.MessageRole {
	if role == string(domain.RoleUser) {
		return gen.MessageRoleUser
	}
	return gen.MessageRoleAgent
}

func memory(m domain.Memory) gen.AgentMemory {
	return gen.AgentMemory{Id: m.ID, AgentId: m.AgentID, UserId: optional[string](m.UserID), Text: m.Text,
		Source: gen.MemorySource(m.Source), ConversationId: optional[string](m.ConversationID), CreatedAt: timestamp(m.CreatedAt)}
}

func memories(ms []domain.Memory) []gen.AgentMemory {
	out := make([]gen.AgentMemory, len(ms))
	for i, m := range ms {
		out[i] = memory(m)
	}
	return out
}

func knowledgeDoc(d domain.KnowledgeDoc) gen.KnowledgeDocument {
	return gen.KnowledgeDocument{Id: d.ID, Name: d.Name, Chunks: d.Chunks, Bytes: int(d.Bytes), CreatedAt: timestamp(d.CreatedAt)}
}
