package server

import (
	"maps"
	"strings"
	"testing"

	"github.com/agentd/agentd/gen"
	"github.com/getkin/kin-openapi/openapi3"
)

// specOperations returns the operationIds of the embedded contract.
func specOperations(t testing.TB, spec *openapi3.T) []string {
	t.Helper()
	var ids []string
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, specOperationID(op))
		}
	}
	if len(ids) == 0 {
		t.Fatal("the embedded spec has no operations")
	}
	return ids
}

func TestEndpointLimitsCoverEveryOperation(t *testing.T) {
	t.Parallel()
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEndpointLimits(spec, endpointLimits); err != nil {
		t.Fatalf("the table does not match openapi.yaml: %v", err)
	}
	for _, id := range specOperations(t, spec) {
		limits := maps.Clone(endpointLimits)
		delete(limits, id)
		if err := checkEndpointLimits(spec, limits); err == nil || !strings.Contains(err.Error(), "operation "+id+" has no rate limit") {
			t.Errorf("without %s: error %v, want one naming it", id, err)
		}
		limits[id] = 0
		if err := checkEndpointLimits(spec, limits); err == nil {
			t.Errorf("%s limited to 0: no error", id)
		}
	}
	limits := maps.Clone(endpointLimits)
	limits["renamedOperation"] = 5
	if err := checkEndpointLimits(spec, limits); err == nil || !strings.Contains(err.Error(), "renamedOperation names no operation") {
		t.Errorf("stale entry: error %v, want one naming it", err)
	}
}
