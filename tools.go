//go:build tools

// Package tools pins the code generator so go.mod records its version.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
)
