package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentd/agentd/gen"
)

// apiError is an error with its place in the API: status, code, message and
// details. Handlers and middleware return it; errorHandler writes it.
type apiError struct {
	Status  int
	Code    gen.ErrorCode
	Message string
	Details map[string]any
	// Header is set on the response next to the body (Retry-After).
	Header http.Header
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// fieldError is a 400 naming the bad field by its dotted path.
func fieldError(code gen.ErrorCode, field, reason string) *apiError {
	return &apiError{
		Status:  http.StatusBadRequest,
		Code:    code,
		Message: fmt.Sprintf("Invalid value for %s: %s.", field, reason),
		Details: map[string]any{"field": field, "reason": reason},
	}
}

func invalidRequest(field, reason string) *apiError {
	return fieldError(gen.INVALIDREQUEST, field, reason)
}

var (
	errUnauthorized = &apiError{Status: http.StatusUnauthorized, Code: gen.UNAUTHORIZED,
		Message: "Invalid or missing API key."}
	errForbidden = &apiError{Status: http.StatusForbidden, Code: gen.INSUFFICIENTPERMISSIONS,
		Message: "This API key does not have the permission for this operation."}
	errAgentNotFound = &apiError{Status: http.StatusNotFound, Code: gen.AGENTNOTFOUND,
		Message: "Agent not found."}
	errNotFound = &apiError{Status: http.StatusNotFound, Code: gen.NOTFOUND,
		Message: "No such endpoint."}
	errMethodNotAllowed = &apiError{Status: http.StatusMethodNotAllowed, Code: gen.METHODNOTALLOWED,
		Message: "This method is not allowed on this endpoint."}
	errUnsupportedMediaType = &apiError{Status: http.StatusUnsupportedMediaType, Code: gen.UNSUPPORTEDMEDIATYPE,
		Message: "Content-Type must be application/json."}
)

func errPayloadTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Code: gen.PAYLOADTOOLARGE,
		Message: fmt.Sprintf("Request body exceeds %d bytes.", limit)}
}

func errInternal(requestID string) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: gen.INTERNALERROR,
		Message: fmt.Sprintf("Internal error (request id %s).", requestID)}
}

// asAPIError reports whether err carries an *apiError.
func asAPIError(err error) (*apiError, bool) {
	var ae *apiError
	ok := errors.As(err, &ae)
	return ae, ok
}

// errorBody is the error envelope of the contract (gen.ErrorEnvelope with
// details kept as a plain map, since their members depend on the code).
type errorBody struct {
	Success bool `json:"success"`
	Error   struct {
		Code    gen.ErrorCode  `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

// envelope renders the error body of the contract.
func (e *apiError) envelope() errorBody {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Details = e.Code, e.Message, e.Details
	return b
}
