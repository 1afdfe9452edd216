package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply configures how a Server answers.
type Reply struct {
	// Cut ends the reply as stopped for its length: finish_reason
	// "length", Anthropic's stop_reason "max_tokens", ollama's
	// done_reason "length".
	Cut bool
	// Text is the reply text. When streaming it is sent in fragments: the
	// Fragments if given, else Text split before each space.
	Text      string
	Fragments []string
	// Thinking, for the Anthropic format only, adds a thinking content
	// block before the text block.
	Thinking string
	// ToolCalls are the tool calls the reply asks for, sent after the text
	// (a reply with calls and no text has no text part at all) in the
	// format's own shape; the reply then ends as a tool-use turn does.
	ToolCalls []ToolCall
	// PromptTokens and CompletionTokens are the usage reported.
	PromptTokens, CompletionTokens int
	// Model is the model named in the reply; empty echoes the request's.
	Model string

	// Status, when not 0 or 200, answers with this status and the
	// provider's error body. ErrorType and ErrorMessage override the
	// default type and message of that body (and of a mid-stream error).
	Status       int
	ErrorType    string
	ErrorMessage string
	// RetryAfter is sent as the Retry-After header when not empty.
	RetryAfter string

	// Delay is waited before answering at all (JSON or stream), so tests can
	// hold requests in flight.
	Delay time.Duration
	// FragmentDelay is waited before each streamed fragment.
	FragmentDelay time.Duration
	// FailMidStream sends the provider's error event (or line) after
	// FailAfter fragments, then holds the connection open until the client
	// closes it (at most 5s). FailAfter defaults to half
	// of the fragments; set FailAfter -1 to fail before the first one.
	// Only text fragments count, so a stream always fails before its tool
	// calls.
	FailMidStream bool
	FailAfter     int
	// DropMidStream breaks the connection after FailAfter fragments,
	// counted as for FailMidStream, without any error event or end of
	// stream.
	DropMidStream bool
	// StallMidStream stops sending after FailAfter fragments, counted as
	// for FailMidStream, and keeps the connection open until the client
	// gives up.
	StallMidStream bool
	// Hang never answers: the handler waits until the request is cancelled.
	Hang bool
}

// Recorded is one request a Server received.
type Recorded struct {
	Method, Path string
	Header       http.Header
	// Body is the decoded JSON body; nil when it was not a JSON object.
	Body map[string]any
	Raw  []byte
}

// Has reports whether the body has the top-level member key.
func (r Recorded) Has(key string) bool {
	_, ok := r.Body[key]
	return ok
}

// Server is an httptest server speaking one provider's wire format.
type Server struct {
	// URL is the base URL to configure: ".../v1" for the OpenAI and
	// Anthropic formats, the server root for ollama.
	URL string

	t      testing.TB
	ts     *httptest.Server
	format format

	mu       sync.Mutex
	def      Reply
	queue    []Reply
	requests []Recorded
	conns    int
	calls    int // tool call ids made so far
	emb      embeddingState
	once     sync.Once
	lenient  bool
	// unchecked skips the document check (Unchecked).
	unchecked bool
	checks    sync.WaitGroup // requests being checked against a document
}

// format answers one request in a provider's wire format.
type format interface {
	// path is the request path the format serves.
	path() string
	// streaming reports whether the request body asks for a stream.
	streaming(body map[string]any) bool
	// writeJSON writes a complete, non-streamed reply.
	writeJSON(w http.ResponseWriter, r Reply, model string)
	// stream writes a streamed reply through out.
	stream(w http.ResponseWriter, r Reply, model string, out *output)
	// writeError writes the provider's error body for r.Status.
	writeError(w http.ResponseWriter, r Reply, model string)
	// callIDPrefix starts the ids made for tool calls given without one;
	// "" leaves them without, as older ollama versions send them.
	callIDPrefix() string
}

// defaultReply is used until Respond is called.
var defaultReply = Reply{Text: "Hello from the test server.", PromptTokens: 12, CompletionTokens: 6}

// newServer starts a server for f, closed when the test ends.
func newServer(t testing.TB, f format, prefix string) *Server {
	s := &Server{t: t, format: f, def: defaultReply}
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	s.ts.Config.ConnState = s.countConn
	s.ts.Start()
	s.URL = s.ts.URL + prefix
	t.Cleanup(s.Close)
	return s
}

// Respond makes r the reply to every following request, dropping queued
// replies.
func (s *Server) Respond(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def, s.queue = r, nil
}

// Enqueue adds one-shot replies, used in order before the Respond reply.
func (s *Server) Enqueue(rs ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Last returns the last request received; it fails the test if none came.
func (s *Server) Last(t testing.TB) Recorded {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) == 0 {
		t.Fatalf("llmtest: no request received")
	}
	return reqs[len(reqs)-1]
}

// Count returns how many requests were received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Connections returns how many connections clients have opened so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// countConn counts the new connections, so tests can see whether clients
// reuse them.
func (s *Server) countConn(_ net.Conn, state http.ConnState) {
	if state != http.StateNew {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns++
}

// Close shuts the server down, waiting for running handlers and document
// checks; it is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(s.ts.Close)
	s.checks.Wait()
}

// CloseClientConnections closes the connections clients hold open.
func (s *Server) CloseClientConnections() {
	s.ts.CloseClientConnections()
}

// handle records the request and answers with the next reply.
func (s *Server) handle(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	rec := Recorded{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &rec.Body)
	if s.serveEmbeddings(w, req, rec) {
		return
	}
	reply := s.record(rec)
	if req.Method != http.MethodPost || req.URL.Path != s.format.path() {
		http.NotFound(w, req)
		return
	}
	model, _ := rec.Body["model"].(string)
	if msg := s.refusal(req, rec); msg != "" {
		s.format.writeError(w, Reply{Status: http.StatusBadRequest, ErrorMessage: msg}, model)
		return
	}
	if reply.Model != "" {
		model = reply.Model
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-req.Context().Done():
			return
		}
	}
	switch {
	case reply.Hang:
		<-req.Context().Done()
	case reply.Status != 0 && reply.Status != http.StatusOK:
		s.format.writeError(w, reply, model)
	case s.format.streaming(rec.Body):
		s.format.stream(w, reply, model, newOutput(w, req, reply))
	default:
		s.format.writeJSON(w, reply, model)
	}
}

// record stores rec and returns the reply to give.
func (s *Server) record(rec Recorded) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	r := s.def
	if len(s.queue) > 0 {
		r = s.queue[0]
		s.queue = s.queue[1:]
	}
	r.ToolCalls = s.callIDs(r.ToolCalls)
	return r
}

// callIDs returns a copy of calls with ids given to those without one,
// numbered across the server's replies so that the ids of a conversation
// never repeat, as a client matching results to calls needs. s.mu is held.
func (s *Server) callIDs(calls []ToolCall) []ToolCall {
	prefix := s.format.callIDPrefix()
	if len(calls) == 0 || prefix == "" {
		return calls
	}
	out := append([]ToolCall(nil), calls...)
	for i := range out {
		if out[i].ID == "" {
			s.calls++
			out[i].ID = fmt.Sprintf("%s%d", prefix, s.calls)
		}
	}
	return out
}

// output writes the chunks of a stream, each flushed at once.
type output struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	done    <-chan struct{}
	delay   time.Duration
	failAt  int // fragment index at which to send the error, -1 never
	dropAt  int // fragment index at which to break the connection, -1 never
	stallAt int // fragment index at which to stall, -1 never
}

// newOutput returns the output of a streamed reply r.
func newOutput(w http.ResponseWriter, req *http.Request, r Reply) *output {
	o := &output{w: w, rc: http.NewResponseController(w), done: req.Context().Done(), delay: r.FragmentDelay, failAt: -1, dropAt: -1, stallAt: -1}
	at := r.failAt(len(r.fragments()))
	if r.FailMidStream {
		o.failAt = at
	}
	if r.DropMidStream {
		o.dropAt = at
	}
	if r.StallMidStream {
		o.stallAt = at
	}
	return o
}

// send writes one chunk and flushes; it returns false once the client has
// gone.
func (o *output) send(chunk string) bool {
	if _, err := io.WriteString(o.w, chunk); err != nil {
		return false
	}
	return o.rc.Flush() == nil
}

// maxLinger bounds how long a failed stream is held open.
const maxLinger = 5 * time.Second

// fail sends a mid-stream error and then holds the connection open until
// the client closes it (at most maxLinger), the hardest case for a client:
// it must stop reading on the error itself rather than wait for the end of
// the stream, and a client library that keeps reading after handing the
// error on (langchaingo's anthropic reader in v0.1.14) is left blocked.
func (o *output) fail(chunk string) {
	if !o.send(chunk) {
		return
	}
	t := time.NewTimer(maxLinger)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
	}
}

// text streams the text fragments, each made into the format's chunk by
// chunk, and reports whether the stream goes on. At the FailMidStream point
// it sends errChunk instead; at the DropMidStream point the handler aborts,
// which closes the connection without ending the chunked body; at the
// StallMidStream point it waits for the client to go. A point may be after
// the last fragment, and with no text it is before anything else.
func (o *output) text(frags []string, chunk func(string) string, errChunk string) bool {
	for i := 0; ; i++ {
		switch i {
		case o.failAt:
			o.fail(errChunk)
			return false
		case o.dropAt:
			panic(http.ErrAbortHandler)
		case o.stallAt:
			<-o.done
			return false
		}
		if i == len(frags) {
			return true
		}
		if !o.fragment(chunk(frags[i])) {
			return false
		}
	}
}

// fragment waits FragmentDelay and sends a chunk carrying reply text.
func (o *output) fragment(chunk string) bool {
	if o.delay > 0 {
		t := time.NewTimer(o.delay)
		defer t.Stop()
		select {
		case <-o.done:
			return false
		case <-t.C:
		}
	}
	return o.send(chunk)
}

// fragments returns the pieces a reply is streamed in.
func (r Reply) fragments() []string {
	if r.Fragments != nil {
		return r.Fragments
	}
	var out []string
	rest := r.Text
	for rest != "" {
		i := strings.Index(rest[1:], " ")
		if i < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:i+1])
		rest = rest[i+1:]
	}
	return out
}

// failAt returns after how many of n fragments a stream fails.
func (r Reply) failAt(n int) int {
	switch {
	case r.FailAfter < 0:
		return 0
	case r.FailAfter > 0:
		return min(r.FailAfter, n)
	}
	return n / 2
}

// hasText reports whether the reply has a text part: every reply has one,
// even empty, except a tool-use turn without text.
func (r Reply) hasText() bool {
	return r.text() != "" || len(r.ToolCalls) == 0
}

// text returns the reply text, the joined fragments when only those are set.
func (r Reply) text() string {
	if r.Text == "" && r.Fragments != nil {
		return strings.Join(r.Fragments, "")
	}
	return r.Text
}

// errorText returns the error message to send: ErrorMessage or def.
func (r Reply) errorText(def string) string {
	if r.ErrorMessage != "" {
		return r.ErrorMessage
	}
	return def
}

// errorKind returns the error type to send: ErrorType or def.
func (r Reply) errorKind(def string) string {
	if r.ErrorType != "" {
		return r.ErrorType
	}
	return def
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// mustJSON encodes v, which is always encodable here.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
