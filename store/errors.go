package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

var (
	// ErrNotFound means the record does not exist (or belongs to another account).
	ErrNotFound = errors.New("not found")
	// ErrConflict means a unique value (an account name, a key prefix) is taken or ambiguous.
	ErrConflict = errors.New("conflict")
	// ErrDeleteProtected means the agent has deleteProtection set and was not deleted.
	ErrDeleteProtected = errors.New("delete protected")
	// ErrUnauthorized means an API key is malformed, unknown, revoked or expired.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInvalid means the caller passed a value the store cannot accept
	// (bad JSON, an unknown tier, scope, status or sort field, an empty name).
	ErrInvalid = errors.New("invalid")
	// ErrConversationNotFound means the agent exists but has no such
	// conversation; it matches ErrNotFound too.
	ErrConversationNotFound = fmt.Errorf("conversation %w", ErrNotFound)
	// ErrQuotaExceeded is matched (errors.Is) by every *QuotaError.
	ErrQuotaExceeded = errors.New("quota exceeded")
)

// QuotaError is returned by CreateAgent (CreateWebhook) when the account
// already has Quota agents (webhooks). Used is how many it has; Resource is
// "webhook" for webhooks, "" for agents. It matches ErrQuotaExceeded with
// errors.Is.
type QuotaError struct {
	Quota, Used int
	Resource    string
}

// Error describes the exhausted quota.
func (e *QuotaError) Error() string {
	resource := e.Resource
	if resource == "" {
		resource = "agent"
	}
	return fmt.Sprintf("%s quota exceeded: %d of %d used", resource, e.Used, e.Quota)
}

// Is reports whether target is ErrQuotaExceeded.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// invalidf returns an ErrInvalid wrapped with a formatted explanation.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// isOurs reports whether err already belongs to the store's vocabulary.
func isOurs(err error) bool {
	var qe *QuotaError
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) ||
		errors.Is(err, ErrDeleteProtected) || errors.Is(err, ErrUnauthorized) ||
		errors.Is(err, ErrInvalid) || errors.Is(err, ErrSecretUnreadable) || errors.As(err, &qe) ||
		errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrBotInUse)
}

// wrap prefixes err with the operation and translates GORM and driver errors
// into the store's vocabulary. Unknown errors keep their text but not their
// chain, so no GORM or driver type escapes; context errors stay matchable.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case isOurs(err):
		return fmt.Errorf("store: %s: %w", op, err)
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("store: %s: %w", op, ErrNotFound)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("store: %s: %w", op, ErrConflict)
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
