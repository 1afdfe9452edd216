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
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
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
		return errors.New("usage: kubeschema -spec DIR -out DIR manifest.yaml...")
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

// kind is an object's apiVersion and kind.
type kind struct{ APIVersion, Kind string }

// objectKinds are the kinds of the Kubernetes objects in the manifests,
// each once; kustomize's own files are not objects.
func objectKinds(manifests []string) ([]kind, error) {
	seen := map[kind]bool{}
	var kinds []kind
	for _, path := range manifests {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var k kind
			if err := yaml.Unmarshal(doc, &k); err != nil {
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
func writeSchema(spec, out string, k kind) error {
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
			closeObjects(def)
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

// closeObjects refuses members an object does not define, in s and the
// schemas inside it, as kubeconform's strict schemas do.
func closeObjects(s any) {
	switch v := s.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			if _, set := v["additionalProperties"]; !set {
				v["additionalProperties"] = false
			}
		}
		for _, child := range v {
			closeObjects(child)
		}
	case []any:
		for _, child := range v {
			closeObjects(child)
		}
	}
}

// fileName is where kubeconform's schema location
// {{ .ResourceKind }}{{ .KindSuffix }}.json finds k's schema.
func fileName(k kind) string {
	group, version, found := strings.Cut(k.APIVersion, "/")
	suffix := "-" + strings.ToLower(strings.Split(group, ".")[0])
	if found {
		suffix += "-" + strings.ToLower(version)
	}
	return strings.ToLower(k.Kind) + suffix + ".json"
}

func readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
