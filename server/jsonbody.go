package server

import (
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

// decodeJSONBody is the validator's JSON decoder. Beyond parsing, it refuses
// what the schema cannot say and every backend must agree on: data after the
// JSON value, and U+0000 in any string or member name (PostgreSQL cannot
// store it, SQLite can).
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
	if err := checkNUL(v, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// checkNUL walks a decoded value for U+0000; path is its dotted path (""
// for the body).
func checkNUL(v any, path string) error {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return &bodyError{Field: pathOrBody(path), Reason: "must not contain the NUL character (U+0000)"}
		}
	case map[string]any:
		for k, member := range v {
			if strings.IndexByte(k, 0) >= 0 {
				return &bodyError{Field: pathOrBody(path), Reason: "must not have a member name containing the NUL character (U+0000)"}
			}
			if err := checkNUL(member, joinPath(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := checkNUL(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(path, member string) string {
	if path == "" {
		return member
	}
	return path + "." + member
}

func pathOrBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

func init() {
	// The registry is process-wide and guarded by kin-openapi's lock; every
	// application/json body goes through the strict decoder.
	openapi3filter.RegisterBodyDecoder("application/json", decodeJSONBody)
}
