package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/renew"
	"github.com/labstack/echo/v4"
)

// idempotencyHeader makes a POST safe to retry: a repeat with the same key
// and body within 24 hours, from the same account, answers the first answer
// again without doing the work twice; the same key with another body is 422
// IDEMPOTENCY_KEY_REUSED, a repeat while the first runs 409
// IDEMPOTENCY_KEY_IN_USE, and a key that is empty, longer than 255 or not
// printable ASCII is 400 naming the header. A replay counts against the rate
// limits like any request.
const idempotencyHeader = "Idempotency-Key"

// idempotentOps are the operations that take an Idempotency-Key: the
// POSTs that create something or send a message.
var idempotentOps = map[string]bool{
	"createAgent": true, "sendMessage": true, "streamMessage": true, "createMemory": true, "createKnowledge": true,
	"createWebhook": true, "createSchedule": true,
}

// replayedHeaders are the headers of an answer stored with it and sent
// again on a replay; the rate-limit headers are the replay's own.
var replayedHeaders = []string{echo.HeaderContentType, echo.HeaderLocation, "ETag"}

// validIdempotencyKey reports whether k is 1 to 255 printable ASCII
// characters.
func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkIdempotencyKey refuses a malformed Idempotency-Key (empty, too
// long, not printable ASCII, or given twice) naming the header.
func checkIdempotencyKey(req *http.Request) error {
	values, ok := req.Header[http.CanonicalHeaderKey(idempotencyHeader)]
	if ok && (len(values) != 1 || !validIdempotencyKey(values[0])) {
		return invalidRequest(idempotencyHeader, "must be given once, as 1 to 255 printable ASCII characters")
	}
	return nil
}

// idempotent runs next under the request's Idempotency-Key, when it has
// one: the first request claims the key in the store and its answer (a
// success) is stored; a repeat with the same fingerprint gets that answer
// again without running next. The gate calls it after authentication and
// the rate limits, so a replay counts like any request. A failed request
// releases its key, so a retry runs afresh. A streamed reply's key is
// handed to the stream, which settles it when the reply ends (streamClaim).
func (s *Server) idempotent(c echo.Context, next echo.HandlerFunc, principal domain.Principal, operationID string) error {
	req := c.Request()
	key := req.Header.Get(idempotencyHeader)
	if key == "" || !idempotentOps[operationID] {
		return next(c)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	ctx := req.Context()
	accountID := principal.Account.ID
	claim, err := s.cfg.Store.Idempotency.ClaimIdempotencyKey(ctx, domain.IdempotencyRequest{
		AccountID: accountID, Key: key, Fingerprint: fingerprint(req.Method, req.URL.EscapedPath(), body),
		Lease: s.cfg.IdempotencyLease,
	})
	if err != nil {
		return err
	}
	if a := claim.Replay; a != nil {
		for _, name := range replayedHeaders {
			if v, ok := a.Header[name]; ok {
				c.Response().Header().Set(name, v)
			}
		}
		c.Response().WriteHeader(a.Status)
		_, err := c.Response().Write(a.Body)
		return err
	}
	// The claim is given up or completed whatever happens, the client
	// going away included.
	bg := context.WithoutCancel(ctx)
	unhold := s.holdKey(bg, requestIDOf(c), accountID, key, claim.Token)
	settled := false
	defer func() {
		if !settled {
			unhold()
			if err := s.cfg.Store.Idempotency.ReleaseIdempotencyKey(bg, accountID, key, claim.Token); err != nil {
				s.cfg.Logger.WarnContext(ctx, "release idempotency key", "request_id", requestIDOf(c), "error", err)
			}
		}
	}()
	if operationID == "streamMessage" || streamed(body) {
		handoff := &streamClaim{s: s, requestID: requestIDOf(c), accountID: accountID, key: key, token: claim.Token,
			unhold: unhold}
		c.SetRequest(withStreamClaim(req, handoff))
		err = next(c)
		settled = handoff.taken
		return err
	}
	rec := &answerRecorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	err = next(c)
	c.Response().Writer = rec.ResponseWriter
	res := c.Response()
	if err != nil || !res.Committed || res.Status >= http.StatusBadRequest {
		return err
	}
	answer := domain.IdempotentAnswer{Status: res.Status, Header: map[string]string{}, Body: rec.body.Bytes()}
	for _, name := range replayedHeaders {
		if v := res.Header().Get(name); v != "" {
			answer.Header[name] = v
		}
	}
	settled = true
	unhold()
	if err := s.cfg.Store.Idempotency.CompleteIdempotencyKey(bg, accountID, key, claim.Token, answer); err != nil {
		// The answer was sent; only a later replay misses it.
		s.cfg.Logger.WarnContext(ctx, "store idempotent answer", "request_id", requestIDOf(c), "error", err)
	}
	return nil
}

// holdKey renews the lease of the claim token on key every third of a
// lease until unhold is called; unhold cancels a renewal under way and
// returns once the renewals have stopped. A keyed request may run longer
// than a lease (a turn of several provider and tool calls, a long
// stream); a replica that dies stops renewing, so its keys are taken over
// one lease later. A claim found lost (taken over) is not renewed again.
func (s *Server) holdKey(ctx context.Context, requestID, accountID, key, token string) (unhold func()) {
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		renew.Every(ctx, s.cfg.IdempotencyLease, func(call context.Context) bool {
			err := s.cfg.Store.Idempotency.RenewIdempotencyKey(call, accountID, key, token, s.cfg.IdempotencyLease)
			if err == nil || ctx.Err() != nil {
				return true
			}
			s.cfg.Logger.WarnContext(ctx, "renew idempotency key", "request_id", requestID, "error", err)
			return !errors.Is(err, domain.ErrLeaseLost)
		})
	}()
	return sync.OnceFunc(func() {
		cancel()
		<-stopped
	})
}

// streamed reports whether a Send Message body asks for a stream.
func streamed(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &b) == nil && b.Stream
}

// fingerprint identifies a request: its method, path and a hash of its
// body in canonical form (objects' members sorted, no insignificant
// space), so a retry that encodes the same body differently is the same.
func fingerprint(method, path string, body []byte) string {
	canonical := body
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canonical = b
		}
	}
	sum := sha256.Sum256(canonical)
	return method + " " + path + " " + hex.EncodeToString(sum[:])
}

// answerRecorder keeps a copy of the body written through it.
type answerRecorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *answerRecorder) Write(p []byte) (int, error) {
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *answerRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
