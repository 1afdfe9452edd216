// Package gen holds the code oapi-codegen generates from openapi.yaml: models,
// the Echo strict server, the embedded spec and a client. Never edit it by
// hand; run `make generate`.
package gen

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
