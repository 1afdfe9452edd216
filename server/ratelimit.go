package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/limit"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// endpointLimits are the per-minute limits of the spec's table for a
// `standard` account, by operationId. Send Message, its stream, Chat
// Completions and the agent's A2A JSON-RPC calls share one counter per
// agent (messageLimited). New refuses to start unless every operation of
// the contract has an entry (checkEndpointLimits).
var endpointLimits = map[string]int64{
	"createAgent":   10,
	"listAgents":    60,
	"getAgent":      60,
	"updateAgent":   30,
	"deleteAgent":   10,
	"exportAgent":   10,
	"sendMessage":   60,
	"streamMessage": 60,
	"resumeStream":  60,
	"cancelMessage": 60,
	"callA2A":       60,

	"createChatCompletion": 60,
	"listModels":           60,
	// A response counts with Send Message; its cancel and delete as a
	// run's cancel.
	"createResponse":         60,
	"getResponse":            60,
	"cancelResponse":         30,
	"deleteResponse":         30,
	"listResponseInputItems": 60,

	"listConversations":        60,
	"getConversation":          60,
	"listConversationMessages": 60,
	"deleteConversation":       10,
	"getAgentAnalytics":        60,
	"listAgentTools":           60,
	"createMemory":             30,
	"listMemories":             60,
	"forgetUser":               10,
	"deleteMemory":             30,
	"createKnowledge":          10,
	"listKnowledge":            60,
	"deleteKnowledge":          10,
	"previewContext":           60,
	"listConnections":          60,
	"getA2AAgentCard":          60,

	"createWebhook":         10,
	"listWebhooks":          60,
	"getWebhook":            60,
	"updateWebhook":         10,
	"deleteWebhook":         10,
	"rotateWebhookSecret":   10,
	"testWebhook":           10,
	"listWebhookDeliveries": 60,
	"retryWebhookDelivery":  10,

	"callMcp": 60,

	"getStatus":       60,
	"listModelPrices": 60,
	"getAccount":      60,
	"getAgentSpend":   60,

	"listRuns":      60,
	"listAgentRuns": 60,
	"getRun":        60,
	"streamRun":     60,
	"cancelRun":     30,
	// A decision counts as a cancel does.
	"decideApprovals": 30,

	// Schedule writes count as Update Agent does.
	"createSchedule": 30,
	"listSchedules":  60,
	"getSchedule":    60,
	"updateSchedule": 30,
	"deleteSchedule": 30,
}

// checkEndpointLimits reports every operation of spec without a positive
// entry in limits, and every entry naming no operation: a missing entry
// would be a limit of 0, refusing every call to the endpoint with 429.
func checkEndpointLimits(spec *openapi3.T, limits map[string]int64) error {
	var problems []string
	inSpec := map[string]bool{}
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			id := specOperationID(op)
			inSpec[id] = true
			if limits[id] <= 0 {
				problems = append(problems, fmt.Sprintf("operation %s has no rate limit", id))
			}
		}
	}
	for id := range limits {
		if !inSpec[id] {
			problems = append(problems, fmt.Sprintf("rate limit for %s names no operation", id))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("server: endpoint rate limits do not match openapi.yaml: %s", strings.Join(problems, "; "))
	}
	return nil
}

// messageLimited are the operations that send an agent a message: they
// count against the agent's one message counter, not an endpoint's.
var messageLimited = map[string]bool{"sendMessage": true, "streamMessage": true, "createChatCompletion": true,
	"createResponse": true, "callA2A": true}

// rateRules are the two limits a request must pass: its endpoint's and its
// account's; agentID is the agent a message goes to ("" when the request
// names none it can be told by, which counts on the endpoint's counter).
func rateRules(p domain.Principal, operationID, agentID string) []limit.Rule {
	endpoint := limit.Rule{Key: "ep:" + p.Account.ID + ":" + operationID, Limit: endpointLimits[operationID] * p.Account.Limits().EndpointMultiplier}
	if messageLimited[operationID] && agentID != "" {
		endpoint = messageRule(p, agentID)
	}
	return []limit.Rule{endpoint, {Key: "acct:" + p.Account.ID, Limit: p.Account.Limits().RPM}}
}

// messageRule is the agent's one message counter, which every path that
// sends the agent a message counts on (MCP's send_message too, whose
// request names the agent only inside its arguments).
func messageRule(p domain.Principal, agentID string) limit.Rule {
	return limit.Rule{Key: "msg:" + p.Account.ID + ":" + agentID, Limit: endpointLimits["sendMessage"] * p.Account.Limits().EndpointMultiplier}
}

// takeRateLimits counts the request against its limits, arranges for the
// binding limit's headers to go out with whatever response follows, and
// refuses it with 429 when a limit is exhausted.
func (s *Server) takeRateLimits(c echo.Context, p domain.Principal, operationID, agentID string) error {
	res, err := limit.Check(c.Request().Context(), s.cfg.Counter, rateRules(p, operationID, agentID)...)
	if err != nil {
		return err
	}
	now := time.Now()
	// Set the headers just before the status line is written, after any
	// handler or generated code had its say, so every response carries them.
	c.Response().Before(func() { setRateHeaders(c.Response().Header(), res, now) })
	if res.Allowed {
		return nil
	}
	return errRateLimited(res.RetryAfter(now), nil)
}

func setRateHeaders(h http.Header, res limit.Result, now time.Time) {
	remaining := strconv.FormatInt(max(res.Remaining, 0), 10)
	h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
	h.Set("X-RateLimit-Remaining", remaining)
	h.Set("X-RateLimit-Reset", strconv.FormatInt(res.Reset.Unix(), 10))
	h.Set("RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
	h.Set("RateLimit-Remaining", remaining)
	h.Set("RateLimit-Reset", strconv.Itoa(res.RetryAfter(now)))
}

// errRateLimited is the 429 of the contract; extra details (the concurrency
// cap names its limit) are merged in.
func errRateLimited(retryAfter int, extra map[string]any) *apiError {
	details := map[string]any{"retryAfter": retryAfter}
	for k, v := range extra {
		details[k] = v
	}
	return &apiError{
		Status: http.StatusTooManyRequests, Code: gen.RATELIMITEXCEEDED,
		Message: "Rate limit exceeded, retry after " + strconv.Itoa(retryAfter) + " seconds.",
		Details: details,
		Header:  http.Header{"Retry-After": {strconv.Itoa(retryAfter)}},
	}
}
