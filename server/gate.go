package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// principalKey keys the authenticated principal in a request context.
type principalKey struct{}

// principalFrom returns the principal the gate authenticated.
func principalFrom(ctx context.Context) domain.Principal {
	p, _ := ctx.Value(principalKey{}).(domain.Principal)
	return p
}

// gate is the middleware in front of every /v1 operation, in this order:
// find the operation in the spec (404/405), authenticate (401), take the
// rate limits (429), check the key's scope (403), check the media type (415)
// and size (413) of the body, then validate the request against the spec
// (400; Create and Update Agent keep the decoded body for their handler,
// keepDecodedBody), and last run the request under its Idempotency-Key, if
// any.
func (s *Server) gate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		route, pathParams, err := s.routes.find(c)
		if err != nil {
			if errors.Is(err, routers.ErrMethodNotAllowed) {
				return errMethodNotAllowed
			}
			return errNotFound
		}
		operationID := specOperationID(route.Operation)
		principal, err := s.authenticate(req)
		if err != nil {
			return err
		}
		req = req.WithContext(context.WithValue(req.Context(), principalKey{}, principal))
		c.SetRequest(req)
		agentID := pathParams["agentId"]
		if ignores := ignoredBy[operationID]; ignores != nil {
			var ignored []string
			agentID, ignored = readModelBody(req, s.bodyLimit(operationID), ignores)
			req = req.WithContext(context.WithValue(req.Context(), ignoredKey{}, ignored))
			c.SetRequest(req)
		}
		if err := s.takeRateLimits(c, principal, operationID, agentID); err != nil {
			return err
		}
		// Read keys may only call GET operations and the POSTs that only
		// read; the refusal is an authenticated response, so it counts and
		// carries the headers.
		if principal.Key.Scope != domain.ScopeWrite && req.Method != http.MethodGet && !readingPosts[operationID] {
			return errForbidden
		}
		limit := s.bodyLimit(operationID)
		raw, err := s.checkBody(c.Response(), req, route.Operation, limit)
		if err != nil {
			return err
		}
		if idempotentOps[operationID] {
			if err := checkIdempotencyKey(req); err != nil {
				return err
			}
		}
		input := &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route,
			Options: s.validation,
		}
		if selfReadBodies[operationID] {
			input.Options = s.selfReadValidation
		}
		if decodedBodyOps[operationID] {
			input.Options = s.keepingValidation
		}
		if err := openapi3filter.ValidateRequest(req.Context(), input); err != nil {
			return translateValidation(err, operationID, limit)
		}
		if decodedBodyOps[operationID] {
			req = keepDecodedBody(req, raw)
			c.SetRequest(req)
		}
		if err := checkParams(req, route, pathParams); err != nil {
			return err
		}
		return s.idempotent(c, next, principal, operationID)
	}
}

// ignoredBy are the operations whose body names its agent in `model` (the
// OpenAI ones), with the members of it that agentd ignores.
var ignoredBy = map[string]func(member string) bool{
	"createChatCompletion": func(m string) bool { return ignoredChatMembers[m] },
	"createResponse":       ignoredResponseMember,
}

// readModelBody reads an OpenAI body for what must be known before its
// handler: its `model` member, the agent whose message counter the
// request takes (Send Message's names it in the path), "" when the body is
// larger than limit or not a JSON object with a string model, for the
// checks after the limits to refuse; and the members agentd ignores, in
// body order (ignoredMembers). What it reads is put back for those checks.
func readModelBody(req *http.Request, limit int64, ignores func(member string) bool) (string, []string) {
	if req.Body == nil || req.ContentLength > limit {
		return "", nil
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	req.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(raw), req.Body), req.Body}
	var b struct {
		Model string `json:"model"`
	}
	if err != nil || int64(len(raw)) > limit || json.Unmarshal(raw, &b) != nil {
		return "", nil
	}
	return b.Model, ignoredMembers(raw, ignores)
}

// pathNotFound is the not-found of each path parameter: an id no record
// can have is a record that does not exist. Every path parameter of the
// contract has one.
var pathNotFound = map[string]*apiError{
	"agentId": errAgentNotFound, "conversationId": errConversationNotFound,
	"webhookId": errWebhookNotFound, "deliveryId": errDeliveryNotFound,
	"memoryId": errMemoryNotFound, "knowledgeId": errKnowledgeNotFound,
	"messageId": errMessageNotFound, "runId": errRunNotFound, "scheduleId": errScheduleNotFound,
	"responseId": errResponseNotFound,
}

// checkParams refuses what the validator lets through but no backend should
// get, the same way on SQLite and PostgreSQL (which fails on such bytes where
// SQLite finds nothing): a path id or query value that is not valid UTF-8 or
// holds a control character (404 for the id, 400 naming the parameter), and a
// query parameter given twice where the operation takes one value. Path
// parameters are checked in the order the route's path names them, so a
// path with two bad ids names the outer one.
func checkParams(req *http.Request, route *routers.Route, pathParams map[string]string) error {
	for _, m := range pathParam.FindAllStringSubmatch(route.Path, -1) {
		name := m[1]
		// The router keeps the id as the path escapes it; the handler gets
		// it unescaped.
		if v, err := url.PathUnescape(pathParams[name]); err != nil || !domain.CleanText(v) {
			if nf := pathNotFound[name]; nf != nil {
				return nf
			}
			return errNotFound
		}
	}
	query := req.URL.Query()
	for name, values := range query {
		for _, v := range values {
			if !domain.CleanText(name) || !domain.CleanText(v) {
				return invalidRequest(queryName(name), "must be valid UTF-8 without control characters")
			}
		}
	}
	for _, p := range route.Operation.Parameters {
		param := p.Value
		if param == nil || param.In != openapi3.ParameterInQuery || len(query[param.Name]) < 2 {
			continue
		}
		if param.Schema == nil || param.Schema.Value == nil || !param.Schema.Value.Type.Is(openapi3.TypeArray) {
			return invalidRequest(param.Name, "must be given once")
		}
	}
	return nil
}

// queryName is name as an error may show it: "query" when it is not
// printable itself.
func queryName(name string) string {
	if domain.CleanText(name) {
		return name
	}
	return "query"
}

// specOperationID returns the operation's operationId as openapi.yaml
// writes it; the spec oapi-codegen embeds has them capitalised.
func specOperationID(op *openapi3.Operation) string {
	id := op.OperationID
	if id == "" {
		return id
	}
	return strings.ToLower(id[:1]) + id[1:]
}

// authenticate resolves the bearer key to its account.
func (s *Server) authenticate(req *http.Request) (domain.Principal, error) {
	scheme, key, ok := strings.Cut(req.Header.Get(echo.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return domain.Principal{}, errUnauthorized
	}
	principal, err := s.cfg.Store.Accounts.Authenticate(req.Context(), strings.TrimSpace(key))
	if errors.Is(err, domain.ErrUnauthorized) {
		return domain.Principal{}, errUnauthorized
	}
	if err != nil {
		return domain.Principal{}, err
	}
	return principal, nil
}

// selfReadBodies are the operations whose handler reads the body itself
// and answers a bad one in its own protocol's terms (A2A's JSON-RPC): the
// validator checks their parameters only.
var selfReadBodies = map[string]bool{"callA2A": true}

// readingPosts are the POST operations that write nothing, which a read
// key may call. MCP's is one: its send_message tool refuses a read key
// itself.
var readingPosts = map[string]bool{"previewContext": true, "callMcp": true}

// bodyLimits are the operations whose bodies may exceed the server's
// MaxBodyBytes: a knowledge document's text is up to 1,000,000 bytes,
// which JSON escaping can double.
var bodyLimits = map[string]int64{"createKnowledge": 2 << 20}

// bodyLimit is the most a request body of operation op may hold.
func (s *Server) bodyLimit(op string) int64 {
	return max(s.cfg.MaxBodyBytes, bodyLimits[op])
}

// checkBody enforces the media type and the size cap (limit) of POST and
// PATCH bodies, and returns the body read; the cap also guards the reads
// the validator does next. An operation that takes no body (rotate, test,
// retry) may be called without one, and so without a Content-Type.
func (s *Server) checkBody(w http.ResponseWriter, req *http.Request, op *openapi3.Operation, limit int64) ([]byte, error) {
	if req.Method != http.MethodPost && req.Method != http.MethodPatch {
		return nil, nil
	}
	if op.RequestBody == nil && req.ContentLength == 0 && len(req.TransferEncoding) == 0 {
		return nil, nil
	}
	mediaType, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil || mediaType != echo.MIMEApplicationJSON {
		return nil, errUnsupportedMediaType
	}
	if req.ContentLength > limit {
		return nil, errPayloadTooLarge(limit)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, req.Body, limit))
	if err != nil {
		return nil, err // a *http.MaxBytesError is 413; a broken connection has nobody to answer
	}
	if be := checkBodyDepth(raw); be != nil {
		return nil, invalidRequest(be.Field, be.Reason)
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	return raw, nil
}
