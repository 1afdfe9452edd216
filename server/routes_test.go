package server

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// Every operation of the contract is found from the Echo route that serves
// it, and every Echo route of an operation is in the index: none falls
// back to the spec router's regular expressions.
func TestEveryOperationIsFoundFromItsEchoRoute(t *testing.T) {
	h := newHarness(t)
	echoRoutes := map[routeKey]bool{}
	for _, r := range h.srv.echo.Routes() {
		if strings.HasPrefix(r.Path, "/v1/") && r.Path != "/v1/*" && r.Method != "echo_route_any" {
			echoRoutes[routeKey{r.Method, r.Path}] = true
		}
	}
	for key, route := range h.srv.routes.byEcho {
		if !echoRoutes[key] {
			t.Errorf("%s %s (%s) is served by no Echo route", key.method, key.path, route.Operation.OperationID)
		}
	}
	for key := range echoRoutes {
		if h.srv.routes.byEcho[key] == nil && !strings.HasPrefix(key.path, "/v1/openapi.") {
			t.Errorf("Echo route %s %s is no operation of the contract", key.method, key.path)
		}
	}
}

// The index gives what the spec router gives: the operation and the path
// parameters.
func TestIndexedRouteMatchesTheSpecRouter(t *testing.T) {
	h := newHarness(t)
	req := httptest.NewRequest("GET", "/v1/agents/agt_1/conversations/conv_2", nil)
	c := h.srv.echo.NewContext(req, httptest.NewRecorder())
	h.srv.echo.Router().Find(req.Method, req.URL.Path, c)
	if h.srv.routes.byEcho[routeKey{"GET", c.Path()}] == nil {
		t.Fatalf("Echo's route %s is not indexed", c.Path())
	}
	got, params, err := h.srv.routes.find(c)
	if err != nil {
		t.Fatal(err)
	}
	want, wantParams, err := h.srv.routes.router.FindRoute(req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Operation != want.Operation || got.PathItem != want.PathItem || got.Path != want.Path {
		t.Errorf("found %s %s, the spec router %s %s", got.Method, got.Path, want.Method, want.Path)
	}
	if len(params) != len(wantParams) || params["agentId"] != "agt_1" || params["conversationId"] != wantParams["conversationId"] {
		t.Errorf("parameters %v, the spec router's %v", params, wantParams)
	}
}
