package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/limit"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpListLimit is how many agents list_agents returns at most.
const mcpListLimit = 100

// mcpAgent is an agent as list_agents shows it.
type mcpAgent struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Status        string `json:"status"`
	ModelProvider string `json:"modelProvider"`
	Model         string `json:"model"`
}

type mcpAgentList struct {
	Agents []mcpAgent `json:"agents"`
}

type mcpListArgs struct {
	Status string `json:"status,omitempty" jsonschema:"only agents in this status: active, inactive or error"`
}

type mcpSendArgs struct {
	AgentID string `json:"agentId" jsonschema:"the agent's id, from list_agents"`
	Text    string `json:"text" jsonschema:"the message"`
	UserID  string `json:"userId,omitempty" jsonschema:"who speaks: the agent keeps a conversation per user"`
	RoomID  string `json:"roomId,omitempty" jsonschema:"a shared conversation the message belongs to"`
}

// mcpServer serves POST /v1/mcp through the MCP SDK's streamable HTTP
// handler, after the gate (authentication, limits, body checks). It is
// stateless, so any replica answers any request, and answers JSON.
type mcpServer struct {
	s       *Server
	handler http.Handler
	// message checks send_message's text, userId and roomId by the
	// contract's MessageRequest, as Send Message's are.
	message *openapi3.Schema
	// sendOutput and listOutput are the tools' output schemas.
	sendOutput, listOutput *jsonschema.Schema
}

func newMCPServer(s *Server, spec *openapi3.T) (*mcpServer, error) {
	ref := spec.Components.Schemas["MessageRequest"]
	if ref == nil || ref.Value == nil {
		return nil, errors.New("server: the contract has no MessageRequest schema")
	}
	m := &mcpServer{s: s, message: ref.Value}
	var err error
	if m.sendOutput, m.listOutput, err = mcpOutputSchemas(); err != nil {
		return nil, err
	}
	m.handler = mcp.NewStreamableHTTPHandler(m.serverFor, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return m, nil
}

// mcpOutputSchemas are the output schemas of send_message and
// list_agents. Inferred from the Go types alone, they would be wrong: a
// JSONObject (a tool call's arguments) is a json.RawMessage, which the
// inference takes for a nullable array of bytes, and a slice is nullable
// although list_agents always answers an array.
func mcpOutputSchemas() (send, list *jsonschema.Schema, err error) {
	send, err = jsonschema.For[gen.MessageReply](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[gen.JSONObject](): {Type: "object"},
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("server: send_message's output schema: %w", err)
	}
	list, err = jsonschema.For[mcpAgentList](nil)
	if err != nil {
		return nil, nil, fmt.Errorf("server: list_agents's output schema: %w", err)
	}
	agents := list.Properties["agents"]
	agents.Type, agents.Types = "array", nil
	return send, list, nil
}

// httpRequestKey keys, in the MCP operation's context, the request itself:
// the SDK serves it, headers and all.
type httpRequestKey struct{}

// withHTTPRequest is the strict middleware that hands the MCP operation
// its request.
func withHTTPRequest(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "CallMcp" {
		return f
	}
	return func(c echo.Context, request any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), httpRequestKey{}, r)))
		return f(c, request)
	}
}

// CallMcp answers MCP's JSON-RPC through the SDK's handler, with the body
// the gate checked (the strict handler has read it) put back.
func (s *Server) CallMcp(ctx context.Context, req gen.CallMcpRequestObject) (gen.CallMcpResponseObject, error) {
	r, ok := ctx.Value(httpRequestKey{}).(*http.Request)
	if !ok {
		return nil, errors.New("server: the MCP operation was called without its request")
	}
	raw, err := json.Marshal(req.Body)
	if err != nil {
		return nil, fmt.Errorf("server: encode the MCP message: %w", err)
	}
	r = r.Clone(ctx)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	return mcpResponse{handler: s.mcp.handler, r: r}, nil
}

// mcpResponse is the SDK's answer to an MCP request.
type mcpResponse struct {
	handler http.Handler
	r       *http.Request
}

// VisitCallMcpResponse serves the request.
func (m mcpResponse) VisitCallMcpResponse(w http.ResponseWriter) error {
	m.handler.ServeHTTP(w, m.r)
	return nil
}

// serverFor is the MCP server of the request's account: its tools act
// with the request's principal.
func (m *mcpServer) serverFor(r *http.Request) *mcp.Server {
	p, requestID := principalFrom(r.Context()), requestIDFrom(r.Context())
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentd", Title: "agentd agents", Version: m.s.cfg.Version}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_agents", OutputSchema: m.listOutput,
		Description: "Lists the agents of the account (the first 100, newest first)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, args mcpListArgs) (*mcp.CallToolResult, mcpAgentList, error) {
			list, err := m.listAgents(ctx, p, args)
			return nil, list, m.toolError(ctx, err, requestID)
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "send_message", OutputSchema: m.sendOutput,
		Description: "Sends a message to an agent and returns its reply, as Send Message does (history, limits, tools)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, args mcpSendArgs) (*mcp.CallToolResult, gen.MessageReply, error) {
			reply, err := m.sendMessage(ctx, p, requestID, args)
			if err != nil {
				return nil, gen.MessageReply{}, m.toolError(ctx, err, requestID)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: reply.Response}}}, reply, nil
		})
	return srv
}

func (m *mcpServer) listAgents(ctx context.Context, p domain.Principal, args mcpListArgs) (mcpAgentList, error) {
	q := domain.ListQuery{Page: 1, Limit: mcpListLimit, SortBy: "createdAt", Desc: true, Status: domain.Status(args.Status)}
	agents, _, err := m.s.cfg.Store.Agents.ListAgents(ctx, p.Account.ID, q)
	if err != nil {
		return mcpAgentList{}, err
	}
	out := mcpAgentList{Agents: make([]mcpAgent, len(agents))}
	for i, a := range agents {
		out.Agents[i] = mcpAgent{ID: a.ID, Name: a.Name, Status: string(a.Status), ModelProvider: a.ModelProvider, Model: a.Model}
	}
	return out, nil
}

// sendMessage takes the turn Send Message takes, with the same checks of
// the body, the same limit on the agent's messages a minute and on its
// turns in flight, and waits for its run as Send Message does; a run still
// going after the wait is a failed call naming it (RUN_PENDING).
func (m *mcpServer) sendMessage(ctx context.Context, p domain.Principal, requestID string, args mcpSendArgs) (gen.MessageReply, error) {
	if p.Key.Scope != domain.ScopeWrite {
		return gen.MessageReply{}, errForbidden
	}
	body := map[string]any{"text": args.Text}
	req := gen.MessageRequest{Text: args.Text}
	if args.UserID != "" {
		body["userId"], req.UserId = args.UserID, &args.UserID
	}
	if args.RoomID != "" {
		body["roomId"], req.RoomId = args.RoomID, &args.RoomID
	}
	if err := m.message.VisitJSON(body); err != nil {
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			return gen.MessageReply{}, invalidRequest(schemaField(se), schemaReason(se))
		}
		return gen.MessageReply{}, err
	}
	// Counted as Send Message is, on the agent's one message counter.
	counted, err := limit.Check(ctx, m.s.cfg.Counter, messageRule(p, args.AgentID))
	if err != nil {
		return gen.MessageReply{}, err
	}
	if !counted.Allowed {
		return gen.MessageReply{}, errRateLimited(counted.RetryAfter(time.Now()), nil)
	}
	// The tools act as the request that reached them through the gate.
	ctx = context.WithValue(ctx, principalKey{}, p)
	ctx = context.WithValue(ctx, requestIDKey{}, requestID)
	in := apiTurn(ctx, args.AgentID, &req)
	in.Source = domain.SourceMCP
	t, err := m.s.cfg.Turns.Accept(ctx, in)
	if err != nil {
		return gen.MessageReply{}, err
	}
	res, err := m.s.awaitReply(ctx, t)
	if err != nil {
		return gen.MessageReply{}, err
	}
	return messageReply(res), nil
}

// toolError is err as a failed tool call shows it: the contract's code and
// message, mapped by the one table of errors.
func (m *mcpServer) toolError(ctx context.Context, err error, requestID string) error {
	if err == nil {
		return nil
	}
	ae := m.s.toAPIErrorContext(ctx, err, requestID)
	if ae.Status >= 500 && ae.Code != gen.RUNPENDING { // a run that goes on is no failure
		m.s.cfg.Logger.ErrorContext(ctx, "mcp tool failed", "error", err, "requestId", requestID)
	}
	return fmt.Errorf("%s: %s", ae.Code, ae.Message)
}
