package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oasdiff/yaml"
)

// get calls the handler without a key, as a browser opening a page does.
func get(h *harness, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

func TestContractServedWithoutKey(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.PublicURL = "https://agents.example.com/v1/" })
	for path, decode := range map[string]func([]byte, any) error{
		"/v1/openapi.json": json.Unmarshal,
		"/v1/openapi.yaml": func(b []byte, v any) error {
			j, err := yaml.YAMLToJSON(b)
			if err != nil {
				return err
			}
			return json.Unmarshal(j, v)
		},
	} {
		rec := get(h, path)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		var doc struct {
			OpenAPI string                    `json:"openapi"`
			Servers []struct{ URL string }    `json:"servers"`
			Paths   map[string]map[string]any `json:"paths"`
		}
		if err := decode(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc.OpenAPI != "3.0.3" || len(doc.Servers) != 1 || doc.Servers[0].URL != "https://agents.example.com/v1" {
			t.Errorf("%s: openapi %q, servers %+v; want 3.0.3 and the public URL", path, doc.OpenAPI, doc.Servers)
		}
		if doc.Paths["/agents"]["post"] == nil {
			t.Errorf("%s: no createAgent in %v", path, doc.Paths)
		}
	}
}

func TestConsoleAndDocsPages(t *testing.T) {
	h := newHarness(t)
	for path, want := range map[string]string{
		"/":                `src="/ui/console.js"`,
		"/docs":            `src="/ui/docs/swagger-ui-bundle.js"`,
		"/ui/console.js":   "",
		"/ui/console.css":  "",
		"/ui/docs/docs.js": "/v1/openapi.json",
	} {
		rec := get(h, path)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d, body lacks %q", path, rec.Code, want)
		}
		if strings.HasSuffix(path, ".js") && !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
			t.Errorf("%s: Content-Type %q", path, rec.Header().Get("Content-Type"))
		}
	}
	if csp := get(h, "/").Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("console page CSP %q; want it kept to its own origin", csp)
	}
	// Outside the console's files every unknown path is still the JSON 404.
	for _, path := range []string{"/ui/", "/ui/nothing.js", "/ui/../../etc/passwd", "/index.html", "/agents", "/docs/x"} {
		rec := get(h, path)
		var env struct {
			Error struct{ Code string } `json:"error"`
		}
		if rec.Code != 404 || json.Unmarshal(rec.Body.Bytes(), &env) != nil || env.Error.Code != "NOT_FOUND" {
			t.Errorf("%s: %d %s; want the JSON 404 NOT_FOUND", path, rec.Code, rec.Body)
		}
	}
}
