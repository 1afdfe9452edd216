package server

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentd/agentd/gen"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// messageOperations are the operations whose `text` field reports
// INVALID_MESSAGE instead of INVALID_REQUEST.
var messageOperations = map[string]bool{"sendMessage": true, "streamMessage": true}

// translateValidation turns an error of openapi3filter.ValidateRequest into
// the contract's 400 (or 413 when the body reader hit the size cap).
func translateValidation(err error, operationID string, maxBody int64) *apiError {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errPayloadTooLarge(maxBody)
	}
	code := gen.INVALIDREQUEST
	field, reason := describeValidation(err)
	if messageOperations[operationID] && (field == "text" || strings.HasPrefix(field, "text.")) {
		code = gen.INVALIDMESSAGE
	}
	return fieldError(code, field, reason)
}

// describeValidation names the field and the reason of a validation error.
func describeValidation(err error) (field, reason string) {
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return "body", "is not valid"
	}
	if reqErr.Parameter != nil {
		return reqErr.Parameter.Name, parameterReason(reqErr)
	}
	var bodyErr *bodyError
	if errors.As(reqErr.Err, &bodyErr) {
		return bodyErr.Field, bodyErr.Reason
	}
	if schemaErr := firstSchemaError(reqErr.Err); schemaErr != nil {
		schemaErr = refineOneOf(schemaErr)
		return schemaField(schemaErr), schemaReason(schemaErr)
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(reqErr.Err, &parseErr) {
		return "body", "is not valid JSON"
	}
	if reqErr.Err == nil || errors.Is(reqErr.Err, openapi3filter.ErrInvalidRequired) {
		return "body", "is required"
	}
	return "body", "is not valid"
}

// firstSchemaError finds the schema error of a validation failure, ranging
// over MultiErrors (their As returns only the first match).
func firstSchemaError(err error) *openapi3.SchemaError {
	// Type switches, not errors.As: a SchemaError unwraps to its causes,
	// and the outermost one is the one that names the field.
	switch e := err.(type) {
	case *openapi3.SchemaError:
		return e
	case openapi3.MultiError:
		for _, sub := range e {
			if se := firstSchemaError(sub); se != nil {
				return se
			}
		}
		return nil
	}
	if inner := errors.Unwrap(err); inner != nil {
		return firstSchemaError(inner)
	}
	return nil
}

// refineOneOf replaces a "matches no oneOf branch" error by the error of the
// branch whose type fitted the value, so `bio: ["", ...]` reports the empty
// item rather than "neither a string nor a list".
func refineOneOf(se *openapi3.SchemaError) *openapi3.SchemaError {
	if se.SchemaField != "oneOf" {
		return se
	}
	var branches openapi3.MultiError
	if !errors.As(se.Origin, &branches) {
		return se
	}
	for _, b := range branches {
		// A type error at the value itself means the branch did not fit; one
		// deeper down (plugins[0].enabled) is the fitting branch's own error.
		if sub := firstSchemaError(b); sub != nil &&
			(sub.SchemaField != "type" || len(sub.JSONPointer()) > len(se.JSONPointer())) {
			return refineOneOf(sub)
		}
	}
	return se
}

// schemaField renders a schema error's JSON pointer as a dotted path:
// ["plugins","0","name"] becomes "plugins[0].name"; the body itself is "body".
func schemaField(se *openapi3.SchemaError) string {
	var b strings.Builder
	for _, seg := range se.JSONPointer() {
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	if m := unsupportedMember.FindStringSubmatch(se.Reason); se.SchemaField == "properties" && m != nil {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(m[1]) // the refused member itself, not the object holding it
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// unsupportedMember finds the member an additionalProperties failure
// names in its reason.
var unsupportedMember = regexp.MustCompile(`^property "(.+)" is unsupported$`)

// schemaReason words the failure for a client. Enum failures list the
// allowed values.
func schemaReason(se *openapi3.SchemaError) string {
	switch {
	case se.SchemaField == "enum" && se.Schema != nil:
		allowed := make([]string, 0, len(se.Schema.Enum))
		for _, v := range se.Schema.Enum {
			allowed = append(allowed, fmt.Sprint(v))
		}
		return "must be one of: " + strings.Join(allowed, ", ")
	case se.SchemaField == "required":
		return "is required"
	case se.SchemaField == "nullable":
		return "must not be null"
	case se.SchemaField == "oneOf" && se.Schema != nil && se.Schema.Description != "":
		return "must be " + strings.ToLower(se.Schema.Description[:1]) + strings.TrimSuffix(se.Schema.Description[1:], ".")
	}
	if se.Reason != "" {
		return se.Reason
	}
	return "is not valid"
}

// parameterReason words a query or path parameter failure.
func parameterReason(reqErr *openapi3filter.RequestError) string {
	if se := firstSchemaError(reqErr.Err); se != nil {
		return schemaReason(se)
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(reqErr.Err, &parseErr) {
		return "must be " + describeType(reqErr.Parameter)
	}
	if reqErr.Reason != "" {
		return reqErr.Reason
	}
	return "is not valid"
}

func describeType(p *openapi3.Parameter) string {
	if p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Type != nil {
		switch {
		case p.Schema.Value.Type.Is("integer"):
			return "an integer"
		case p.Schema.Value.Type.Is("number"):
			return "a number"
		case p.Schema.Value.Type.Is("boolean"):
			return "a boolean"
		}
	}
	return "valid"
}
