// Package check validates the Kubernetes manifests of deploy/k8s against
// the Kubernetes API types, in its own module so that agentd's module does
// not depend on k8s.io. Its test is what CI runs in place of kubeconform,
// whose JSON schemas are downloaded at run time and cannot be here.
package check
