package domain

import "time"

// WebhookQuota is how many webhooks an account may have.
const WebhookQuota = 20

// Webhook is one subscription of an account to events.
type Webhook struct {
	ID             string // "wh_" + lowercase ULID
	AccountID      string
	URL            string
	Events         []string // event types, or AllEvents
	Description    string
	AgentID        string // only events of this agent; "" for all
	Enabled        bool
	DisabledReason string // why the service disabled it
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Version        int64 // grows with every change Get shows
	// Secret is the signing secret in clear, set by CreateWebhook and
	// RotateWebhookSecret only.
	Secret string
}

// WebhookChanges are the members an update replaces; nil leaves one as it is.
type WebhookChanges struct {
	URL         *string
	Events      []string
	Description *string
	Enabled     *bool
}

// EventType names a kind of webhook event.
type EventType string

// The event types, as openapi.yaml's WebhookEventType lists them.
const (
	EventAgentCreated       EventType = "agent.created"
	EventAgentUpdated       EventType = "agent.updated"
	EventAgentDeleted       EventType = "agent.deleted"
	EventAgentStatusChanged EventType = "agent.status_changed"
	EventMessageCompleted   EventType = "message.completed"
	EventConnectionChanged  EventType = "connection.changed"
	EventWebhookTest        EventType = "webhook.test"
	EventRunCompleted       EventType = "run.completed"
	EventRunFailed          EventType = "run.failed"
	EventRunCancelled       EventType = "run.cancelled"
	EventRunRequiresAction  EventType = "run.requires_action"
	EventBudgetThreshold    EventType = "budget.threshold"
	EventBudgetExceeded     EventType = "budget.exceeded"
)

// EventTypes lists every event type.
var EventTypes = []EventType{
	EventAgentCreated, EventAgentUpdated, EventAgentDeleted, EventAgentStatusChanged,
	EventMessageCompleted, EventConnectionChanged, EventWebhookTest,
	EventRunCompleted, EventRunFailed, EventRunCancelled, EventRunRequiresAction,
	EventBudgetThreshold, EventBudgetExceeded,
}

// AllEvents is the webhook event selector matching every type.
const AllEvents = "*"

// Event is one change to report to the account's webhooks. Data is
// marshalled to JSON as the body's `data`; it must carry no secret.
type Event struct {
	AccountID string
	AgentID   string // the agent it is about; "" for none
	// ConversationID is the conversation whose messages Data quotes; ""
	// for none.
	ConversationID string
	Type           EventType
	Data           any
	// WebhookID sends the event to that webhook alone, whatever its filters
	// and state (webhook.test); "" fans it out to the matching webhooks.
	WebhookID string
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// The delivery states.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// Delivery is one event sent to one webhook.
type Delivery struct {
	ID             string // "whd_" + lowercase ULID
	WebhookID      string
	EventID        string // "evt_" + lowercase ULID, the webhook-id header
	Type           EventType
	Status         DeliveryStatus
	Attempts       int
	LastStatusCode int    // 0: no answer yet
	LastError      string // why the latest attempt failed
	NextAttemptAt  time.Time
	CreatedAt      time.Time
	LastAttemptAt  time.Time // zero before the first attempt
}

// DeliveryQuery selects a page of a webhook's deliveries, newest first.
type DeliveryQuery struct {
	Page, Limit int            // as in ConversationQuery
	Status      DeliveryStatus // "" for every status
}

// Job is a claimed delivery, with what a worker needs to send it. The
// store's outbox fills it and records its Attempt; the webhook package
// sends it.
type Job struct {
	DeliveryID string
	WebhookID  string
	EventID    string
	URL        string
	Body       []byte
	// Secrets sign the delivery: the current secret, then the rotated-out
	// one while it is still valid. None when they do not decrypt under the
	// configured secret key.
	Secrets []string
	// Attempts were made before this one.
	Attempts int
	// Final: a failure of this attempt is final whatever the schedule.
	Final bool
	// Claim is the claim token the attempt's result must match; a worker
	// passes it back untouched.
	Claim string
	// Origin is the W3C traceparent of the request or turn that made the
	// event, "" when it was not traced; the delivery's trace links to it.
	Origin string
}

// Attempt is the outcome of one attempt of a Job.
type Attempt struct {
	At         time.Time
	Duration   time.Duration
	StatusCode int    // 0 when no answer came
	Error      string // "" on success
	Succeeded  bool
	// RetryAt is when to try again after a failure; zero makes the
	// delivery failed.
	RetryAt time.Time
}
