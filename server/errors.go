package server

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/price"
	"github.com/agentd/agentd/streamlog"
	"github.com/agentd/agentd/turn"
)

// apiError is an error with its place in the API: status, code, message and
// details. Handlers and middleware return it; errorHandler writes it.
type apiError struct {
	Status  int
	Code    gen.ErrorCode
	Message string
	Details map[string]any
	// Header is set on the response next to the body (Retry-After).
	Header http.Header
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// fieldError is a 400 naming the bad field by its dotted path.
func fieldError(code gen.ErrorCode, field, reason string) *apiError {
	return &apiError{
		Status:  http.StatusBadRequest,
		Code:    code,
		Message: fmt.Sprintf("Invalid value for %s: %s.", field, reason),
		Details: map[string]any{"field": field, "reason": reason},
	}
}

func invalidRequest(field, reason string) *apiError {
	return fieldError(gen.INVALIDREQUEST, field, reason)
}

var (
	// errUnauthorized says how to authenticate, as a bearer-token 401
	// must: MCP clients read the header to know what to ask for.
	errUnauthorized = &apiError{Status: http.StatusUnauthorized, Code: gen.UNAUTHORIZED,
		Message: "Invalid or missing API key.", Header: http.Header{"Www-Authenticate": {`Bearer realm="agentd"`}}}
	errForbidden = &apiError{Status: http.StatusForbidden, Code: gen.INSUFFICIENTPERMISSIONS,
		Message: "This API key does not have the permission for this operation."}
	errAgentNotFound = &apiError{Status: http.StatusNotFound, Code: gen.AGENTNOTFOUND,
		Message: "Agent not found."}
	errConversationNotFound = &apiError{Status: http.StatusNotFound, Code: gen.CONVERSATIONNOTFOUND,
		Message: "Conversation not found."}
	errWebhookNotFound = &apiError{Status: http.StatusNotFound, Code: gen.WEBHOOKNOTFOUND,
		Message: "Webhook not found."}
	errDeliveryNotFound = &apiError{Status: http.StatusNotFound, Code: gen.DELIVERYNOTFOUND,
		Message: "Delivery not found."}
	errMemoryNotFound = &apiError{Status: http.StatusNotFound, Code: gen.MEMORYNOTFOUND,
		Message: "Memory not found."}
	errMessageNotFound = &apiError{Status: http.StatusNotFound, Code: gen.MESSAGENOTFOUND,
		Message: "Message not found: the agent has no such reply, or its stream is no longer kept."}
	errKnowledgeNotFound = &apiError{Status: http.StatusNotFound, Code: gen.KNOWLEDGENOTFOUND,
		Message: "Knowledge document not found."}
	errRunNotFound      = &apiError{Status: http.StatusNotFound, Code: gen.RUNNOTFOUND, Message: "Run not found."}
	errScheduleNotFound = &apiError{Status: http.StatusNotFound, Code: gen.SCHEDULENOTFOUND, Message: "Schedule not found."}
	// errResponseNotFound is a response of the OpenAI Responses API that
	// is not found: a response is a run, so it is the run's not-found,
	// which OpenAI's shape tells as `not_found` (openAICodeKinds).
	errResponseNotFound = &apiError{Status: http.StatusNotFound, Code: gen.RUNNOTFOUND, Message: "Response not found."}
	errWebhookDisabled  = &apiError{Status: http.StatusConflict, Code: gen.WEBHOOKDISABLED,
		Message: "The webhook is disabled; enable it before testing it."}
	errPreconditionFailed = &apiError{Status: http.StatusPreconditionFailed, Code: gen.PRECONDITIONFAILED,
		Message: "The resource changed since the version If-Match names; nothing was changed. Get it again and retry."}
	errIdempotencyKeyInUse = &apiError{Status: http.StatusConflict, Code: gen.IDEMPOTENCYKEYINUSE,
		Message: "A request with this Idempotency-Key is still running; retry after it ends to get its answer."}
	errIdempotencyKeyReused = &apiError{Status: http.StatusUnprocessableEntity, Code: gen.IDEMPOTENCYKEYREUSED,
		Message: "This Idempotency-Key was used for another request in the last 24 hours; use a new key."}
	errNotFound = &apiError{Status: http.StatusNotFound, Code: gen.NOTFOUND,
		Message: "No such endpoint."}
	errMethodNotAllowed = &apiError{Status: http.StatusMethodNotAllowed, Code: gen.METHODNOTALLOWED,
		Message: "This method is not allowed on this endpoint."}
	errUnsupportedMediaType = &apiError{Status: http.StatusUnsupportedMediaType, Code: gen.UNSUPPORTEDMEDIATYPE,
		Message: "Content-Type must be application/json."}
)

func errPayloadTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Code: gen.PAYLOADTOOLARGE,
		Message: fmt.Sprintf("Request body exceeds %d bytes.", limit)}
}

func errInternal(requestID string) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: gen.INTERNALERROR,
		Message: fmt.Sprintf("Internal error (request id %s).", requestID)}
}

var errDeleteProtected = &apiError{
	Status: http.StatusForbidden, Code: gen.DELETEPROTECTED,
	Message: "The agent is protected from deletion.",
	Details: map[string]any{"protection": "enabled",
		"reason": "deleteProtection is set on this agent; set it to false with PATCH before deleting"},
}

// storeErrors is the one table from the store's error codes to the
// contract; TestEveryStoreCodeIsMapped fails when a code has no row. The
// codes no operation of the API can meet (the spec refuses the values
// first, or only the CLI and the platform runtime see them) are internal
// errors, said so here rather than left out.
var storeErrors = map[domain.Code]func(e *domain.Error) *apiError{
	domain.CodeNotFound:           notFound,
	domain.CodeDeleteProtected:    func(*domain.Error) *apiError { return errDeleteProtected },
	domain.CodeUnauthorized:       func(*domain.Error) *apiError { return errUnauthorized },
	domain.CodeQuotaExceeded:      errQuota,
	domain.CodeDisabled:           func(*domain.Error) *apiError { return errWebhookDisabled },
	domain.CodePreconditionFailed: func(*domain.Error) *apiError { return errPreconditionFailed },
	domain.CodeIdempotencyInUse:   func(*domain.Error) *apiError { return errIdempotencyKeyInUse },
	domain.CodeIdempotencyReused:  func(*domain.Error) *apiError { return errIdempotencyKeyReused },
	domain.CodeBusy:               func(e *domain.Error) *apiError { return conversationBusy(e.RunID) },
	domain.CodeNotWaiting: func(e *domain.Error) *apiError {
		return &apiError{Status: http.StatusConflict, Code: gen.RUNNOTWAITING, Message: "The run does not wait for a decision.",
			Details: map[string]any{"status": e.Status}}
	},
	domain.CodeFinished: func(e *domain.Error) *apiError {
		return &apiError{Status: http.StatusConflict, Code: gen.RUNFINISHED, Message: "The run has already finished.",
			Details: map[string]any{"status": e.Status}}
	},
	domain.CodeInvalid: func(e *domain.Error) *apiError {
		if e.Field == "" {
			return nil // a value the spec let through but the store could not encode: a bug of ours
		}
		return invalidRequest(e.Field, e.Reason)
	},
	// Account names and key prefixes are the only unique values: the CLI's.
	domain.CodeConflict: nil,
	// A turn reports secrets that do not open as an unavailable agent.
	domain.CodeSecretUnreadable: nil,
	// Leases and bots belong to the platform runtime.
	domain.CodeLeaseLost: nil,
	domain.CodeBotInUse:  nil,
}

// notFound names what is missing. Every path below /agents/{agentId} looks
// its agent up first, so a not-found that names no other resource is the
// agent's.
func notFound(e *domain.Error) *apiError {
	switch e.Resource {
	case "conversation":
		return errConversationNotFound
	case "webhook":
		return errWebhookNotFound
	case "delivery":
		return errDeliveryNotFound
	case "memory":
		return errMemoryNotFound
	case "knowledge":
		return errKnowledgeNotFound
	case "message":
		return errMessageNotFound
	case "run":
		return errRunNotFound
	case "schedule":
		return errScheduleNotFound
	case "response":
		return errResponseNotFound
	}
	return errAgentNotFound
}

// asAPIError maps err to the contract when it is an *apiError or belongs to
// the vocabulary of the store, of a turn or of the model providers; ok is
// false for anything else (an internal error).
func asAPIError(err error) (ae *apiError, ok bool) {
	if errors.As(err, &ae) {
		return ae, true
	}
	var se *domain.Error
	if errors.As(err, &se) {
		if toAPI := storeErrors[se.Code]; toAPI != nil {
			if ae := toAPI(se); ae != nil {
				return ae, true
			}
		}
		return nil, false
	}
	if errors.Is(err, streamlog.ErrNotFound) {
		return errMessageNotFound, true
	}
	if ae, ok := turnError(err); ok {
		return ae, true
	}
	var le *llm.Error
	if errors.As(err, &le) {
		return providerError(le, domain.StatusError, 0), true
	}
	return nil, false
}

// conversationBusy is the 409 of a message whose conversation has a run
// in the way (runID), or whose run another message stopped (runID the
// one that replaced it).
func conversationBusy(runID string) *apiError {
	return &apiError{Status: http.StatusConflict, Code: gen.CONVERSATIONBUSY,
		Message: "The conversation is busy with another run.", Details: map[string]any{"runId": runID}}
}

// runPending is the 504 of a request whose run goes on without it (past
// RunWait, or handed over by this process stopping) on the OpenAI and MCP
// paths, whose shapes have no room for the Run that Send Message answers
// with 202: the message names the run and where to read it.
func runPending(run domain.Run) *apiError {
	return &apiError{Status: http.StatusGatewayTimeout, Code: gen.RUNPENDING,
		Message: fmt.Sprintf("The run %s goes on without this request: read it at %s.", run.ID, runLocation(run)),
		Details: map[string]any{"runId": run.ID}}
}

// approvalRequired is the 409 of a request whose run waits for a
// person's decision on its tool calls, on the OpenAI and MCP paths: the
// run goes on once decided.
func approvalRequired(run domain.Run) *apiError {
	return &apiError{Status: http.StatusConflict, Code: gen.APPROVALREQUIRED,
		Message: fmt.Sprintf("The run %s waits for a decision on its tool calls and goes on once they are decided: read it at %s.",
			run.ID, runLocation(run)),
		Details: map[string]any{"runId": run.ID}}
}

// turnError maps the errors of the turn package.
func turnError(err error) (*apiError, bool) {
	var unavailable *turn.UnavailableError
	var provider *turn.ProviderError
	var stopped *turn.StoppedError
	var over *domain.BudgetExceededError
	switch {
	case errors.As(err, &stopped):
		return conversationBusy(cmp.Or(stopped.By, stopped.Run.ID)), true
	case errors.Is(err, turn.ErrHandedOver):
		return &apiError{Status: http.StatusServiceUnavailable, Code: gen.STREAMLOST,
			Message: "The replica answering stopped; the run goes on on another one."}, true
	case errors.Is(err, turn.ErrEmptyText):
		return fieldError(gen.INVALIDMESSAGE, "text", "must not be empty or only whitespace"), true
	case errors.Is(err, turn.ErrBusy):
		return errRateLimited(1, map[string]any{"limit": "concurrency"}), true
	case errors.As(err, &unavailable):
		return errUnavailable(unavailable.Status, unavailable.Reason, unavailable.RetryAfter), true
	case errors.As(err, &provider):
		return providerError(provider.Err, provider.Status, provider.RetryAfter), true
	case errors.As(err, &over):
		return budgetExceeded(over.Budget), true
	}
	return nil, false
}

// sentence is s, an error's text, as a message: capitalised, with a full
// stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// budgetExceeded is the 402 of a run a spent budget b refused.
func budgetExceeded(b domain.BudgetState) *apiError {
	return &apiError{Status: http.StatusPaymentRequired, Code: gen.BUDGETEXCEEDED,
		Message: sentence((&domain.BudgetExceededError{Budget: b}).Error()),
		Details: map[string]any{"scope": string(b.Scope), "period": string(b.Period), "limitUsd": price.USD(b.LimitMicros),
			"spentUsd": price.USD(b.SpentMicros), "resetsAt": timestamp(b.ResetsAt)}}
}

func errQuota(q *domain.Error) *apiError {
	msg := fmt.Sprintf("Agent quota of %d reached; delete an agent or raise the quota.", q.Quota)
	switch q.Resource {
	case "webhook":
		msg = fmt.Sprintf("Webhook quota of %d reached; delete a webhook first.", q.Quota)
	case "memory":
		msg = fmt.Sprintf("The agent holds the most memories it may (%d); delete some first.", q.Quota)
	case "knowledge":
		msg = fmt.Sprintf("The agent holds the most knowledge documents it may (%d); delete one first.", q.Quota)
	case "knowledge_bytes":
		msg = fmt.Sprintf("The agent's knowledge would pass %d bytes; delete a document first.", q.Quota)
	case "schedule":
		msg = fmt.Sprintf("The agent has the most schedules it may (%d); delete one first.", q.Quota)
	case "reminder":
		msg = fmt.Sprintf("The user has the most reminders waiting they may (%d); delete one first.", q.Quota)
	}
	return &apiError{
		Status: http.StatusForbidden, Code: gen.INSUFFICIENTQUOTA,
		Message: msg,
		Details: map[string]any{"quota": q.Quota, "used": q.Used},
	}
}

// providerError maps a failed provider call: a failure about this request
// is 502 MODEL_ERROR (naming the model, with the provider's reason, when
// the provider does not serve it); any other leaves the agent unable to
// answer (503), reporting status, the agent's status afterwards, and
// retryAfter, the cool-down the failure started (0 for none).
func providerError(le *llm.Error, status domain.Status, retryAfter time.Duration) *apiError {
	if le.UnknownModel {
		return &apiError{
			Status: http.StatusBadGateway, Code: gen.MODELERROR,
			Message: fmt.Sprintf("The model provider does not serve the model %s; choose another model for the agent.", le.Model),
			Details: map[string]any{"provider": le.Provider, "model": le.Model, "reason": le.Detail},
		}
	}
	if le.Kind == llm.KindRequest {
		return &apiError{
			Status: http.StatusBadGateway, Code: gen.MODELERROR,
			Message: "The model provider rejected the request.",
			Details: map[string]any{"provider": le.Provider, "reason": le.Reason},
		}
	}
	return errUnavailable(status, le.Reason, retryAfter)
}

// errUnavailable is the 503 of an agent that cannot answer, with the
// agent's status and why. An agent cooling down after a provider failure
// refuses every message until retryAfter has passed: Retry-After and
// details.retryAfter say so in whole seconds, rounded up so a client that
// waits them finds it answering; none when retryAfter is 0 (an inactive
// agent waits for a change, not for time).
func errUnavailable(status domain.Status, reason string, retryAfter time.Duration) *apiError {
	ae := &apiError{
		Status: http.StatusServiceUnavailable, Code: gen.AGENTUNAVAILABLE,
		Message: "The agent is not available.",
		Details: map[string]any{"status": string(status), "reason": reason},
	}
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		ae.Details["retryAfter"] = secs
		ae.Header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	}
	return ae
}

// errorBody is the error envelope of the contract (gen.ErrorEnvelope with
// details kept as a plain map, since their members depend on the code).
type errorBody struct {
	Success bool `json:"success"`
	Error   struct {
		Code    gen.ErrorCode  `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

// envelope renders the error body of the contract.
func (e *apiError) envelope() errorBody {
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.Details = e.Code, e.Message, e.Details
	return b
}
