package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// Code classifies every error the store returns to its callers. Callers
// map codes, not messages: server/ has one row per code.
type Code string

// The codes of Error.
const (
	// CodeNotFound: the record does not exist (or belongs to another
	// account); Resource names it when known.
	CodeNotFound Code = "not_found"
	// CodeConflict: a unique value (an account name, a key prefix) is
	// taken or ambiguous.
	CodeConflict Code = "conflict"
	// CodeDeleteProtected: the agent has deleteProtection set.
	CodeDeleteProtected Code = "delete_protected"
	// CodeUnauthorized: an API key is malformed, unknown, revoked or expired.
	CodeUnauthorized Code = "unauthorized"
	// CodeInvalid: the caller passed a value the store cannot accept; Field
	// and Reason name it when one field is at fault.
	CodeInvalid Code = "invalid"
	// CodeQuotaExceeded: the account has Quota of Resource already.
	CodeQuotaExceeded Code = "quota_exceeded"
	// CodeSecretUnreadable: a stored secret does not decrypt under the
	// configured key.
	CodeSecretUnreadable Code = "secret_unreadable"
	// CodeLeaseLost: a platform connection's lease was taken over.
	CodeLeaseLost Code = "lease_lost"
	// CodeBotInUse: the bot account is connected for another agent.
	CodeBotInUse Code = "bot_in_use"
	// CodeDisabled: the webhook is disabled, so it cannot be tested.
	CodeDisabled Code = "disabled"
	// CodePreconditionFailed: the resource's version is not the one the
	// caller named (If-Match): it changed since the caller read it.
	CodePreconditionFailed Code = "precondition_failed"
	// CodeIdempotencyInUse: a request with the same Idempotency-Key is
	// still running.
	CodeIdempotencyInUse Code = "idempotency_in_use"
	// CodeIdempotencyReused: the Idempotency-Key was first used for
	// another request.
	CodeIdempotencyReused Code = "idempotency_reused"
)

// Codes lists every Code, so a caller's mapping can be checked to cover
// them all.
var Codes = []Code{CodeNotFound, CodeConflict, CodeDeleteProtected, CodeUnauthorized, CodeInvalid,
	CodeQuotaExceeded, CodeSecretUnreadable, CodeLeaseLost, CodeBotInUse, CodeDisabled, CodePreconditionFailed,
	CodeIdempotencyInUse, CodeIdempotencyReused}

// Error is the one error type of the store.
type Error struct {
	Code Code
	// Resource is what is missing or exhausted ("agent", "conversation",
	// "webhook", "delivery", "memory", "knowledge"; of quotas also
	// "knowledge_bytes"); "" when the code needs none or it is not known.
	Resource string
	// Field and Reason name the refused value of a CodeInvalid, e.g.
	// "settings.secrets.TOKEN".
	Field, Reason string
	// Quota and Used describe a CodeQuotaExceeded.
	Quota, Used int
	// Detail says more, for logs only.
	Detail string
}

// Error describes the error for logs.
func (e *Error) Error() string {
	switch {
	case e.Code == CodeQuotaExceeded:
		return fmt.Sprintf("%s quota exceeded: %d of %d used", e.resource(), e.Used, e.Quota)
	case e.Field != "":
		return fmt.Sprintf("%s %s", e.Field, e.Reason)
	}
	msg := strings.ReplaceAll(string(e.Code), "_", " ")
	if e.Resource != "" {
		msg = e.Resource + " " + msg
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *Error) resource() string {
	if e.Resource == "" {
		return "agent"
	}
	return e.Resource
}

// Is matches a target *Error of the same code whose Resource, when set,
// agrees: every not-found matches ErrNotFound, only a webhook's matches
// ErrWebhookNotFound.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Resource == "" || t.Resource == e.Resource)
}

// The errors callers match with errors.Is; any *Error of the same code
// (and resource) matches them.
var (
	ErrNotFound             = &Error{Code: CodeNotFound}
	ErrConversationNotFound = &Error{Code: CodeNotFound, Resource: "conversation"}
	ErrWebhookNotFound      = &Error{Code: CodeNotFound, Resource: "webhook"}
	ErrDeliveryNotFound     = &Error{Code: CodeNotFound, Resource: "delivery"}
	ErrMemoryNotFound       = &Error{Code: CodeNotFound, Resource: "memory"}
	ErrKnowledgeNotFound    = &Error{Code: CodeNotFound, Resource: "knowledge"}
	ErrConflict             = &Error{Code: CodeConflict}
	ErrDeleteProtected      = &Error{Code: CodeDeleteProtected}
	ErrUnauthorized         = &Error{Code: CodeUnauthorized}
	ErrInvalid              = &Error{Code: CodeInvalid}
	ErrQuotaExceeded        = &Error{Code: CodeQuotaExceeded}
	ErrSecretUnreadable     = &Error{Code: CodeSecretUnreadable}
	ErrLeaseLost            = &Error{Code: CodeLeaseLost}
	ErrBotInUse             = &Error{Code: CodeBotInUse}
	ErrWebhookDisabled      = &Error{Code: CodeDisabled, Resource: "webhook"}
	ErrPreconditionFailed   = &Error{Code: CodePreconditionFailed}
)

// AnyVersion is the version a conditional write names to apply whatever
// the resource's version is.
const AnyVersion int64 = 0

// checkVersion returns ErrPreconditionFailed unless want is AnyVersion or
// the version stored.
func checkVersion(stored, want int64) error {
	if want != AnyVersion && want != stored {
		return ErrPreconditionFailed
	}
	return nil
}

// invalidf returns a CodeInvalid error with a formatted explanation.
func invalidf(format string, args ...any) error {
	return &Error{Code: CodeInvalid, Detail: fmt.Sprintf(format, args...)}
}

// fieldError returns a CodeInvalid error naming the refused field.
func fieldError(field, reason string) error {
	return &Error{Code: CodeInvalid, Field: field, Reason: reason}
}

// quotaError returns a CodeQuotaExceeded error of resource.
func quotaError(resource string, quota, used int) error {
	return &Error{Code: CodeQuotaExceeded, Resource: resource, Quota: quota, Used: used}
}

// wrap prefixes err with the operation and translates GORM and driver errors
// into the store's vocabulary. Unknown errors keep their text but not their
// chain, so no GORM or driver type escapes; context errors stay matchable.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.As(err, new(*Error)):
		return fmt.Errorf("store: %s: %w", op, err)
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("store: %s: %w", op, ErrNotFound)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("store: %s: %w", op, ErrConflict)
	case errors.Is(err, errVersionMoved):
		return fmt.Errorf("store: %s: %w", op, errVersionMoved)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("store: %s: %w", op, context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("store: %s: %w", op, context.DeadlineExceeded)
	default:
		return fmt.Errorf("store: %s: %v", op, err)
	}
}

// isNotFound reports whether a GORM read found no row.
func isNotFound(err error) bool { return errors.Is(err, gorm.ErrRecordNotFound) }
