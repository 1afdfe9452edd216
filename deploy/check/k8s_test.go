package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// dir holds the manifests.
const dir = "../k8s"

// manifest is one decoded object of deploy/k8s.
type manifest struct {
	file string
	obj  any
}

// typed returns an empty object of the Go type of apiVersion and kind, or
// nil for a kind the manifests are not expected to hold.
func typed(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	}
	return nil
}

// load decodes every manifest strictly: an unknown or misspelt field, a
// duplicate key or a value of the wrong type is an error, as kubectl's
// server-side field validation would report it.
func load(t *testing.T) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	var out []manifest
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range Documents(data) {
			meta, err := KindOf(doc)
			if err != nil {
				t.Fatalf("%s #%d: %v", f, i, err)
			}
			obj := typed(meta.APIVersion, meta.Kind)
			if obj == nil {
				t.Errorf("%s #%d: unexpected %s %s", f, i, meta.APIVersion, meta.Kind)
				continue
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s #%d (%s): %v", f, i, meta.Kind, err)
				continue
			}
			out = append(out, manifest{file: filepath.Base(f), obj: obj})
		}
	}
	return out
}

// find returns the only object of type T.
func find[T any](t *testing.T, ms []manifest) T {
	t.Helper()
	var found []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

func TestStrictDecodingRejectsAMisspeltField(t *testing.T) {
	doc := []byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 3\n")
	if err := yaml.UnmarshalStrict(doc, &appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("a misspelt field was accepted: %v", err)
	}
}

func TestManifests(t *testing.T) {
	ms := load(t)
	dep := find[*appsv1.Deployment](t, ms)
	svc := find[*corev1.Service](t, ms)
	secret := find[*corev1.Secret](t, ms)
	pdb := find[*policyv1.PodDisruptionBudget](t, ms)
	job := find[*batchv1.Job](t, ms)
	cm := find[*corev1.ConfigMap](t, ms)

	// The selectors pick the Deployment's pods and not the Job's.
	podLabels := dep.Spec.Template.Labels
	for what, sel := range map[string]map[string]string{
		"deployment selector": dep.Spec.Selector.MatchLabels, "service selector": svc.Spec.Selector,
		"pdb selector": pdb.Spec.Selector.MatchLabels,
	} {
		if len(sel) == 0 || !matches(sel, podLabels) {
			t.Errorf("%s %v does not select the pods %v", what, sel, podLabels)
		}
		if matches(sel, job.Spec.Template.Labels) {
			t.Errorf("%s %v selects the migration Job's pod", what, sel)
		}
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
		t.Errorf("replicas %v, want at least 2 with a PodDisruptionBudget", dep.Spec.Replicas)
	}
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
		t.Error("the PodDisruptionBudget bounds nothing")
	}

	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"serve"}) {
		t.Errorf("args %v", c.Args)
	}
	probe(t, "readiness", c.ReadinessProbe, "/readyz", c.Ports)
	probe(t, "liveness", c.LivenessProbe, "/healthz", c.Ports)
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}
	nonRoot(t, "deployment", pod.SecurityContext, c.SecurityContext)
	if len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("the Job has not one container")
	}
	jc := job.Spec.Template.Spec.Containers[0]
	if !slices.Equal(jc.Args, []string{"migrate", "up"}) || jc.Image != c.Image {
		t.Errorf("the Job runs %s %v, want the Deployment's image %s with migrate up", jc.Image, jc.Args, c.Image)
	}
	nonRoot(t, "job", job.Spec.Template.Spec.SecurityContext, jc.SecurityContext)

	// The Service targets the container's port; the pods read the Secret
	// and the ConfigMap, and AGENTD_SECRET_KEYS comes from the Secret.
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromString(c.Ports[0].Name) {
		t.Errorf("service ports %+v, want one targeting %q", svc.Spec.Ports, c.Ports[0].Name)
	}
	var fromSecret, fromCM bool
	for _, src := range c.EnvFrom {
		fromSecret = fromSecret || (src.SecretRef != nil && src.SecretRef.Name == secret.Name)
		fromCM = fromCM || (src.ConfigMapRef != nil && src.ConfigMapRef.Name == cm.Name)
	}
	if !fromSecret || !fromCM {
		t.Errorf("envFrom %+v: want the Secret %q and the ConfigMap %q", c.EnvFrom, secret.Name, cm.Name)
	}
	if _, ok := secret.StringData["AGENTD_SECRET_KEYS"]; !ok {
		t.Error("the Secret has no AGENTD_SECRET_KEYS")
	}
	for k := range cm.Data {
		if _, ok := secret.StringData[k]; ok {
			t.Errorf("%s is both in the ConfigMap and the Secret", k)
		}
	}
}

// probe checks an HTTP probe of path on the container's named port.
func probe(t *testing.T, what string, p *corev1.Probe, path string, ports []corev1.ContainerPort) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("no HTTP %s probe", what)
		return
	}
	if p.HTTPGet.Path != path {
		t.Errorf("%s probe on %s, want %s", what, p.HTTPGet.Path, path)
	}
	if len(ports) == 0 || p.HTTPGet.Port != intstr.FromString(ports[0].Name) {
		t.Errorf("%s probe on port %v, want the container's %v", what, p.HTTPGet.Port, ports)
	}
}

// nonRoot checks that a pod runs as a non-root user without privileges.
func nonRoot(t *testing.T, what string, pod *corev1.PodSecurityContext, c *corev1.SecurityContext) {
	t.Helper()
	if pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot || pod.RunAsUser == nil || *pod.RunAsUser == 0 {
		t.Errorf("%s: pod securityContext %+v, want runAsNonRoot and a non-zero runAsUser", what, pod)
	}
	if c == nil || c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation ||
		c.Capabilities == nil || !slices.Contains(c.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container securityContext %+v, want no privilege escalation and every capability dropped", what, c)
	}
}

// matches reports whether labels has every pair of sel.
func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want %v", got, want)
	}
}
