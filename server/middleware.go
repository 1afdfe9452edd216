package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// requestIDKey keys the request id in a request context.
type requestIDKey struct{}

// requestID accepts a sane X-Request-ID from the client or makes one, echoes
// it on the response and keeps it for the logs.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = newRequestID()
		}
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), requestIDKey{}, id)))
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// validRequestID keeps ids short and printable so they cannot forge log lines.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func requestIDOf(c echo.Context) string { return requestIDFrom(c.Request().Context()) }

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// recoverPanics turns a panic in a handler into a 500 with the envelope.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// methodLabel bounds the method label of the metrics: net/http accepts any
// token as a method, and a label value per token sent would let anyone,
// unauthenticated, grow the series without end.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "other"
}

// observe logs one structured line per request and records its metrics.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			// Write the error now so the status below is the one sent.
			c.Error(err)
		}
		elapsed := time.Since(start)
		status := c.Response().Status
		route := c.Path()
		method := methodLabel(c.Request().Method)
		s.metrics.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		s.metrics.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
		attrs := []any{
			"request_id", requestIDOf(c), "method", c.Request().Method, "path", c.Request().URL.Path,
			"status", status, "duration_ms", float64(elapsed.Microseconds()) / 1000,
		}
		if p := principalFrom(c.Request().Context()); p.Account.ID != "" {
			attrs = append(attrs, "account", p.Account.Name)
		}
		s.cfg.Logger.InfoContext(c.Request().Context(), "request", attrs...)
		return nil
	}
}

// handleError is the one place an error becomes a status and its body: the
// envelope, or OpenAI's shape on the OpenAI-compatible paths; on the A2A
// JSON-RPC endpoint a body that is not JSON is JSON-RPC's parse error.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.cfg.Logger.WarnContext(c.Request().Context(), "error after response started", "request_id", requestIDOf(c), "error", err)
		return
	}
	if c.Request().Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client went away; there is nobody to answer and nothing failed.
		s.cfg.Logger.InfoContext(c.Request().Context(), "client went away", "request_id", requestIDOf(c))
		return
	}
	if body, ok := a2aParseError(c, err); ok {
		if err := c.JSON(http.StatusOK, body); err != nil {
			s.cfg.Logger.WarnContext(c.Request().Context(), "write error response", "request_id", requestIDOf(c), "error", err)
		}
		return
	}
	ae := s.toAPIErrorContext(c.Request().Context(), err, requestIDOf(c))
	for k, v := range ae.Header {
		c.Response().Header()[k] = v
	}
	switch {
	case c.Request().Method == http.MethodHead:
		err = c.NoContent(ae.Status)
	case openAIPath(c.Request().URL.Path):
		err = c.JSON(ae.Status, ae.openAI())
	default:
		err = c.JSON(ae.Status, ae.envelope())
	}
	if err != nil {
		s.cfg.Logger.WarnContext(c.Request().Context(), "write error response", "request_id", requestIDOf(c), "error", err)
	}
}

// boundParameter finds the parameter the generated binder could not bind in
// its message ("Invalid format for parameter page: ...").
var boundParameter = regexp.MustCompile(`^Invalid format for parameter ([A-Za-z0-9_]+):`)

// bindingError names what Echo or the generated binder refused: a
// parameter by its name, else the body.
func bindingError(he *echo.HTTPError) *apiError {
	if msg, ok := he.Message.(string); ok {
		if m := boundParameter.FindStringSubmatch(msg); m != nil {
			return invalidRequest(m[1], "is not valid")
		}
	}
	return invalidRequest("body", "is not valid JSON")
}

// toAPIError maps any error to the contract; unknown errors are 500s whose
// detail goes to the log, never to the client.
func (s *Server) toAPIError(err error, requestID string) *apiError {
	return s.toAPIErrorContext(context.Background(), err, requestID)
}

// toAPIErrorContext is toAPIError logging with ctx, so the log line of a
// 500 carries the request's trace.
func (s *Server) toAPIErrorContext(ctx context.Context, err error, requestID string) *apiError {
	if ae, ok := asAPIError(err); ok {
		return ae
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errPayloadTooLarge(tooLarge.Limit)
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return errNotFound
		case http.StatusMethodNotAllowed:
			return errMethodNotAllowed
		case http.StatusRequestEntityTooLarge:
			return errPayloadTooLarge(s.cfg.MaxBodyBytes)
		case http.StatusUnsupportedMediaType:
			return errUnsupportedMediaType
		case http.StatusBadRequest:
			return bindingError(he)
		}
	}
	s.cfg.Logger.ErrorContext(ctx, "internal error", "request_id", requestID, "error", err)
	return errInternal(requestID)
}
