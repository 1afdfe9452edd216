package turn

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentd/agentd/domain"
)

// A character is parsed once per agent version: a new version is parsed
// again, and fields that carry no version are never kept.
func TestCharactersArePerAgentVersion(t *testing.T) {
	agentWith := func(version int64, bio string) domain.Agent {
		raw, _ := json.Marshal([]string{bio})
		return domain.Agent{ID: "agt_1", Version: version, Fields: map[string]json.RawMessage{"bio": raw}}
	}
	var c characters
	bio := func(a domain.Agent) []string { return c.of(a).Bio }
	if got := bio(agentWith(1, "first")); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("version 1: bio %v", got)
	}
	// The store never gives other fields under the same version; this
	// shows the parse of version 1 is the one used.
	if got := bio(agentWith(1, "other")); !slices.Equal(got, []string{"first"}) {
		t.Errorf("version 1 again: bio %v, want the kept [first]", got)
	}
	if got := bio(agentWith(2, "second")); !slices.Equal(got, []string{"second"}) {
		t.Errorf("version 2: bio %v, want [second]", got)
	}
	bio(agentWith(0, "unversioned"))
	if got := bio(agentWith(0, "fresh")); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("an agent without a version: bio %v, want [fresh]", got)
	}
}
