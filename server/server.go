package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/agentd/agentd/a2a"
	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/streamlog"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server implements the generated strict interface over the store and the
// model providers.
type Server struct {
	cfg    Config
	routes *specRoutes
	// validation are the request validator's options, built once;
	// selfReadValidation the same without the body (selfReadBodies).
	validation, selfReadValidation *openapi3filter.Options
	echo                           *echo.Echo
	handler                        http.Handler // echo, traced when cfg.Tracing
	metrics                        *serverMetrics
	members                        agentMembers
	mcp                            *mcpServer
	// keepingValidation are validation keeping the decoded body for its
	// handler (decodedBodyOps).
	keepingValidation *openapi3filter.Options
	// a2a answers the agents' A2A JSON-RPC calls.
	a2a *a2a.Handler
	// streams runs this replica's streamed replies and finds the others'.
	streams *streamlog.Hub
}

// Close lets the streamed replies running end until ctx ends, cancels
// those left (their partial replies are stored) and stops.
func (s *Server) Close(ctx context.Context) { s.streams.Close(ctx) }

var _ gen.StrictServerInterface = (*Server)(nil)

// New builds the server and its HTTP handler.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.Turns == nil {
		return nil, errors.New("server: Turns is required")
	}
	if err := cfg.Store.check(); err != nil {
		return nil, err
	}
	spec, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("server: load embedded spec: %w", err)
	}
	if err := checkEndpointLimits(spec, endpointLimits); err != nil {
		return nil, err
	}
	routes, err := newSpecRoutes(spec)
	if err != nil {
		return nil, err
	}
	metrics, err := newServerMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	members, err := agentMembersOf(spec)
	if err != nil {
		return nil, err
	}
	// The store renders Get Agent's documents with agent.EmptyMembers.
	if !maps.EqualFunc(members.empty, agent.EmptyMembers(), func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		return nil, fmt.Errorf("server: the contract's empty agent members %v are not agent.EmptyMembers", members.empty)
	}
	s := &Server{cfg: cfg, routes: routes, metrics: metrics, members: members, validation: &openapi3filter.Options{
		// The gate authenticates before validating; the spec's bearerAuth
		// scheme is documentation for the validator.
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		// Validation messages must never echo schemas or values to clients.
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
	}}
	selfRead := *s.validation
	selfRead.ExcludeRequestBody = true
	s.selfReadValidation = &selfRead
	keeping := *s.validation
	keeping.KeepValidatedValue = true
	s.keepingValidation = &keeping
	if s.a2a, err = a2a.New(a2a.Config{Turns: a2aTurns{Turns: cfg.Turns, s: s}, Tasks: cfg.Store.Tasks, Explain: s.explainProblem,
		Logger: cfg.Logger, TaskLease: cfg.ReplicaLostAfter, RunWait: cfg.RunWait}); err != nil {
		return nil, err
	}
	served, err := newContract(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	if s.mcp, err = newMCPServer(s, spec); err != nil {
		return nil, err
	}
	s.echo = s.newEcho(served)
	backend := cfg.Streams
	if backend == nil {
		backend = cfg.Store.Streams
	}
	s.streams = streamlog.New(streamlog.Config{Backend: backend, Logger: cfg.Logger, MaxStreamBytes: cfg.MaxStreamBytes,
		Unwatched: cfg.UnwatchedStream, LostAfter: cfg.ReplicaLostAfter, LostEvent: lostEvent()})
	s.handler = s.echo
	if cfg.Tracing {
		s.handler = traced(s.echo)
	}
	return s, nil
}

// Handler is the whole HTTP surface: the API under /v1, the contract at
// /v1/openapi.{json,yaml}, the console at /, /docs, /healthz, /readyz and,
// when configured, /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves the Prometheus metrics of the configured registry.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})
}

func (s *Server) newEcho(served contract) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(nameSpan, s.requestID, s.observe, s.recoverPanics)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", s.readyz)
	s.registerConsole(e, served)
	if s.cfg.ServeMetrics {
		e.GET("/metrics", echo.WrapHandler(s.MetricsHandler()))
	}
	api := e.Group("/v1", s.gate)
	// Every path under /v1 goes through the gate, which answers unknown
	// paths and methods with the envelope.
	api.Any("/*", func(echo.Context) error { return errNotFound })
	gen.RegisterHandlersWithBaseURL(api, gen.NewStrictHandler(s, []gen.StrictMiddlewareFunc{withHTTPRequest}), "")
	return e
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.cfg.Store.Accounts.Ping(ctx); err != nil {
		s.cfg.Logger.Warn("readiness check failed", "error", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "database unreachable"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
