package domain

import "time"

// ErrIdempotencyKeyInUse is returned for a key whose first request is
// still running (its lease has not run out).
var ErrIdempotencyKeyInUse = &Error{Code: CodeIdempotencyInUse, Resource: "idempotency_key"}

// ErrIdempotencyKeyReused is returned for a key first used for another
// request (another method, path or body).
var ErrIdempotencyKeyReused = &Error{Code: CodeIdempotencyReused, Resource: "idempotency_key"}

// IdempotencyRequest is a keyed request about to run.
type IdempotencyRequest struct {
	AccountID, Key string
	// Fingerprint identifies the request: method, path and a hash of the
	// canonical body.
	Fingerprint string
	// Lease is how long the claim holds while the request runs; after it
	// another request may take the key over (its owner is taken for dead).
	Lease time.Duration
}

// IdempotentAnswer is the stored answer of a finished keyed request.
type IdempotentAnswer struct {
	Status int
	Header map[string]string
	Body   []byte
}

// IdempotencyClaim is the result of ClaimIdempotencyKey: either the key is
// the caller's to run the request under (Token, for Complete or Release),
// or the request already ran and Replay is its answer.
type IdempotencyClaim struct {
	Token  string
	Replay *IdempotentAnswer
}
