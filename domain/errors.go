package domain

import (
	"fmt"
	"strings"
)

// Code classifies every error the store (and whatever else implements the
// domain's persistence) returns to its callers. Callers map codes, not
// messages: server/ has one row per code.
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
	// CodeBusy: the conversation has an active run (RunID) and the
	// message's strategy refuses to wait for it.
	CodeBusy Code = "busy"
	// CodeFinished: the run has ended already, in Status.
	CodeFinished Code = "finished"
	// CodeNotWaiting: the run does not wait for a decision; Status is its
	// status.
	CodeNotWaiting Code = "not_waiting"
)

// Codes lists every Code, so a caller's mapping can be checked to cover
// them all.
var Codes = []Code{CodeNotFound, CodeConflict, CodeDeleteProtected, CodeUnauthorized, CodeInvalid,
	CodeQuotaExceeded, CodeSecretUnreadable, CodeLeaseLost, CodeBotInUse, CodeDisabled, CodePreconditionFailed,
	CodeIdempotencyInUse, CodeIdempotencyReused, CodeBusy, CodeFinished, CodeNotWaiting}

// Error is the one coded error of the domain: the store returns it, and
// server maps its Code to the contract.
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
	// RunID names the run in the way of a CodeBusy.
	RunID string
	// Status is the final status of a CodeFinished run.
	Status string
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
	ErrRunNotFound          = &Error{Code: CodeNotFound, Resource: "run"}
	ErrConversationBusy     = &Error{Code: CodeBusy}
	ErrRunFinished          = &Error{Code: CodeFinished, Resource: "run"}
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
