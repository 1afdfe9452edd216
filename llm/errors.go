package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
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

// Error is the failure of a Generate or Stream call. Reason is a fixed
// sentence for people, one per kind of failure (with the provider's HTTP
// status), which may be shown to API clients and stored. Detail is the
// provider's own text, which may name the organization and the ends of the
// operator's key: it is for logs only, with anything that looks like a key
// or an organization id masked. Err is the underlying error, unmasked.
type Error struct {
	Kind     Kind
	Provider string
	Reason   string
	// Status is the HTTP status the provider answered, zero when none.
	Status int
	Detail string
	// RetryAfter is the provider's Retry-After, zero when it sent none.
	RetryAfter time.Duration
	// Model is the model the call asked for.
	Model string
	// UnknownModel reports that the provider answered that Model does not
	// exist or was retired (a KindRequest failure): the agent's
	// configuration is at fault, and Detail is the provider's reason.
	UnknownModel bool
	Err          error
}

// Error returns "llm: <provider>: <kind>: <reason>".
func (e *Error) Error() string {
	return fmt.Sprintf("llm: %s: %s: %s", e.Provider, e.Kind, e.Reason)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// maxDetailLen bounds the provider text copied into a Detail.
const maxDetailLen = 300

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
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("The model provider did not answer within %s.", a.timeout)
	case rec.transportErr != nil:
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("The model provider could not be reached (%s).", netReason(rec.transportErr))
	case rec.status >= http.StatusBadRequest:
		e.Kind, e.Status, e.Detail = kindForStatus(rec.status), rec.status, detail(rec.provErr.message())
		e.Reason = fixedReason(e.Kind, rec.status)
	case rec.provErr != nil:
		e.Kind, e.Detail = kindForErrorType(rec.provErr.Type), detail(rec.provErr.message())
		e.Reason = fixedReason(e.Kind, 0)
		if e.Kind == KindUnavailable {
			e.Reason = "The model provider broke off the reply."
		}
	case rec.readErr != nil:
		e.Kind, e.Reason = KindUnavailable, fmt.Sprintf("The model provider's connection was lost during the reply (%s).", netReason(rec.readErr))
	case callErr != nil:
		e.Kind, e.Detail = kindForMapped(mapError(a.provider, callErr)), detail(callErr.Error())
		e.Reason = fixedReason(e.Kind, 0)
	default:
		e.Kind, e.Reason = KindUnavailable, "The model provider ended the reply early."
	}
	e.Model = a.req.Model
	e.UnknownModel = e.Kind == KindRequest && unknownModel(rec)
	return e
}

// unknownModel reports whether the provider's answer says the model does
// not exist or was retired: an error code saying so (OpenAI's
// model_not_found, Groq's model_decommissioned), or the provider's own
// error body on a 404 (Anthropic's not_found_error, Google's NOT_FOUND,
// ollama's "model not found"), since the model is the one thing a chat or
// embeddings call names that can be missing. A 404 without the provider's
// error body (a wrong base URL) is not the model's.
func unknownModel(rec record) bool {
	p := rec.provErr
	switch {
	case p == nil:
		return false
	case p.Type == "model_not_found" || p.Type == "model_decommissioned":
		return true
	}
	return rec.status == http.StatusNotFound && !p.unparsed
}

// fixedReason is the Reason of a failure of kind, naming the provider's
// HTTP status when there was one.
func fixedReason(k Kind, status int) string {
	var r string
	switch k {
	case KindAuth:
		r = "The model provider rejected the credentials"
	case KindRateLimited:
		r = "The model provider is rate limiting requests"
	case KindUnavailable:
		r = "The model provider is unavailable"
	default:
		r = "The model provider rejected the request"
	}
	if status != 0 {
		r += fmt.Sprintf(" (HTTP %d)", status)
	}
	return r + "."
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

// secretPattern matches what may be a credential or an account id in a
// provider's text: OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), Groq (gsk_)
// and Google (AIza) keys, also shown shortened ("sk-abc1****1234"), OpenAI
// organization ids (org-), and any long base62 or hex token.
var secretPattern = regexp.MustCompile(`\b(?:sk-|gsk[_-]|AIza|org-)[A-Za-z0-9_\-*.]*[A-Za-z0-9_*]|[A-Za-z0-9_\-]{32,}`)

// redact masks everything in s that secretPattern matches.
func redact(s string) string {
	return secretPattern.ReplaceAllString(s, "[redacted]")
}

// detail is the provider's text for a Detail: masked, on one line,
// shortened.
func detail(text string) string {
	text = redact(strings.Join(strings.Fields(text), " "))
	if r := []rune(text); len(r) > maxDetailLen {
		text = string(r[:maxDetailLen]) + "…"
	}
	return text
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
