package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// checkVersion returns ErrPreconditionFailed unless want is AnyVersion or
// the version stored.
func checkVersion(stored, want int64) error {
	if want != domain.AnyVersion && want != stored {
		return domain.ErrPreconditionFailed
	}
	return nil
}

// invalidf returns a CodeInvalid error with a formatted explanation.
func invalidf(format string, args ...any) error {
	return &domain.Error{Code: domain.CodeInvalid, Detail: fmt.Sprintf(format, args...)}
}

// fieldError returns a CodeInvalid error naming the refused field.
func fieldError(field, reason string) error {
	return &domain.Error{Code: domain.CodeInvalid, Field: field, Reason: reason}
}

// quotaError returns a CodeQuotaExceeded error of resource.
func quotaError(resource string, quota, used int) error {
	return &domain.Error{Code: domain.CodeQuotaExceeded, Resource: resource, Quota: quota, Used: used}
}

// wrap prefixes err with the operation and translates GORM and driver errors
// into the store's vocabulary. Unknown errors keep their text but not their
// chain, so no GORM or driver type escapes; context errors stay matchable.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.As(err, new(*domain.Error)):
		return fmt.Errorf("store: %s: %w", op, err)
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("store: %s: %w", op, domain.ErrNotFound)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("store: %s: %w", op, domain.ErrConflict)
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
