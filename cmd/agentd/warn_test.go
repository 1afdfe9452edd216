package main

import (
	"strings"
	"testing"
)

// TestServeWarnsWhenSecretsAreInClear: without AGENTD_SECRET_KEY, serve
// says at start that secrets are stored in clear; with it, it does not.
func TestServeWarnsWhenSecretsAreInClear(t *testing.T) {
	const warning = "stored in clear"
	clear := boot(t, nil, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	if !strings.Contains(clear.stderr.String(), warning) {
		t.Errorf("no warning without a key:\n%s", clear.stderr)
	}
	sealed := boot(t, map[string]string{secretKeyEnv: newSecretKey(t)}, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	if strings.Contains(sealed.stderr.String(), warning) {
		t.Errorf("a warning with a key:\n%s", sealed.stderr)
	}
}
