package server

import (
	"net/http"
	"strings"

	"github.com/agentd/agentd/gen"
)

// openAIPaths are the request paths answered in OpenAI's shapes: their
// errors are the contract's errors (the one mapping of errors.go) rendered
// as OpenAI's `{ "error": { message, type, code, param } }`.
var openAIPaths = map[string]bool{"/v1/chat/completions": true, "/v1/models": true, "/v1/responses": true}

// openAIPath reports whether path is answered in OpenAI's shapes: one of
// openAIPaths or below /v1/responses/.
func openAIPath(path string) bool {
	return openAIPaths[path] || strings.HasPrefix(path, "/v1/responses/")
}

// openAIKind is OpenAI's type and code of an error.
type openAIKind struct {
	Type gen.OpenAIErrorType
	Code gen.OpenAIErrorCode
}

// openAIKinds are OpenAI's type and code for each status the API answers,
// the pairs OpenAI's own API uses for them (the statuses stay the rest of
// the API's); any other status is a server_error.
var openAIKinds = map[int]openAIKind{
	http.StatusBadRequest:            {gen.InvalidRequestError, gen.OpenAIErrorCodeInvalidRequest},
	http.StatusPaymentRequired:       {gen.InsufficientQuota, gen.OpenAIErrorCodeBudgetExceeded},
	http.StatusUnauthorized:          {gen.AuthenticationError, gen.OpenAIErrorCodeInvalidApiKey},
	http.StatusForbidden:             {gen.PermissionError, gen.OpenAIErrorCodeInsufficientPermissions},
	http.StatusNotFound:              {gen.InvalidRequestError, gen.OpenAIErrorCodeModelNotFound},
	http.StatusMethodNotAllowed:      {gen.InvalidRequestError, gen.OpenAIErrorCodeMethodNotAllowed},
	http.StatusConflict:              {gen.InvalidRequestError, gen.OpenAIErrorCodeConversationBusy},
	http.StatusRequestEntityTooLarge: {gen.InvalidRequestError, gen.OpenAIErrorCodePayloadTooLarge},
	http.StatusUnsupportedMediaType:  {gen.InvalidRequestError, gen.OpenAIErrorCodeUnsupportedMediaType},
	http.StatusTooManyRequests:       {gen.RateLimitError, gen.OpenAIErrorCodeRateLimitExceeded},
	http.StatusInternalServerError:   {gen.ServerError, gen.OpenAIErrorCodeInternalError},
	http.StatusBadGateway:            {gen.ServerError, gen.OpenAIErrorCodeModelError},
	http.StatusServiceUnavailable:    {gen.ServerError, gen.OpenAIErrorCodeAgentUnavailable},
	http.StatusGatewayTimeout:        {gen.ServerError, gen.OpenAIErrorCodeRunPending},
}

// openAICodeKinds are the codes whose OpenAI type and code are not their
// status's: a run waiting for an approval is a 409 as a busy conversation
// is, but not the same error; a response not found (a run's not-found) is
// not a model not found.
var openAICodeKinds = map[gen.ErrorCode]openAIKind{
	gen.APPROVALREQUIRED: {gen.InvalidRequestError, gen.OpenAIErrorCodeApprovalRequired},
	gen.RUNNOTFOUND:      {gen.InvalidRequestError, gen.OpenAIErrorCodeNotFound},
}

// openAIErrorBody is gen.OpenAIErrorResponse with a plain pointer for the
// nullable param.
type openAIErrorBody struct {
	Error struct {
		Message string              `json:"message"`
		Type    gen.OpenAIErrorType `json:"type"`
		Code    gen.OpenAIErrorCode `json:"code"`
		Param   *string             `json:"param"`
	} `json:"error"`
}

// openAI renders the error in OpenAI's shape: param is the field at fault
// (`model` for a model that is no agent of the account), and the reason of
// an unavailable agent or a refused request, or the run in the way of a
// busy conversation, joins the message, since OpenAI's shape has no
// details.
func (e *apiError) openAI() openAIErrorBody {
	kind, ok := openAICodeKinds[e.Code]
	if !ok {
		kind, ok = openAIKinds[e.Status]
	}
	if !ok {
		kind = openAIKinds[http.StatusInternalServerError]
	}
	var b openAIErrorBody
	b.Error.Message, b.Error.Type, b.Error.Code = e.Message, kind.Type, kind.Code
	if field, ok := e.Details["field"].(string); ok {
		b.Error.Param = &field
	}
	switch {
	case kind.Code == gen.OpenAIErrorCodeModelNotFound:
		b.Error.Message, b.Error.Param = "The model does not exist or is not an agent of this account.", new("model")
	case e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable:
		if reason, ok := e.Details["reason"].(string); ok && reason != "" {
			b.Error.Message = trimPeriod(e.Message) + ": " + reason
		}
	}
	if runID, ok := e.Details["runId"].(string); ok && e.Code == gen.CONVERSATIONBUSY {
		b.Error.Message = trimPeriod(e.Message) + ": " + runID
	}
	return b
}

// trimPeriod drops the full stop ending s.
func trimPeriod(s string) string {
	if n := len(s); n > 0 && s[n-1] == '.' {
		return s[:n-1]
	}
	return s
}
