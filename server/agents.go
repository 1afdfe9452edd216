package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// CreateAgent stores a new agent within the account's quota.
func (s *Server) CreateAgent(ctx context.Context, req gen.CreateAgentRequestObject) (gen.CreateAgentResponseObject, error) {
	p := principalFrom(ctx)
	members, raw, err := agentBodyOf(ctx, req.Body)
	if err != nil {
		return nil, err
	}
	bundle, err := takeBundle(members, raw)
	if err != nil {
		return nil, err
	}
	body, err := s.parseAgentBody(members, true)
	if err == nil {
		err = s.checkAllowed(ctx, p.Account.ID, body.fields)
	}
	if err != nil {
		return nil, err
	}
	if bundle != nil {
		return s.createWithBundle(ctx, body.fields, bundle)
	}
	agent, err := s.cfg.Store.Agents.CreateAgent(ctx, domain.Agent{AccountID: p.Account.ID, Fields: body.fields}, p.Account.AgentQuota)
	if err != nil {
		return nil, err
	}
	return s.agentCreated(agent), nil
}

// agentCreated is Create Agent's answer for agent.
func (s *Server) agentCreated(agent domain.Agent) gen.CreateAgent201JSONResponse {
	return gen.CreateAgent201JSONResponse{Body: gen.AgentCreatedEnvelope{Success: true, Data: gen.AgentCreated{
		Id: agent.ID, Name: agent.Name, Status: gen.AgentStatus(agent.Status),
		CreatedAt:   timestamp(agent.CreatedAt),
		ApiEndpoint: strings.TrimRight(s.cfg.PublicURL, "/") + "/agents/" + agent.ID,
	}}}
}

// ListAgents returns one page of the account's agents.
func (s *Server) ListAgents(ctx context.Context, req gen.ListAgentsRequestObject) (gen.ListAgentsResponseObject, error) {
	q := listQuery(req.Params)
	agents, total, err := s.cfg.Store.Agents.ListAgents(ctx, principalFrom(ctx).Account.ID, q)
	if err != nil {
		return nil, err
	}
	return agentListResponse{agents: agents, pagination: pagination(q.Page, q.Limit, total)}, nil
}

// listQuery applies the documented defaults to the validated parameters.
func listQuery(p gen.ListAgentsParams) domain.ListQuery {
	q := domain.ListQuery{Page: 1, Limit: 20, SortBy: "createdAt", Desc: true}
	if p.Page != nil {
		q.Page = *p.Page
	}
	if p.Limit != nil {
		q.Limit = *p.Limit
	}
	if p.Status != nil {
		q.Status = domain.Status(*p.Status)
	}
	if p.SortBy != nil {
		q.SortBy = domain.SortField(*p.SortBy)
	}
	if p.Order != nil {
		q.Desc = *p.Order == gen.Desc
	}
	return q
}

// GetAgent returns the whole agent with its metrics, and its ETag; 304
// when If-None-Match names it.
func (s *Server) GetAgent(ctx context.Context, req gen.GetAgentRequestObject) (gen.GetAgentResponseObject, error) {
	doc, err := s.cfg.Store.Agents.GetAgentDocument(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	if noneMatch(req.Params.IfNoneMatch, doc.Version) {
		return gen.GetAgent304Response{Headers: gen.NotModifiedResponseHeaders{ETag: etag(doc.Version)}}, nil
	}
	return agentDocumentResponse{doc: doc, etag: *etag(doc.Version)}, nil
}

// UpdateAgent replaces the members present in the body.
func (s *Server) UpdateAgent(ctx context.Context, req gen.UpdateAgentRequestObject) (gen.UpdateAgentResponseObject, error) {
	members, _, err := agentBodyOf(ctx, req.Body)
	if err != nil {
		return nil, err
	}
	body, err := s.parseAgentBody(members, false)
	accountID := principalFrom(ctx).Account.ID
	if err == nil {
		err = s.checkAllowed(ctx, accountID, body.fields)
	}
	if err != nil {
		return nil, err
	}
	if err := s.mergeWithStored(ctx, accountID, req.AgentId, body.fields); err != nil {
		return nil, err
	}
	agent, changes, err := s.cfg.Store.Agents.UpdateAgent(ctx, accountID, req.AgentId, body.fields, body.status, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	if changes == nil {
		changes = []string{}
	}
	return gen.UpdateAgent200JSONResponse{Body: gen.AgentUpdatedEnvelope{Success: true, Data: gen.AgentUpdated{
		Id: agent.ID, Name: agent.Name, Status: gen.AgentStatus(agent.Status),
		UpdatedAt: timestamp(agent.UpdatedAt), Changes: changes,
	}}, Headers: gen.UpdateAgent200ResponseHeaders{ETag: etag(agent.Version)}}, nil
}

// DeleteAgent removes the agent and everything that belongs to it.
func (s *Server) DeleteAgent(ctx context.Context, req gen.DeleteAgentRequestObject) (gen.DeleteAgentResponseObject, error) {
	agent, err := s.cfg.Store.Agents.DeleteAgent(ctx, principalFrom(ctx).Account.ID, req.AgentId, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	return gen.DeleteAgent200JSONResponse{Body: gen.AgentDeletedEnvelope{Success: true, Data: gen.AgentDeleted{
		Id: agent.ID, Name: agent.Name, DeletedAt: timestamp(time.Now()),
		Message: fmt.Sprintf("Agent '%s' was deleted with its conversations, messages, metrics and logs; its platform integrations are disconnected.", agent.Name),
	}}}, nil
}

// mergeWithStored completes a PATCH from the stored agent where the body
// alone cannot say what the client meant: a new modelProvider without a
// model moves an agent on the old provider's default model to the new
// provider's default. It reads the agent only then. (Secrets sent back
// masked are the store's to merge, inside its update transaction.)
func (s *Server) mergeWithStored(ctx context.Context, accountID, id string, fields map[string]json.RawMessage) error {
	_, hasModel := fields["model"]
	provider, hasProvider := fields["modelProvider"]
	if hasModel || !hasProvider {
		return nil
	}
	agent, err := s.cfg.Store.Agents.GetAgent(ctx, accountID, id)
	if err != nil {
		return err
	}
	if agent.Model == s.cfg.DefaultModels[agent.ModelProvider] {
		var name string
		_ = json.Unmarshal(provider, &name) // validated: a provider name
		fields["model"] = mustJSON(s.cfg.DefaultModels[name])
	}
	return nil
}

// checkAllowed refuses a settings.agents.allow entry that is not an agent
// of the account: another account's agent is as unknown as a made-up id.
func (s *Server) checkAllowed(ctx context.Context, accountID string, fields map[string]json.RawMessage) error {
	for i, id := range agent.Document(fields).Asks().Allow {
		_, err := s.cfg.Store.Agents.GetAgent(ctx, accountID, id)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			return invalidRequest(agent.AllowedMember(i), "is not an agent of this account")
		case err != nil:
			return err
		}
	}
	return nil
}
