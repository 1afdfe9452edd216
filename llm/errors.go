package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
)

// Kind classifies a provider failure by what the caller should do about it.
type Kind int

const (
	// KindNotConfigured: the provider cannot be used as configured, usually
	// because it has no API key; Reason names the variable to set, e.g.
	// "OPENAI_API_KEY is not set".
	KindNotConfigured Kind = iota
	// KindAuth: the provider rejected the credentials (401/403).
	KindAuth
	// KindRateLimited: the provider rate-limited the call or the account is
	// out of quota (429); RetryAfter holds its Retry-After when it sent one.
	KindRateLimited
	// KindUnavailable: the provider timed out, could not be reached, failed
	// (5xx) or broke off a reply.
	KindUnavailable
	// KindRequest: the failure is about this request: unknown model (404),
	// content refused, bad parameters (400/422), an unusable reply.
	KindRequest
)

// String returns a short lowercase name of the kind.
func (k Kind) String() string {
	switch k {
	case KindNotConfigured:
		return "not configured"
	case KindAuth:
		return "authentication failed"
	case KindRateLimited:
		return "rate limited"
	case KindUnavailable:
		return "unavailable"
	case KindRequest:
		return "request failed"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is the failure of a Generate or Stream call. Reason is a sentence
// for people (it may be shown to API clients and never contains the key);
// Err is the underlying error for logs.
type Error struct {
	Kind     Kind
	Provider string
	Reason   string
	// RetryAfter is the provider's Retry-After, zero when it sent none.
	RetryAfter time.Duration
	Err        error
}

// Error returns "llm: <provider>: <kind>: <reason>".
func (e *Error) Error() string {
	return fmt.Sprintf("llm: %s: %s: %s", e.Provider, e.Kind, e.Reason)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// maxReasonLen bounds the provider text copied into a Reason.
const maxReasonLen = 300

// errTimedOut is the cancel cause of a call whose Timeout elapsed.
var errTimedOut = errors.New("provider call timed out")

// classify turns the outcome of one failed attempt into an *Error. The
// recorded HTTP exchange is authoritative (status, transport error, stream
// error); langchaingo's string-matching MapError only decides what the
// exchange cannot explain.
func (a *attempt) classify(callErr error) *Error {
	rec := a.ex.snapshot()
	e := &Error{Provider: a.provider, RetryAfter: rec.retryAfter, Err: callErr}
	if e.Err == nil {
		e.Err = firstErr(rec.transportErr, rec.readErr, rec.provErr.err())
	}
	switch {
	case a.timedOut():
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("%s did not answer within %s", a.provider, a.timeout)
	case rec.transportErr != nil:
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("%s is unreachable: %s", a.provider, netReason(rec.transportErr))
	case rec.status >= http.StatusBadRequest:
		e.Kind = kindForStatus(rec.status)
		e.Reason = withDetail(fmt.Sprintf("%s answered HTTP %d", a.provider, rec.status), rec.provErr.message())
	case rec.provErr != nil:
		e.Kind = kindForErrorType(rec.provErr.Type)
		e.Reason = withDetail(fmt.Sprintf("%s broke off the reply", a.provider), rec.provErr.message())
	case rec.readErr != nil:
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("%s connection lost during the reply: %s", a.provider, netReason(rec.readErr))
	case callErr != nil:
		e.Kind = kindForMapped(mapError(a.provider, callErr))
		e.Reason = withDetail(fmt.Sprintf("%s call failed", a.provider), callErr.Error())
	default:
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("%s ended the reply early", a.provider)
	}
	return e
}

// kindForStatus maps an HTTP status from a provider to a Kind.
func kindForStatus(status int) Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusTooManyRequests || status == http.StatusPaymentRequired:
		return KindRateLimited
	case status == http.StatusRequestTimeout || status >= http.StatusInternalServerError:
		return KindUnavailable
	}
	return KindRequest
}

// kindForErrorType maps the error type of a provider's error body or stream
// error event (OpenAI "type"/"code", Anthropic "error.type") to a Kind. A
// stream broken off for an unknown reason counts as unavailable.
func kindForErrorType(typ string) Kind {
	switch typ {
	case "authentication_error", "permission_error", "invalid_api_key":
		return KindAuth
	case "rate_limit_error", "rate_limit_exceeded", "requests", "tokens", "insufficient_quota":
		return KindRateLimited
	case "invalid_request_error", "not_found_error", "request_too_large", "model_not_found":
		return KindRequest
	}
	return KindUnavailable
}

// mapError runs langchaingo's provider error mapper over err.
func mapError(provider string, err error) error {
	switch provider {
	case ProviderOpenAI, ProviderGroq, ProviderGoogle:
		return openai.MapError(err)
	case ProviderAnthropic:
		return anthropic.MapError(err)
	}
	return llms.NewErrorMapper(provider).Map(err)
}

// kindForMapped maps a langchaingo standardized error to a Kind.
func kindForMapped(err error) Kind {
	switch {
	case llms.IsRateLimitError(err), llms.IsQuotaExceededError(err):
		return KindRateLimited
	case llms.IsAuthenticationError(err):
		return KindAuth
	case llms.IsProviderUnavailableError(err), llms.IsTimeoutError(err):
		return KindUnavailable
	}
	return KindRequest
}

// netReason describes a transport error without addresses or URLs.
func netReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed unexpectedly"
	case errors.As(err, &dnsErr):
		return "host not found"
	case errors.Is(err, context.DeadlineExceeded), isNetTimeout(err):
		return "network timeout"
	}
	return "network error"
}

// isNetTimeout reports whether err is a net.Error that timed out.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// withDetail appends the provider's own words to a reason, shortened.
func withDetail(reason, detail string) string {
	detail = strings.Join(strings.Fields(detail), " ")
	if detail == "" {
		return reason
	}
	if r := []rune(detail); len(r) > maxReasonLen {
		detail = string(r[:maxReasonLen]) + "…"
	}
	return reason + ": " + detail
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// retryable reports whether another attempt may help: only an unavailable
// provider is retried.
func retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindUnavailable
}
