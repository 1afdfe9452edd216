package server

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/web"
	"github.com/labstack/echo/v4"
	"github.com/oasdiff/yaml"
)

// contract is the served contract: the embedded spec with `servers` set to
// the public base URL, so a client or /docs calls this server.
type contract struct {
	json, yaml []byte
}

// newContract renders the embedded spec for publicURL ({base_url}, ending
// in /v1).
func newContract(publicURL string) (contract, error) {
	raw, err := gen.GetSpecJSON()
	if err != nil {
		return contract{}, fmt.Errorf("server: load embedded spec: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return contract{}, fmt.Errorf("server: decode embedded spec: %w", err)
	}
	doc["servers"] = []map[string]string{{
		"url":         strings.TrimRight(publicURL, "/"),
		"description": "This server (AGENTD_PUBLIC_URL).",
	}}
	var c contract
	if c.json, err = json.MarshalIndent(doc, "", "  "); err != nil {
		return contract{}, fmt.Errorf("server: encode contract as JSON: %w", err)
	}
	if c.yaml, err = yaml.JSONToYAML(c.json); err != nil {
		return contract{}, fmt.Errorf("server: encode contract as YAML: %w", err)
	}
	return c, nil
}

// registerConsole mounts what a browser needs, all unauthenticated and
// outside the /v1 gate: the contract at /v1/openapi.{json,yaml} (static
// routes, so they win over the gate's /v1/*), the console at /, the API
// reference at /docs, and their assets under /ui/. Every other unknown path
// stays a JSON 404.
func (s *Server) registerConsole(e *echo.Echo, c contract) {
	e.GET("/v1/openapi.json", func(ctx echo.Context) error {
		return ctx.Blob(http.StatusOK, "application/json", c.json)
	})
	e.GET("/v1/openapi.yaml", func(ctx echo.Context) error {
		return ctx.Blob(http.StatusOK, "application/yaml", c.yaml)
	})
	e.GET("/", func(ctx echo.Context) error { return serveAsset(ctx, "index.html") })
	e.GET("/docs", func(ctx echo.Context) error { return serveAsset(ctx, "docs.html") })
	e.GET("/ui/*", func(ctx echo.Context) error { return serveAsset(ctx, path.Join("ui", ctx.Param("*"))) })
}

// pageSecurity keeps the pages to their own origin: no script, style,
// font or request may reach another host. Swagger UI sets inline styles and
// shows data: images.
const pageSecurity = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// serveAsset answers with one file of web.Assets, or the JSON 404.
func serveAsset(ctx echo.Context, name string) error {
	body, err := fs.ReadFile(web.Assets, name)
	if err != nil {
		// An embedded file cannot fail to read: the name is missing, not
		// valid (it climbs out of the tree) or a directory.
		return errNotFound
	}
	h := ctx.Response().Header()
	// Names carry no content hash: revalidate on each load.
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	if strings.HasSuffix(name, ".html") {
		h.Set("Content-Security-Policy", pageSecurity)
	}
	kind := mime.TypeByExtension(path.Ext(name))
	if kind == "" {
		kind = "application/octet-stream"
	}
	return ctx.Blob(http.StatusOK, kind, body)
}
