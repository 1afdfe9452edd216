package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// bodyError is a fault of a request body found while decoding it, before
// schema validation: Field is the dotted path of the member at fault.
type bodyError struct{ Field, Reason string }

func (e *bodyError) Error() string { return e.Field + " " + e.Reason }

// maxBodyDepth bounds how deeply any request body nests objects and
// arrays: the body object, then maxMemberDepth levels in a member.
const maxBodyDepth = maxMemberDepth + 1

// decodeJSONBody is the validator's JSON decoder. Beyond parsing, it refuses
// what the schema cannot say and every backend must agree on: data after
// the JSON value, and U+0000 in any string or member name (PostgreSQL
// cannot store it, SQLite can). The gate has bounded the body's depth
// before (checkBodyDepth), so no walk of the tree is deeper than that.
func decodeJSONBody(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	dec := json.NewDecoder(body)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &bodyError{Field: "body", Reason: "must hold one JSON value and nothing after it"}
	}
	if err := checkNUL(v, nil); err != nil {
		return nil, err
	}
	return v, nil
}

// checkBodyDepth refuses a request body that nests objects and arrays
// deeper than maxBodyDepth, naming the top-level member at fault. It counts
// brackets outside strings in one pass over the bytes, before anything
// decodes or walks them, so a deep body costs time linear in its size; a
// body that is not valid JSON gets through to the decoder, which says so.
func checkBodyDepth(raw []byte) *bodyError {
	depth, inString, escaped := 0, false, false
	expectKey := false // the next string at depth 1 names a member
	keyStart, key := -1, []byte(nil)
	for i, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
				if keyStart >= 0 {
					key, keyStart = raw[keyStart:i+1], -1
				}
			}
		case c == '"':
			inString = true
			if depth == 1 && expectKey {
				keyStart, expectKey = i, false
			}
		case c == '[' || c == '{':
			if depth++; depth > maxBodyDepth {
				return &bodyError{Field: memberName(key), Reason: fmt.Sprintf("nests deeper than %d levels", maxMemberDepth)}
			}
			expectKey = depth == 1 && c == '{'
		case c == ']' || c == '}':
			depth--
		case c == ',':
			expectKey = depth == 1 && bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
		}
	}
	return nil
}

// memberName decodes the quoted member name key; "body" when there is none.
func memberName(key []byte) string {
	var name string
	if json.Unmarshal(key, &name) != nil || name == "" {
		return "body"
	}
	return name
}

// checkNUL walks a decoded value for U+0000; path holds the member names
// and indexes leading to it, formatted only when an error names them.
func checkNUL(v any, path []any) error {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return &bodyError{Field: formatPath(path), Reason: "must not contain the NUL character (U+0000)"}
		}
	case map[string]any:
		for k, member := range v {
			if strings.IndexByte(k, 0) >= 0 {
				return &bodyError{Field: formatPath(path), Reason: "must not have a member name containing the NUL character (U+0000)"}
			}
			if err := checkNUL(member, append(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := checkNUL(item, append(path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// formatPath renders path as a dotted path with indexes ("a.b[2]"), "body"
// for none.
func formatPath(path []any) string {
	if len(path) == 0 {
		return "body"
	}
	var b strings.Builder
	for _, seg := range path {
		switch seg := seg.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", seg)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
		}
	}
	return b.String()
}

// decodedBodyOps are the operations whose handler takes the body the
// validator decoded (agentBodyOf) instead of decoding it again: the gate
// validates them keeping the decoded value (KeepValidatedValue) and hands
// it over in the request's context (keepDecodedBody).
var decodedBodyOps = map[string]bool{"createAgent": true, "updateAgent": true}

// decodedBodyKey keys a decodedBody in a request context.
type decodedBodyKey struct{}

// decodedBody is a JSON object body as the validator decoded it, with the
// bytes it was decoded from.
type decodedBody struct {
	raw    json.RawMessage
	object map[string]any
}

// keepDecodedBody puts the object the validator decoded of req's body,
// whose bytes are raw, in req's context. The body it leaves offers the
// strict handler's binding, which binds a value the validator kept rather
// than decode the body, the value null: its handler reads the context.
func keepDecodedBody(req *http.Request, raw []byte) *http.Request {
	kept, ok := req.Body.(interface{ ValidatedValue() any })
	if !ok {
		return req
	}
	object, ok := kept.ValidatedValue().(map[string]any)
	if !ok {
		return req
	}
	req = req.WithContext(context.WithValue(req.Context(), decodedBodyKey{}, decodedBody{raw: raw, object: object}))
	req.Body = handedOverBody{req.Body}
	return req
}

// handedOverBody is a body whose decoded value is in the request's context.
type handedOverBody struct{ io.ReadCloser }

// ValidatedValue is what the strict handler's binding takes as the
// validated body: null, not the object, which it would encode again.
func (handedOverBody) ValidatedValue() any { return nil }

// agentBodyOf returns the members of an agent body, as the gate's
// validator decoded them, and the body's bytes; body, the strict handler's
// copy, is decoded only when the context has none.
func agentBodyOf(ctx context.Context, body *json.RawMessage) (map[string]any, json.RawMessage, error) {
	if d, ok := ctx.Value(decodedBodyKey{}).(decodedBody); ok {
		return d.object, d.raw, nil
	}
	var raw json.RawMessage
	if body != nil {
		raw = *body
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var members map[string]any
	if err := dec.Decode(&members); err != nil || members == nil {
		return nil, nil, invalidRequest("body", "must be a JSON object")
	}
	return members, raw, nil
}

func init() {
	// The registry is process-wide and guarded by kin-openapi's lock; every
	// application/json body goes through the strict decoder.
	openapi3filter.RegisterBodyDecoder("application/json", decodeJSONBody)
}
