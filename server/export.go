package server

import (
	"context"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/store"
)

// ExportAgent returns the agent as a character file that Create Agent
// accepts as it is.
func (s *Server) ExportAgent(ctx context.Context, req gen.ExportAgentRequestObject) (gen.ExportAgentResponseObject, error) {
	agent, err := s.cfg.Store.GetAgent(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	doc, err := store.CharacterFile(agent)
	if err != nil {
		return nil, err
	}
	if req.Params.Include != nil && len(*req.Params.Include) > 0 {
		bundle, err := s.exportBundle(ctx, agent, *req.Params.Include)
		if err != nil {
			return nil, err
		}
		doc = append(append(doc[:len(doc)-1], `,"agentd":`...), append(mustJSON(bundle), '}')...)
	}
	return gen.ExportAgent200JSONResponse{Body: gen.AgentExportEnvelope{Success: true, Data: doc}}, nil
}
