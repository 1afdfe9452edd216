package llmtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// refuser is a format whose provider refuses some requests with a 400, as
// the real API does; refuse returns the provider's message, "" to accept.
type refuser interface {
	refuse(req *http.Request, rec Recorded) string
}

// refusal returns why the provider would refuse req with a 400, "" when it
// would not. A refused request fails the test, since agentd must never send
// one, unless the test made the server Lenient. The provider's published
// document is checked too, off the answer's path (see checkDocument).
func (s *Server) refusal(req *http.Request, rec Recorded) string {
	s.checkDocument(req, rec)
	f, ok := s.format.(refuser)
	if !ok {
		return ""
	}
	msg := f.refuse(req, rec)
	if msg != "" {
		s.fail(req, rec, msg)
	}
	return msg
}

// fail fails the test for a request its provider would refuse, unless the
// server is Lenient.
func (s *Server) fail(req *http.Request, rec Recorded, why string) {
	s.mu.Lock()
	lenient := s.lenient
	s.mu.Unlock()
	if !lenient {
		s.t.Errorf("llmtest: the provider would refuse %s %s: %s\nbody: %s", req.Method, req.URL.Path, why, rec.Raw)
	}
}

// documented is a format whose provider publishes a document every request
// must match; validate returns why rec does not, "" when it does.
type documented interface {
	validate(req *http.Request, raw []byte) string
}

// checkDocument validates rec against the provider's published document
// beside the answer rather than before it: under the race detector one
// validation takes about 100 ms, which would count against the timeouts
// the tests measure. A request the document does not admit fails the test
// by the time the server is closed.
func (s *Server) checkDocument(req *http.Request, rec Recorded) {
	d, ok := s.format.(documented)
	s.mu.Lock()
	unchecked := s.unchecked
	s.mu.Unlock()
	if !ok || unchecked {
		return
	}
	r := req.Clone(context.Background())
	s.checks.Add(1)
	go func() {
		defer s.checks.Done()
		if msg := d.validate(r, rec.Raw); msg != "" {
			s.fail(r, rec, msg)
		}
	}()
}

// Lenient makes the server answer requests its provider would refuse with
// the provider's 400 alone, without failing the test: for tests that send
// such requests on purpose.
func (s *Server) Lenient() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lenient = true
}

// Unchecked stops checking requests against the provider's published
// document, for benchmarks: one check costs tens of milliseconds of CPU,
// which on a small machine would compete with, and so measure, the stub
// rather than agentd. The tests send the same requests checked.
func (s *Server) Unchecked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unchecked = true
}

// openaiReasoningModels are OpenAI reasoning models tests name. They refuse
// every sampling parameter but the default and want max_completion_tokens.
var openaiReasoningModels = []string{
	"o1", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano",
	"gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna",
}

// openaiReasoningRefused are the members OpenAI's reasoning models refuse.
var openaiReasoningRefused = []string{"temperature", "top_p", "presence_penalty", "frequency_penalty", "max_tokens", "logprobs", "top_logprobs", "logit_bias"}

// validate implements documented: OpenAI's published OpenAPI document.
func (openaiFormat) validate(req *http.Request, raw []byte) string {
	return validateOpenAI(req, raw)
}

// refuse implements refuser: a sampling member a reasoning model refuses.
func (openaiFormat) refuse(req *http.Request, rec Recorded) string {
	model, _ := rec.Body["model"].(string)
	if !slices.Contains(openaiReasoningModels, model) {
		return ""
	}
	for _, member := range openaiReasoningRefused {
		if rec.Has(member) {
			return fmt.Sprintf("Unsupported parameter: '%s' is not supported with this model.", member)
		}
	}
	return ""
}

// anthropicMembers are the top-level members of a Messages API request.
var anthropicMembers = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "system": true, "metadata": true,
	"stop_sequences": true, "stream": true, "temperature": true, "top_p": true, "top_k": true,
	"tools": true, "tool_choice": true, "thinking": true, "service_tier": true, "container": true,
	"mcp_servers": true, "context_management": true,
}

// refuse implements refuser: the Messages API wants the anthropic-version
// header, admits only its own members, and its current models (Claude 4.5
// and later) refuse temperature and top_p together.
func (anthropicFormat) refuse(req *http.Request, rec Recorded) string {
	if req.Header.Get("anthropic-version") == "" {
		return "anthropic-version: header is required"
	}
	if rec.Body == nil {
		return "The request body is not valid JSON."
	}
	members := make([]string, 0, len(rec.Body))
	for m := range rec.Body {
		members = append(members, m)
	}
	sort.Strings(members)
	for _, m := range members {
		if !anthropicMembers[m] {
			return m + ": Extra inputs are not permitted"
		}
	}
	if rec.Has("temperature") && rec.Has("top_p") {
		return "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
	}
	return ""
}

// openaiSpec is OpenAI's published OpenAPI document (testdata/openai),
// loaded once per test binary: it is megabytes of YAML.
var openaiSpec struct {
	once   sync.Once
	router routers.Router
	err    error
}

// openaiRouter returns the router over OpenAI's document, its server set to
// the test server's /v1 prefix.
func openaiRouter() (routers.Router, error) {
	openaiSpec.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "openai", "openapi.yaml")
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			openaiSpec.err = fmt.Errorf("load %s: %w", path, err)
			return
		}
		doc.Servers = openapi3.Servers{{URL: "/v1"}}
		openaiSpec.router, openaiSpec.err = gorillamux.NewRouter(doc)
	})
	return openaiSpec.router, openaiSpec.err
}

// maxValidationMessage bounds the validator's message in the 400 answered:
// a miss against a large anyOf lists every branch.
const maxValidationMessage = 4000

// validateOpenAI checks a request with body raw against OpenAI's document
// and returns why it does not validate, "" when it does. Credentials are
// not checked: the document only says a bearer key is wanted.
func validateOpenAI(req *http.Request, raw []byte) string {
	router, err := openaiRouter()
	if err != nil {
		return "llmtest: OpenAI's OpenAPI document: " + err.Error()
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(raw))
	route, params, err := router.FindRoute(r)
	if err != nil {
		return fmt.Sprintf("%s %s is no operation of OpenAI's API: %v", req.Method, req.URL.Path, err)
	}
	err = openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	if err == nil {
		return ""
	}
	msg := "the request does not match OpenAI's OpenAPI document: " + err.Error()
	if len(msg) > maxValidationMessage {
		msg = msg[:maxValidationMessage] + "…"
	}
	return msg
}
