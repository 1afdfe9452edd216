// Package server is agentd's HTTP layer: the handlers of the strict
// interface oapi-codegen generates from openapi.yaml
// (gen.StrictServerInterface), the middleware in front of them, the console
// and the served contract, and the one place where errors become the
// `{success:false,error}` envelope (or OpenAI's error on its paths).
//
// A request passes newEcho's middleware (server.go: request ids, the log
// line and metrics, panic recovery), then the gate of every /v1 operation
// (gate.go: the route in the spec, authentication, rate limits over
// package limit, the key's scope, the body's media type and size, validation
// against the spec), then the generated strict handler, then a method of
// Server. An error a handler returns goes through handleError
// (middleware.go) to asAPIError (errors.go): the table storeErrors maps
// each domain.Code, turnError maps a turn's errors, and anything else is a
// 500 whose detail only the log sees.
//
// Send Message and its stream (messages.go, sse.go) are a turn of package
// turn, reached through the Turns interface that *turn.Service implements:
// server/ builds the turn.Input, renders the turn.Result and maps the
// errors, and builds no prompt and calls no provider itself. The platforms
// take the same turn through connect/; server/ does not import connect.
// OpenAI's Chat Completions and Models (openai.go, openai_stream.go) take
// that turn too, in OpenAI's shapes: their errors are mapped by the same
// table and only rendered in OpenAI's shape (openai_errors.go), on their
// paths alone.
//
// It reaches persistence through Config.Store, a Stores of small
// interfaces it declares (store.go) in package domain's types, one per
// resource its handlers use (Accounts, Idempotency, Agents, Conversations,
// Analytics, Memories, Knowledge, Connections, Webhooks, plus a2a.Tasks and
// streamlog.Backend). It never imports store or gorm and never reads the
// environment: cmd/agentd fills a Config.
package server
