package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oasdiff/yaml"
)

// The checks of deploy/ that need agentd itself: every variable the
// Dockerfile, compose.yaml and the Kubernetes manifests set is one agentd
// reads, every command they run is one it has, and compose.yaml refers only
// to files and services that exist. deploy/check decodes the Kubernetes
// manifests against the Kubernetes API types.

// deployDir is deploy/ from this package's directory.
const deployDir = "../../deploy"

// composeFile is the part of a compose file these checks read.
type composeFile struct {
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

type composeService struct {
	Image       string            `json:"image"`
	Build       *composeBuild     `json:"build"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	NetworkMode string            `json:"network_mode"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Volumes []string `json:"volumes"`
}

type composeBuild struct {
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile"`
}

// readYAML decodes a YAML file (anchors and merge keys resolved) into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(j, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// knownVariable reports whether agentd reads the environment variable name.
func knownVariable(name string) bool {
	return slices.ContainsFunc(settings, func(s setting) bool { return s.env == name })
}

// checkCommand fails unless args (after the program name) start with an
// agentd command.
func checkCommand(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s runs no command", where)
		return
	}
	if _, _, err := lookup(args); err != nil {
		t.Errorf("%s runs agentd %v: %v", where, args, err)
	}
}

func TestComposeFile(t *testing.T) {
	var c composeFile
	readYAML(t, filepath.Join(deployDir, "compose.yaml"), &c)
	var replicas []composeService
	var ports []string
	for name, s := range c.Services {
		if s.Build != nil {
			ctx := filepath.Join(deployDir, s.Build.Context)
			if _, err := os.Stat(filepath.Join(ctx, s.Build.Dockerfile)); err != nil {
				t.Errorf("service %s builds %s: %v", name, s.Build.Dockerfile, err)
			}
		}
		for dep := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("service %s depends on %s, which is not a service", name, dep)
			}
		}
		if other, ok := strings.CutPrefix(s.NetworkMode, "service:"); ok {
			if _, found := c.Services[other]; !found {
				t.Errorf("service %s shares the network of %s, which is not a service", name, other)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(filepath.Join(deployDir, src)); err != nil {
					t.Errorf("service %s mounts %s: %v", name, src, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("service %s mounts the volume %s, which is not declared", name, src)
			}
		}
		if s.Image != "agentd:latest" {
			continue
		}
		for k := range s.Environment {
			if !knownVariable(k) {
				t.Errorf("service %s sets %s, which agentd does not read", name, k)
			}
		}
		if len(s.Command) > 0 {
			checkCommand(t, "service "+name, s.Command)
		}
		if len(s.Command) == 0 || s.Command[0] == "serve" {
			replicas = append(replicas, s)
			ports = append(ports, s.Environment["AGENTD_ADDR"])
		}
	}
	if m, ok := c.Services["migrate"]; !ok || !slices.Equal(m.Command, []string{"migrate", "up"}) {
		t.Errorf("no migrate service running agentd migrate up: %+v", m)
	}
	if len(replicas) != 3 {
		t.Fatalf("%d agentd replicas, want 3", len(replicas))
	}
	for _, r := range replicas {
		if r.DependsOn["migrate"].Condition != "service_completed_successfully" {
			t.Errorf("a replica starts before the migration ends: %+v", r.DependsOn)
		}
	}
	// nginx runs deploy/nginx.conf unchanged: its upstreams are where the
	// replicas listen.
	conf, err := os.ReadFile(filepath.Join(deployDir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var upstreams []string
	for _, m := range regexp.MustCompile(`(?m)^\s*server (\S+) `).FindAllStringSubmatch(string(conf), -1) {
		upstreams = append(upstreams, m[1])
	}
	slices.Sort(ports)
	slices.Sort(upstreams)
	if !slices.Equal(ports, upstreams) {
		t.Errorf("replicas listen on %v, nginx.conf sends to %v", ports, upstreams)
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	execForm := func(instr string) []string {
		m := regexp.MustCompile(`(?m)^` + instr + `\s+(\[.*\])\s*$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in exec form", instr)
		}
		var args []string
		if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
			t.Fatalf("%s: %v", instr, err)
		}
		return args
	}
	entry := execForm("ENTRYPOINT")
	checkCommand(t, "CMD", execForm("CMD"))
	hc := execForm(`\s+CMD`) // the HEALTHCHECK's, on its continuation line
	if len(hc) < 2 || hc[0] != entry[0] {
		t.Fatalf("HEALTHCHECK runs %v, not the binary %s", hc, entry[0])
	}
	checkCommand(t, "HEALTHCHECK", hc[1:])
	if !regexp.MustCompile(`(?m)^USER\s+[1-9]`).MatchString(text) {
		t.Error("the image runs as root")
	}
	for _, m := range regexp.MustCompile(`(?m)\b(AGENTD_[A-Z_]+)=`).FindAllStringSubmatch(text, -1) {
		if !knownVariable(m[1]) {
			t.Errorf("the Dockerfile sets %s, which agentd does not read", m[1])
		}
	}
}

func TestKubernetesVariables(t *testing.T) {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	readYAML(t, filepath.Join(deployDir, "k8s", "configmap.yaml"), &cm)
	var secret struct {
		StringData map[string]string `json:"stringData"`
	}
	readYAML(t, filepath.Join(deployDir, "k8s", "secret.yaml"), &secret)
	if len(cm.Data) == 0 || len(secret.StringData) == 0 {
		t.Fatal("empty ConfigMap or Secret")
	}
	for _, m := range []map[string]string{cm.Data, secret.StringData} {
		for k := range m {
			if !knownVariable(k) {
				t.Errorf("deploy/k8s sets %s, which agentd does not read", k)
			}
		}
	}
	// The settings are valid as agentd reads them, except the placeholder
	// key, which is refused so that nobody runs with it by mistake.
	env := map[string]string{}
	for _, m := range []map[string]string{cm.Data, secret.StringData} {
		for k, v := range m {
			env[k] = v
		}
	}
	parse := func() error {
		_, err := defineSettings(flag.NewFlagSet("serve", flag.ContinueOnError), mapEnv(env)).config()
		return err
	}
	if err := parse(); err == nil || !strings.Contains(err.Error(), secretKeysEnv) {
		t.Errorf("the placeholder AGENTD_SECRET_KEYS of secret.yaml: %v, want it refused", err)
	}
	env[secretKeysEnv] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	if err := parse(); err != nil {
		t.Errorf("the ConfigMap and Secret with a real key: %v", err)
	}
}
