// Command kubeschema writes, for each Kubernetes object in the manifests
// it is given, the strict JSON schema kubeconform looks up for it
// (<kind>-<group>-<version>.json), made from the OpenAPI v3 documents of
// the Kubernetes release (api/openapi-spec/v3 in the k8s.io/kubernetes
// module, which the Go module proxy serves). kubeconform's own schemas are
// downloaded from GitHub at run time, which CI cannot reach.
//
//	kubeschema -spec DIR -out DIR manifest.yaml...
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/deploy/check"
)

func main() {
	spec := flag.String("spec", "", "the directory of the Kubernetes OpenAPI v3 documents")
	out := flag.String("out", "", "the directory the schemas are written to")
	flag.Parse()
	if err := run(*spec, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "kubeschema:", err)
		os.Exit(1)
	}
}

func run(spec, out string, manifests []string) error {
	if spec == "" || out == "" || len(manifests) == 0 {
		return errors.New("usage: kubeschema -spec DIR -out DIR, then the manifests")
	}
	kinds, err := objectKinds(manifests)
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if err := writeSchema(spec, out, k); err != nil {
			return err
		}
	}
	return nil
}

// objectKinds are the kinds of the Kubernetes objects in the manifests,
// each once; kustomize's own files are not objects.
func objectKinds(manifests []string) ([]check.Kind, error) {
	seen := map[check.Kind]bool{}
	var kinds []check.Kind
	for _, path := range manifests {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, doc := range check.Documents(data) {
			k, err := check.KindOf(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if k.Kind == "" || strings.HasPrefix(k.APIVersion, "kustomize.config.k8s.io/") || seen[k] {
				continue
			}
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// writeSchema writes k's schema: its definition from the OpenAPI document
// of its group and version, with that document's definitions beside it for
// the references, every object closed to members it does not define.
func writeSchema(spec, out string, k check.Kind) error {
	group, version, found := strings.Cut(k.APIVersion, "/")
	document := "api__v1_openapi.json"
	if found {
		document = "apis__" + group + "__" + version + "_openapi.json"
	} else {
		group, version = "", k.APIVersion
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := readJSON(filepath.Join(spec, document), &doc); err != nil {
		return fmt.Errorf("%s %s: %w", k.APIVersion, k.Kind, err)
	}
	schemas := doc.Components.Schemas
	for name, s := range schemas {
		if !defines(s, group, version, k.Kind) {
			continue
		}
		for _, def := range schemas {
			closeSchema(def)
		}
		root := map[string]any{"components": map[string]any{"schemas": schemas}}
		for member, v := range s {
			root[member] = v
		}
		data, err := json.Marshal(root)
		if err != nil {
			return err
		}
		file := filepath.Join(out, fileName(k))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return err
		}
		fmt.Printf("kubeschema: %s %s is %s, in %s\n", k.APIVersion, k.Kind, name, file)
		return nil
	}
	return fmt.Errorf("%s %s: no definition in %s", k.APIVersion, k.Kind, document)
}

// defines reports whether the definition s is the object of group,
// version and kind.
func defines(s map[string]any, group, version, kind string) bool {
	gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
	for _, g := range gvks {
		m, _ := g.(map[string]any)
		if m["group"] == group && m["version"] == version && m["kind"] == kind {
			return true
		}
	}
	return false
}

// closeSchema closes s, and every schema inside it, to members it does
// not define, as kubeconform's strict schemas do; an object that keeps
// unknown members (x-kubernetes-preserve-unknown-fields) stays open.
func closeSchema(s map[string]any) {
	props, defined := s["properties"].(map[string]any)
	if _, set := s["additionalProperties"]; defined && !set && s["x-kubernetes-preserve-unknown-fields"] != true {
		s["additionalProperties"] = false
	}
	for _, p := range props {
		closeSub(p)
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		closeSub(s[key])
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := s[key].([]any)
		for _, sub := range list {
			closeSub(sub)
		}
	}
}

// closeSub closes v when it is a schema (not a boolean).
func closeSub(v any) {
	if m, ok := v.(map[string]any); ok {
		closeSchema(m)
	}
}

// fileName is where kubeconform's schema location
// {{ .ResourceKind }}{{ .KindSuffix }}.json finds k's schema.
func fileName(k check.Kind) string {
	group, version, found := strings.Cut(k.APIVersion, "/")
	suffix := "-" + strings.ToLower(strings.Split(group, ".")[0])
	if found {
		suffix += "-" + strings.ToLower(version)
	}
	return strings.ToLower(k.Kind) + suffix + ".json"
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
