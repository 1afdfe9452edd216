// Package check validates the Kubernetes manifests of deploy/k8s against
// the Kubernetes API types, in its own module so that agentd's module does
// not depend on k8s.io; make test runs it. CI also runs kubeconform on them
// (.ci/kubeconform), with schemas that kubeschema makes from the same
// Kubernetes release.
package check
