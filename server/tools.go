package server

import (
	"context"

	"github.com/agentd/agentd/gen"
)

// ListAgentTools lists the tools the agent's next turn would offer.
func (s *Server) ListAgentTools(ctx context.Context, req gen.ListAgentToolsRequestObject) (gen.ListAgentToolsResponseObject, error) {
	list, err := s.cfg.Turns.ListTools(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	data := gen.AgentTools{Items: make([]gen.AgentTool, len(list.Tools)), Errors: make([]gen.AgentToolServerError, len(list.Errors))}
	for i, t := range list.Tools {
		data.Items[i] = gen.AgentTool{Name: t.Name, Source: gen.ToolSource(t.Source), Server: optional[string](t.Server),
			Description: t.Description, Parameters: gen.JSONObject(t.Parameters), Offered: i < list.Offered}
	}
	for i, e := range list.Errors {
		data.Errors[i] = gen.AgentToolServerError{Server: e.Server, Reason: e.Reason}
	}
	return gen.ListAgentTools200JSONResponse{Body: gen.AgentToolsEnvelope{Success: true, Data: data}}, nil
}
