package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads a compose file as `docker compose config` does
// (compose-go, the loader Docker Compose itself uses): validated against
// the Compose specification's schema, interpolated with env, checked for
// consistency (depends_on, network_mode: service:, volumes).
func loadCompose(t *testing.T, path string, env ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{path}, cli.WithEnv(env), cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

// TestComposeConfig: deploy/compose.yaml is a valid Compose file, with the
// three agentd replicas behind nginx on PostgreSQL and Redis, and it says
// what is missing when AGENTD_SECRET_KEYS is not set.
func TestComposeConfig(t *testing.T) {
	compose := filepath.Join("..", "compose.yaml")
	p, err := loadCompose(t, compose, "AGENTD_SECRET_KEYS=c2VjcmV0")
	if err != nil {
		t.Fatalf("docker compose config would refuse it: %v", err)
	}
	replicas := 0
	for name, s := range p.Services {
		if s.Image == "agentd:latest" && name != "migrate" {
			replicas++
			if s.NetworkMode != "service:nginx" || s.Environment["AGENTD_SECRET_KEYS"] == nil || *s.Environment["AGENTD_SECRET_KEYS"] != "c2VjcmV0" {
				t.Errorf("replica %s: network %q, environment %v", name, s.NetworkMode, s.Environment)
			}
		}
	}
	if replicas != 3 {
		t.Errorf("%d agentd replicas; want 3", replicas)
	}
	for _, name := range []string{"nginx", "postgres", "redis", "migrate"} {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("no %s service", name)
		}
	}
	if _, err := loadCompose(t, compose); err == nil || !strings.Contains(err.Error(), "AGENTD_SECRET_KEYS") {
		t.Errorf("without AGENTD_SECRET_KEYS: %v; want an error naming it", err)
	}

	// The check can fail: a misspelt member is refused.
	data, err := os.ReadFile(compose)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "compose.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(data), "restart:", "restrat:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCompose(t, bad, "AGENTD_SECRET_KEYS=c2VjcmV0"); err == nil || !strings.Contains(err.Error(), "restrat") {
		t.Errorf("a compose file with a misspelt member: %v; want an error naming it", err)
	}
}
