package check

import (
	"regexp"

	"sigs.k8s.io/yaml"
)

// Kind is what a manifest's document says it is.
type Kind struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// separator is a line that ends a YAML document.
var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Documents splits a YAML file into its documents.
func Documents(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range separator.Split(string(data), -1) {
		docs = append(docs, []byte(d))
	}
	return docs
}

// KindOf reads the apiVersion and kind of a document.
func KindOf(doc []byte) (Kind, error) {
	var k Kind
	err := yaml.Unmarshal(doc, &k)
	return k, err
}
