// Package outbox holds what the webhook outbox hands its workers and takes
// back from them: a claimed delivery (Job) and the outcome of one attempt
// (Attempt). The store fills and records them; the webhook package sends
// them. It has no dependencies, so the workers compile without the store's
// ORM and drivers.
package outbox

import "time"

// Job is a claimed delivery, with what a worker needs to send it.
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
