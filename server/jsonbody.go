package server

import (
	"bytes"
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

func init() {
	// The registry is process-wide and guarded by kin-openapi's lock; every
	// application/json body goes through the strict decoder.
	openapi3filter.RegisterBodyDecoder("application/json", decodeJSONBody)
}
