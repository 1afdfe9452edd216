package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The JSON-RPC error codes: JSON-RPC's own, A2A's (-32001 to -32009) and
// agentd's one server error, whose error.data names agentd's code.
const (
	CodeParseError              = -32700
	CodeInvalidRequest          = -32600
	CodeMethodNotFound          = -32601
	CodeInvalidParams           = -32602
	CodeInternalError           = -32603
	CodeTaskNotFound            = -32001
	CodeTaskNotCancelable       = -32002
	CodePushNotSupported        = -32003
	CodeUnsupportedOperation    = -32004
	CodeContentTypeNotSupported = -32005
	CodeVersionNotSupported     = -32009
	CodeServerError             = -32000 // agentd's refusals: the agent, its limits, its provider
)

// The domains of an error's reason (google.rpc.ErrorInfo.domain).
const (
	protocolDomain = "a2a-protocol.org"
	agentdDomain   = "agentd"
)

const jsonrpcVersion = "2.0"

// rpcRequest is a JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcResponse is a JSON-RPC 2.0 response: Result or Error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcErrorBody   `json:"error,omitempty"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// rpcError is a JSON-RPC error before it is rendered in a version's shape:
// Reason, Domain and Metadata become error.data (A2A's error name or
// agentd's code, and the details as strings).
type rpcError struct {
	Code     int
	Message  string
	Reason   string
	Domain   string
	Metadata map[string]string
}

func (e *rpcError) Error() string { return fmt.Sprintf("a2a: %d %s", e.Code, e.Message) }

func invalidParams(reason string) *rpcError {
	return &rpcError{Code: CodeInvalidParams, Message: "Invalid parameters: " + reason + "."}
}

// taskNotFound names the task it did not find, unless its id is not one
// an answer may show.
func taskNotFound(id string) *rpcError {
	e := &rpcError{Code: CodeTaskNotFound, Message: "Task not found.", Reason: "TASK_NOT_FOUND", Domain: protocolDomain}
	if printableID(id, maxIDLength) {
		e.Metadata = map[string]string{"taskId": id}
	}
	return e
}

// parseRequest reads a JSON-RPC request; the error carries the id when it
// could be read (null otherwise).
func parseRequest(body []byte) (rpcRequest, *rpcError) {
	var req rpcRequest
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return req, &rpcError{Code: CodeParseError, Message: "Invalid JSON payload."}
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return req, &rpcError{Code: CodeInvalidRequest, Message: "The body must be one JSON-RPC request object (batches are not supported)."}
	}
	if err := json.Unmarshal(trimmed, &req); err != nil {
		return rpcRequest{}, &rpcError{Code: CodeInvalidRequest, Message: "The body is not a JSON-RPC request: " + typeProblem(err) + "."}
	}
	if !validID(req.ID) {
		req.ID = nil
		return req, &rpcError{Code: CodeInvalidRequest, Message: "The request needs an id, a string or a number."}
	}
	if req.JSONRPC != jsonrpcVersion {
		return req, &rpcError{Code: CodeInvalidRequest, Message: `The request's jsonrpc must be "2.0".`}
	}
	if req.Method == "" {
		return req, &rpcError{Code: CodeInvalidRequest, Message: "The request names no method."}
	}
	return req, nil
}

// validID reports whether id is a JSON-RPC id A2A answers: a string or a
// number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// decodeParams decodes a method's params into dst, an object; a missing or
// ill-typed one is invalid params.
func decodeParams(raw json.RawMessage, dst any) *rpcError {
	if !isSet(raw) || bytes.TrimSpace(raw)[0] != '{' {
		return invalidParams("params must be an object")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidParams(typeProblem(err))
	}
	return nil
}

// typeProblem names the member a decoding error is about.
func typeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field + " must be " + jsonKind(te.Type.Kind().String())
	}
	return "a member has the wrong type"
}

// jsonKind names a Go kind as a JSON type.
func jsonKind(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice":
		return "an array"
	}
	return "an object"
}

// isSet reports whether a raw member is present and not null.
func isSet(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// compactJSON is raw without insignificant space.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
