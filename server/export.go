package server

import (
	"context"
	"encoding/json"

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
	doc, err := s.characterFile(agent)
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

// characterFile renders what Get Agent shows of a, every stored member and
// the defaults of those never set, without the service's own members (id,
// status, timestamps, metrics) and without any secret: settings.secrets and
// the MCP servers' headers are absent rather than masked, so the file can
// be shared and imported elsewhere without carrying a secret or a mask.
func (s *Server) characterFile(a store.Agent) (json.RawMessage, error) {
	d, err := s.storedMembers(a, store.StripSecrets)
	if err != nil {
		return nil, err
	}
	return d.close(), nil
}
