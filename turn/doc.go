// Package turn owns an agent's turn: one message to an agent and its reply,
// whichever way it came in (Send Message and its stream in server/, a
// platform message in connect/). A turn decides whether the agent can
// answer now, builds the prompt from the character and the conversation's
// history, calls the model provider, stores the exchange, and moves the
// agent into `error` (and out again) when its provider fails (and
// recovers).
//
// It knows nothing of HTTP or of the platforms: callers pass an Input and
// get a Result or one of the errors of errors.go, which each caller maps to
// its own edge (server/ to statuses and codes, connect/ to silence). It
// depends on the small interfaces it declares (Store, Model, Semaphore).
//
// service.go has Service with Prepare (every check that can refuse a
// message, the concurrency slot, the provider request), Generate, Stream
// and Reply (Prepare then Generate, for connect/); availability.go has
// CanAnswer, the one rule of whether an agent can answer now; prompt.go
// builds the provider request from the character (llm.CharacterFrom,
// llm.BuildSystemPrompt) and the conversation's history (the stored one,
// or the one the caller gives: Input.Given); finish.go stores
// the exchange and handles a provider failure; metrics.go counts the
// provider calls. cmd/agentd builds one Service for server/ and connect/.
package turn
