package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/deploy/check"
)

// TestFileName: the names kubeconform's {{ .ResourceKind }}{{ .KindSuffix }}
// gives the kinds of deploy/k8s.
func TestFileName(t *testing.T) {
	for k, want := range map[check.Kind]string{
		{APIVersion: "v1", Kind: "Service"}:                         "service-v1.json",
		{APIVersion: "apps/v1", Kind: "Deployment"}:                 "deployment-apps-v1.json",
		{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}:      "poddisruptionbudget-policy-v1.json",
		{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}: "networkpolicy-networking-v1.json",
	} {
		if got := fileName(k); got != want {
			t.Errorf("fileName(%v) = %s, want %s", k, got, want)
		}
	}
}

// TestWriteSchema: the kind's definition is found by its
// group-version-kind, its objects are closed, the references resolve
// beside it, and kustomize's file and repeated kinds are left out.
func TestWriteSchema(t *testing.T) {
	spec, out := t.TempDir(), t.TempDir()
	doc := `{"components":{"schemas":{
		"a.Deployment":{"x-kubernetes-group-version-kind":[{"group":"apps","version":"v1","kind":"Deployment"}],
			"properties":{"spec":{"allOf":[{"$ref":"#/components/schemas/a.Spec"}]}}},
		"a.Spec":{"properties":{"replicas":{"type":"integer"},"properties":{"type":"object","properties":{"x":{"type":"string"}}}},
			"additionalProperties":{"type":"string"}},
		"a.Free":{"properties":{"x":{"type":"string"}},"x-kubernetes-preserve-unknown-fields":true}}}}`
	write(t, filepath.Join(spec, "apis__apps__v1_openapi.json"), doc)
	manifest := filepath.Join(out, "m.yaml")
	write(t, manifest, "apiVersion: apps/v1\nkind: Deployment\n---\napiVersion: apps/v1\nkind: Deployment\n---\n"+
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if err := run(spec, out, []string{manifest}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	data, err := os.ReadFile(filepath.Join(out, "deployment-apps-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	schemas := got["components"].(map[string]any)["schemas"].(map[string]any)
	def := schemas["a.Spec"].(map[string]any)
	member := def["properties"].(map[string]any)["properties"].(map[string]any)
	_, free := schemas["a.Free"].(map[string]any)["additionalProperties"]
	_, madeMember := def["properties"].(map[string]any)["additionalProperties"]
	if got["additionalProperties"] != false || def["additionalProperties"] == false || member["additionalProperties"] != false ||
		free || madeMember {
		t.Errorf("objects not closed as they should be: %s", data)
	}
	write(t, manifest, "apiVersion: batch/v1\nkind: Job\n")
	if err := run(spec, out, []string{manifest}); err == nil {
		t.Error("a kind with no OpenAPI document was not refused")
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
