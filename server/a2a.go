package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentd/agentd/a2a"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/turn"
	"github.com/labstack/echo/v4"
)

// GetA2AAgentCard answers the agent's A2A agent card, in the shape of the
// protocol version the request names.
func (s *Server) GetA2AAgentCard(ctx context.Context, req gen.GetA2AAgentCardRequestObject) (gen.GetA2AAgentCardResponseObject, error) {
	agent, err := s.cfg.Store.Agents.GetAgent(ctx, principalFrom(ctx).Account.ID, req.AgentId)
	if err != nil {
		return nil, err
	}
	return a2aCardResponse{card: a2a.Card(agent, s.a2aURL(agent.ID), deref(req.Params.A2AVersion))}, nil
}

// CallA2A answers one A2A JSON-RPC call; the a2a package reads the body.
func (s *Server) CallA2A(ctx context.Context, req gen.CallA2ARequestObject) (gen.CallA2AResponseObject, error) {
	var body []byte
	if req.Body != nil {
		body = *req.Body
	}
	reply := s.a2a.Serve(ctx, a2a.Call{AccountID: principalFrom(ctx).Account.ID, AgentID: req.AgentId,
		RequestID: requestIDFrom(ctx), Version: deref(req.Params.A2AVersion), Body: body})
	return &a2aRPCResponse{s: s, ctx: ctx, reply: reply}, nil
}

// a2aTurns are the turns the A2A handler runs: the server's, whose
// detached runs keep their events for the run's stream, as every run of
// the API does.
type a2aTurns struct {
	Turns
	s *Server
}

var _ a2a.Turns = a2aTurns{}

// Detach runs t's run on its own, its events kept by the streams.
func (a a2aTurns) Detach(ctx context.Context, t *turn.Turn) <-chan turn.Outcome {
	return a.s.detach(ctx, t, false).outcome
}

// a2aURL is the agent's A2A JSON-RPC endpoint.
func (s *Server) a2aURL(agentID string) string {
	return strings.TrimRight(s.cfg.PublicURL, "/") + "/agents/" + agentID + "/a2a"
}

// explainProblem puts err in the API's terms for the a2a package, through
// the one mapping of errors.go (which logs internal errors).
func (s *Server) explainProblem(err error, requestID string) a2a.Problem {
	ae := s.toAPIError(err, requestID)
	return a2a.Problem{Code: string(ae.Code), Message: ae.Message, Details: ae.Details}
}

// a2aCardResponse writes an agent card; it varies with A2A-Version.
type a2aCardResponse struct{ card any }

// VisitGetA2AAgentCardResponse writes the card.
func (r a2aCardResponse) VisitGetA2AAgentCardResponse(w http.ResponseWriter) error {
	w.Header().Set("Vary", "A2A-Version")
	return writeJSON(w, r.card)
}

// a2aRPCResponse writes a JSON-RPC answer: one response, or a stream of
// them as server-sent events through the writer every stream uses.
type a2aRPCResponse struct {
	s     *Server
	ctx   context.Context
	reply a2a.Reply
}

// VisitCallA2AResponse writes the answer.
func (r *a2aRPCResponse) VisitCallA2AResponse(w http.ResponseWriter) error {
	if r.reply.Stream == nil {
		return writeJSON(w, r.reply.Body)
	}
	ctx, gone := context.WithCancel(r.ctx)
	defer gone()
	ev, err := r.s.openStream(w, gone)
	if err != nil {
		r.reply.Cancel() // the client is gone before the first byte
		return nil
	}
	stopPings := ev.pingEvery(r.s.cfg.PingInterval)
	defer stopPings()
	r.reply.Stream(ctx, ev.event)
	return nil
}

// writeJSON writes v as a 200 JSON body, without escaping HTML.
func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// a2aParseError is the JSON-RPC answer to an A2A call whose body is not
// JSON (the generated binder refuses it before CallA2A runs): JSON-RPC's
// parse error, not the envelope. ok is false for any other error.
func a2aParseError(c echo.Context, err error) (body any, ok bool) {
	var he *echo.HTTPError
	if c.Request().Method != http.MethodPost || c.Path() != "/v1/agents/:agentId/a2a" ||
		!errors.As(err, &he) || he.Code != http.StatusBadRequest {
		return nil, false
	}
	return map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": a2a.CodeParseError, "message": "Invalid JSON payload."}}, true
}
