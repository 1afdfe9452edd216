package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// specPath is the contract every response is checked against.
const specPath = "../../openapi.yaml"

// contract validates responses against openapi.yaml.
type contract struct {
	spec   *openapi3.T
	router routers.Router
}

// loadContract loads and checks openapi.yaml.
func loadContract(t testing.TB) *contract {
	t.Helper()
	spec, err := openapi3.NewLoader().LoadFromFile(specPath)
	if err != nil {
		t.Fatalf("load %s: %v", specPath, err)
	}
	if err := spec.Validate(context.Background()); err != nil {
		t.Fatalf("%s is invalid: %v", specPath, err)
	}
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &contract{spec: spec, router: router}
}

// openAIPaths answer in OpenAI's shapes: an error outside their operations
// (a wrong method) is an OpenAIErrorResponse, not the envelope.
var openAIPaths = map[string]bool{"/v1/chat/completions": true, "/v1/models": true}

// check validates res (whose body is body) against the operation req
// matched, or against ErrorEnvelope (OpenAIErrorResponse on the OpenAI
// paths) outside the operations. Stream bodies are checked event by event
// against the schema their operation names in x-event-schema.
func (c *contract) check(t testing.TB, req *http.Request, res *http.Response, body []byte) {
	t.Helper()
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		schema := "ErrorEnvelope"
		if openAIPaths[req.URL.Path] {
			schema = "OpenAIErrorResponse"
		}
		c.checkSchema(t, schema, body)
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	stream := strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream")
	opts.ExcludeResponseBody = stream
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.StatusCode, Header: res.Header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: %d response does not match openapi.yaml: %v\n%s", req.Method, req.URL.Path, res.StatusCode, err, body)
	}
	if stream {
		schema := eventSchema(t, route.Operation)
		for _, ev := range sseEvents(t, body) {
			if string(ev) != "[DONE]" {
				c.checkSchema(t, schema, ev)
			}
		}
	}
}

// eventSchema is the name of the schema of each event of op's stream: the
// x-event-schema of its text/event-stream response.
func eventSchema(t testing.TB, op *openapi3.Operation) string {
	t.Helper()
	if ok := op.Responses.Status(http.StatusOK); ok != nil && ok.Value != nil {
		if mt := ok.Value.Content.Get("text/event-stream"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
			if ext, ok := mt.Schema.Value.Extensions["x-event-schema"].(map[string]any); ok {
				if ref, ok := ext["$ref"].(string); ok {
					return strings.TrimPrefix(ref, "#/components/schemas/")
				}
			}
		}
	}
	t.Fatalf("%s streams without an x-event-schema", op.OperationID)
	return ""
}

// checkSchema validates the JSON document doc against a named schema.
func (c *contract) checkSchema(t testing.TB, schema string, doc []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Errorf("not JSON (%v): %s", err, doc)
		return
	}
	if err := c.spec.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
		t.Errorf("not a %s: %v\n%s", schema, err, doc)
	}
}

// sseEvents returns the data of each event of an SSE body, checking the
// framing: `data: <json>` lines each followed by a blank line, and
// comments; an `event: <name>` line before the data (the Responses API's)
// names the event's `type`.
func sseEvents(t testing.TB, body []byte) [][]byte {
	t.Helper()
	var events [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	expectBlank, ids, name := false, 0, ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case expectBlank:
			if line != "" {
				t.Errorf("event not followed by a blank line: %q", line)
			}
			expectBlank = false
		case strings.HasPrefix(line, "id: "):
			// An agent's stream numbers its events 1, 2, 3, ...
			if ids++; line != fmt.Sprintf("id: %d", ids) || ids != len(events)+1 {
				t.Errorf("event id line %q, want id: %d before event %d", line, ids, len(events)+1)
			}
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			var typed struct{ Type string }
			if name != "" && (json.Unmarshal(data, &typed) != nil || typed.Type != name) {
				t.Errorf("event %q carries %s", name, data)
			}
			events = append(events, data)
			expectBlank, name = true, ""
		case strings.HasPrefix(line, ":"), line == "":
		default:
			t.Errorf("unexpected stream line %q", line)
		}
	}
	return events
}

// client calls one running instance and validates every response.
type client struct {
	t        *testing.T
	base     string
	http     *http.Client
	contract *contract
}

// result is one response, read and validated.
type result struct {
	status int
	header http.Header
	body   []byte
	doc    map[string]any
}

// data returns the `data` object of a success envelope.
func (r result) data(t testing.TB) map[string]any {
	t.Helper()
	if r.doc["success"] != true {
		t.Fatalf("not a success envelope: %d %s", r.status, r.body)
	}
	d, _ := r.doc["data"].(map[string]any)
	return d
}

// errorCode returns error.code of an error envelope.
func (r result) errorCode() string {
	e, _ := r.doc["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// do sends a request with key (if any) and body (if any, as JSON).
func (c *client) do(method, path, key string, body any) result {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := result{status: res.StatusCode, header: res.Header, body: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.doc); err != nil {
			c.t.Fatalf("%s %s: body is not a JSON object: %s", method, path, raw)
		}
	}
	if strings.HasPrefix(path, "/v1/") {
		c.contract.check(c.t, req, res, raw)
	}
	return r
}

// expect fails the test unless r has the status (and, for errors, the code).
func expect(t *testing.T, what string, r result, status int, code string) {
	t.Helper()
	if r.status != status || (code != "" && r.errorCode() != code) {
		t.Fatalf("%s: %d %s, want %d %s", what, r.status, r.body, status, code)
	}
}

// keyFrom returns the key printed alone on the first line of stdout.
func keyFrom(t *testing.T, stdout string) string {
	t.Helper()
	key, _, _ := strings.Cut(stdout, "\n")
	if !keyPattern.MatchString(key) {
		t.Fatalf("stdout does not start with an API key: %q", stdout)
	}
	return key
}

// sameJSON reports whether a and b marshal to the same JSON.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// errorRecorder is a testing.TB that records Errorf instead of failing.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestContractCatchesDrift(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	tests := []struct {
		name, method, path string
		status             int
		contentType, body  string
		ok                 bool
	}{
		{"valid error", "GET", "/v1/agents/agent_x", 404, "application/json", `{"success":false,"error":{"code":"AGENT_NOT_FOUND","message":"Agent not found."}}`, true},
		{"unknown code", "GET", "/v1/agents/agent_x", 404, "application/json", `{"success":false,"error":{"code":"NOPE","message":"x"}}`, false},
		{"agent missing members", "GET", "/v1/agents/agent_x", 200, "application/json", `{"success":true,"data":{"id":"agent_x"}}`, false},
		{"undocumented status", "DELETE", "/v1/agents/agent_x", 418, "application/json", `{"success":false,"error":{"code":"NOT_FOUND","message":"x"}}`, false},
		{"bad stream event", "POST", "/v1/agents/agent_x/messages/stream", 200, "text/event-stream", "data: {\"type\":\"tick\"}\n\n", false},
		{"good stream", "POST", "/v1/agents/agent_x/messages/stream", 200, "text/event-stream", "data: {\"type\":\"token\",\"content\":\"a\"}\n\n: ping\n\n", true},
		{"outside the API", "GET", "/v1/nothing", 404, "application/json", `{"success":false}`, false},
		{"good chat stream", "POST", "/v1/chat/completions", 200, "text/event-stream", "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n", true},
		{"envelope event in a chat stream", "POST", "/v1/chat/completions", 200, "text/event-stream", "data: {\"type\":\"token\",\"content\":\"a\"}\n\n", false},
		{"envelope on an OpenAI path", "POST", "/v1/chat/completions", 404, "application/json", `{"success":false,"error":{"code":"AGENT_NOT_FOUND","message":"Agent not found."}}`, false},
		{"OpenAI error off the operation", "PUT", "/v1/models", 405, "application/json", `{"error":{"message":"x","type":"invalid_request_error","code":"method_not_allowed","param":null}}`, true},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, "http://127.0.0.1:1"+tt.path, nil)
		req.Header.Set("Content-Type", "application/json")
		res := &http.Response{StatusCode: tt.status, Header: http.Header{"Content-Type": {tt.contentType}}}
		rec := &errorRecorder{TB: t}
		c.check(rec, req, res, []byte(tt.body))
		if ok := len(rec.errors) == 0; ok != tt.ok {
			t.Errorf("%s: valid = %v, want %v (%v)", tt.name, ok, tt.ok, rec.errors)
		}
	}
}
