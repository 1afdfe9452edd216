package server

import (
	"fmt"
	"regexp"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
)

// specRoutes finds the spec's operation of a request from the route Echo
// already matched, without the spec router's regular expressions (a tenth
// of Get Agent's CPU). Requests Echo matched to no operation, and paths
// that escape anything, go to the spec router, which tells 404 from 405 and
// keeps path parameters escaped as the path has them.
type specRoutes struct {
	byEcho map[routeKey]*routers.Route
	router routers.Router
}

type routeKey struct{ method, path string }

// pathParam matches a parameter of an OpenAPI path template.
var pathParam = regexp.MustCompile(`\{([^}/]+)\}`)

// newSpecRoutes indexes the operations of spec by the Echo route each is
// served at: the spec's server path, then its path with {name} as :name.
func newSpecRoutes(spec *openapi3.T) (*specRoutes, error) {
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, fmt.Errorf("server: build spec router: %w", err)
	}
	if len(spec.Servers) != 1 {
		return nil, fmt.Errorf("server: the contract names %d servers, want 1", len(spec.Servers))
	}
	server := spec.Servers[0]
	r := &specRoutes{byEcho: map[routeKey]*routers.Route{}, router: router}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			key := routeKey{method, server.URL + pathParam.ReplaceAllString(path, ":$1")}
			r.byEcho[key] = &routers.Route{Spec: spec, Server: server, Path: path, PathItem: item, Method: method, Operation: op}
		}
	}
	return r, nil
}

// find returns the operation of c's request and its path parameters.
func (r *specRoutes) find(c echo.Context) (*routers.Route, map[string]string, error) {
	req := c.Request()
	route, ok := r.byEcho[routeKey{req.Method, c.Path()}]
	if !ok || req.URL.RawPath != "" || req.URL.EscapedPath() != req.URL.Path {
		return r.router.FindRoute(req)
	}
	names, values := c.ParamNames(), c.ParamValues()
	params := make(map[string]string, len(names))
	for i, name := range names {
		params[name] = values[i]
	}
	return route, params, nil
}
