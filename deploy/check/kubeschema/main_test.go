package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestFileName: the names kubeconform's {{ .ResourceKind }}{{ .KindSuffix }}
// gives the kinds of deploy/k8s.
func TestFileName(t *testing.T) {
	for k, want := range map[kind]string{
		{"v1", "Service"}:                         "service-v1.json",
		{"apps/v1", "Deployment"}:                 "deployment-apps-v1.json",
		{"policy/v1", "PodDisruptionBudget"}:      "poddisruptionbudget-policy-v1.json",
		{"networking.k8s.io/v1", "NetworkPolicy"}: "networkpolicy-networking-v1.json",
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
		"a.Spec":{"properties":{"replicas":{"type":"integer"}},"additionalProperties":{"type":"string"}}}}}`
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
	if got["additionalProperties"] != false || schemas["a.Spec"].(map[string]any)["additionalProperties"] == false {
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
