package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/gen"
)

// ExportAgent returns the agent as a character file that Create Agent
// accepts as it is.
func (s *Server) ExportAgent(ctx context.Context, req gen.ExportAgentRequestObject) (gen.ExportAgentResponseObject, error) {
	agent, err := s.cfg.Store.Agents.GetAgent(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	doc, err := s.cfg.Store.Agents.CharacterFile(agent)
	if err != nil {
		return nil, err
	}
	if req.Params.Include != nil && len(*req.Params.Include) > 0 {
		bundle, err := s.exportBundle(ctx, agent, *req.Params.Include)
		if err != nil {
			return nil, err
		}
		// The bundle holds what clients gave, which may not encode (a time
		// stored before imports were bounded): an error, not a panic.
		raw, err := json.Marshal(bundle)
		if err != nil {
			return nil, fmt.Errorf("server: export the bundle of %s: %w", agent.ID, err)
		}
		doc = append(append(doc[:len(doc)-1], `,"agentd":`...), append(raw, '}')...)
	}
	return gen.ExportAgent200JSONResponse{Body: gen.AgentExportEnvelope{Success: true, Data: doc}}, nil
}
