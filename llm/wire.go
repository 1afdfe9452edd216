package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxDocument bounds how much of a JSON reply is kept to find its model and
// usage; the reply itself always reaches langchaingo whole.
const maxDocument = 4 << 20

// wireFormat is what exchange needs to know about one provider wire format.
type wireFormat interface {
	// patch rewrites the request body langchaingo made for req: exactly
	// the sampling options that were set, none that were not, and the
	// tool members langchaingo gets wrong or cannot send.
	patch(body map[string]json.RawMessage, req *Request) error
	// observe inspects one JSON document of a reply (a whole JSON body, an
	// SSE data payload or an NDJSON line) and records what it learns. It
	// returns stop when the document reports an error, so the stream is
	// ended there instead of reaching langchaingo.
	observe(doc []byte, rec *record) (stop bool)
}

// rewriter is a wire format that changes the stream documents langchaingo
// reads: it returns the document to pass on, or nil to pass doc as it is.
type rewriter interface {
	rewrite(doc []byte) []byte
}

// providerError is an error reported by the provider in a body or stream.
type providerError struct {
	Type    string
	Message string
	// unparsed: the body was not the provider's error document, and
	// Message is its text.
	unparsed bool
}

// message returns the provider's message, "" for a nil error.
func (p *providerError) message() string {
	if p == nil {
		return ""
	}
	return p.Message
}

// err returns the provider error as an error, nil for a nil error.
func (p *providerError) err() error {
	if p == nil {
		return nil
	}
	return fmt.Errorf("provider error %q: %s", p.Type, p.Message)
}

// record is what one HTTP exchange with a provider showed.
type record struct {
	status       int
	retryAfter   time.Duration
	transportErr error
	readErr      error
	provErr      *providerError
	model        string
	usage        Usage
	streaming    bool
	complete     bool
	// cut is set when the provider stopped the reply for its length (the
	// request's max tokens), not because it was done.
	cut bool
	// toolCalls are the calls the reply asked for, read from the wire
	// (see toolCallBuilder).
	toolCalls toolCallBuilder
}

// exchange is the http.RoundTripper of one attempt. It rewrites the request
// body's sampling options (langchaingo v0.1.14 sends temperature 0 when it
// is unset, never sends top_p for OpenAI, and drops zero penalties) and
// records what the response showed: status, Retry-After, provider errors,
// model and usage, which langchaingo either drops or turns into strings.
type exchange struct {
	next   http.RoundTripper
	format wireFormat
	req    *Request

	mu  sync.Mutex
	rec record
}

// RoundTrip implements http.RoundTripper.
func (x *exchange) RoundTrip(req *http.Request) (*http.Response, error) {
	out, err := x.patchRequest(req)
	if err != nil {
		return nil, fmt.Errorf("llm: rewrite request body: %w", err)
	}
	resp, err := x.next.RoundTrip(out)
	if err != nil {
		x.update(func(r *record) { r.transportErr = err })
		return nil, err
	}
	x.update(func(r *record) {
		r.status = resp.StatusCode
		r.retryAfter = parseRetryAfter(resp.Header, time.Now())
	})
	if resp.StatusCode >= http.StatusBadRequest {
		return x.readErrorBody(resp)
	}
	resp.Body = x.newSniffer(resp)
	return resp, nil
}

// snapshot returns a copy of the record.
func (x *exchange) snapshot() record {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rec
}

// update changes the record under the lock; the body may be read by a
// langchaingo goroutine while the caller inspects the record.
func (x *exchange) update(f func(*record)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	f(&x.rec)
}

// patchRequest returns a copy of req whose JSON body has been patched; a
// RoundTripper must not modify the request it was given.
func (x *exchange) patchRequest(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Method != http.MethodPost {
		return req, nil
	}
	raw, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if body == nil {
		return nil, errNotObject
	}
	if err := x.format.patch(body, x.req); err != nil {
		return nil, err
	}
	patched, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(patched))
	out.ContentLength = int64(len(patched))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(patched)), nil }
	return out, nil
}

// readErrorBody reads a (small) error body so its message can be recorded,
// and hands langchaingo an identical body.
func (x *exchange) readErrorBody(resp *http.Response) (*http.Response, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	x.update(func(r *record) {
		if err != nil {
			r.readErr = err
		}
		x.format.observe(raw, r)
		if r.provErr == nil {
			r.provErr = &providerError{Message: strings.TrimSpace(string(raw)), unparsed: true}
		}
	})
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// newSniffer wraps a successful response body so every document of the
// reply is observed on its way to langchaingo.
func (x *exchange) newSniffer(resp *http.Response) io.ReadCloser {
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	lines := mediaType == "text/event-stream" || mediaType == "application/x-ndjson"
	x.update(func(r *record) { r.streaming = lines })
	return &sniffer{x: x, src: resp.Body, br: bufio.NewReader(resp.Body), lines: lines}
}

// sniffer passes a reply body through line by line. In line mode (SSE or
// NDJSON) each line is observed before it is handed on, so a line reporting
// an error can end the body there: langchaingo then sees a clean end of
// stream instead of an error event. That is the guard against the v0.1.14
// anthropic leak, whose reader goroutine blocks forever on an unbuffered
// channel after delivering an `event: error`. Otherwise the whole body is
// observed once it has been read.
type sniffer struct {
	x        *exchange
	src      io.ReadCloser
	br       *bufio.Reader
	lines    bool
	pending  []byte
	doc      []byte
	observed bool
	err      error
}

// Read implements io.Reader.
func (s *sniffer) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// fill reads the next line into pending, or sets err at the end.
func (s *sniffer) fill() {
	line, err := s.br.ReadBytes('\n')
	stop := false
	if len(line) > 0 {
		s.pending, stop = s.inspect(line)
	}
	switch {
	case stop:
		s.err = io.EOF
	case err == io.EOF:
		s.finish()
		s.err = io.EOF
	case err != nil:
		s.x.update(func(r *record) { r.readErr = err })
		s.err = err
	}
}

// inspect observes one line and returns what to pass on (nil when the
// body must end here).
func (s *sniffer) inspect(line []byte) (out []byte, stop bool) {
	if !s.lines {
		s.collect(line)
		return line, false
	}
	data := bytes.TrimSpace(line)
	sse := false
	if rest, ok := bytes.CutPrefix(data, []byte("data:")); ok {
		data, sse = bytes.TrimSpace(rest), true
	} else if bytes.HasPrefix(data, []byte("event:")) || bytes.HasPrefix(data, []byte(":")) {
		return line, false
	}
	if len(data) == 0 {
		return line, false
	}
	s.x.update(func(r *record) { stop = s.x.format.observe(data, r) })
	if stop {
		return nil, true
	}
	return s.rewrite(line, data, sse), false
}

// rewrite passes the line on, changed when the wire format rewrites its
// document.
func (s *sniffer) rewrite(line, data []byte, sse bool) []byte {
	rw, ok := s.x.format.(rewriter)
	if !ok {
		return line
	}
	doc := rw.rewrite(data)
	if doc == nil {
		return line
	}
	if sse {
		return append(append([]byte("data: "), doc...), '\n')
	}
	return append(doc, '\n')
}

// collect gathers a non-stream body and observes it as soon as it is a
// complete JSON document: langchaingo's json.Decoder stops reading there
// and may never read to the end.
func (s *sniffer) collect(line []byte) {
	if s.observed || len(s.doc)+len(line) > maxDocument {
		return
	}
	s.doc = append(s.doc, line...)
	if trimmed := bytes.TrimSpace(s.doc); bytes.HasSuffix(trimmed, []byte("}")) && json.Valid(trimmed) {
		s.finish()
	}
}

// finish observes a whole (non-stream) body once.
func (s *sniffer) finish() {
	if s.lines || s.observed || len(s.doc) == 0 {
		return
	}
	s.observed = true
	s.x.update(func(r *record) { s.x.format.observe(s.doc, r) })
}

// Close implements io.Closer. It may be called while another goroutine is
// in Read (langchaingo's anthropic reader), so it touches only src.
func (s *sniffer) Close() error { return s.src.Close() }

// parseRetryAfter reads Retry-After (seconds or an HTTP date) and OpenAI's
// retry-after-ms; zero when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// setJSON stores v under key in a request body.
func setJSON(body map[string]json.RawMessage, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	body[key] = raw
	return nil
}

// setOptional sets key to *v when v is set and removes it otherwise.
func setOptional[T any](body map[string]json.RawMessage, key string, v *T) error {
	delete(body, key)
	if v == nil {
		return nil
	}
	return setJSON(body, key, *v)
}

// errNotObject is returned when a request body is not a JSON object.
var errNotObject = errors.New("request body is not a JSON object")
