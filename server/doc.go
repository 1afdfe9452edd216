// Package server is agentd's HTTP layer: the strict handlers generated from
// openapi.yaml, the middleware in front of them (request ids, logging,
// authentication, rate limits, request validation against the spec) and the
// one place where errors become the `{success:false,error}` envelope.
//
// It knows the store and the model providers only through their Go APIs; it
// never imports gorm and never reads the environment.
package server
