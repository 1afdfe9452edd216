package domain

import "time"

// Response is what the OpenAI Responses API keeps of a response beside its
// run (a response is a run): what the request said that the run does not
// keep, so that any replica can read, continue and list it.
type Response struct {
	// RunID is the response's run; the response's id is "resp_" and the
	// run's id without "run_".
	RunID     string
	AccountID string
	AgentID   string
	// PreviousRunID is the run of the response this one continues, "" for
	// none.
	PreviousRunID string
	// UserID is the request's user (or safety identifier), "" for none.
	UserID       string
	Instructions string
	Metadata     map[string]string
	Background   bool
	// Input is the request's input items in request order.
	Input     []ResponseItem
	CreatedAt time.Time
}

// ResponseItem is one input item of a response; its id is made from the
// response's and its place.
type ResponseItem struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ErrResponseNotFound is the not-found of a response: none of the account
// has the id, or it was deleted or never kept.
var ErrResponseNotFound = &Error{Code: CodeNotFound, Resource: "response"}
