package server

import (
	"context"

	"github.com/agentd/agentd/gen"
)

// GetStatus says what the server can do for the caller's agents: its
// version, the default provider and which providers it can call.
func (s *Server) GetStatus(ctx context.Context, _ gen.GetStatusRequestObject) (gen.GetStatusResponseObject, error) {
	states := s.cfg.Turns.Providers()
	providers := make([]gen.ProviderStatus, len(states))
	for i, p := range states {
		providers[i] = gen.ProviderStatus{Name: gen.ModelProviderName(p.Name), Configured: p.Configured}
	}
	return gen.GetStatus200JSONResponse{Body: gen.StatusEnvelope{Success: true, Data: gen.Status{
		Version: s.cfg.Version, DefaultProvider: s.cfg.DefaultProvider, Providers: providers}}}, nil
}
