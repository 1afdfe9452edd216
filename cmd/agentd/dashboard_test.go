package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metricRef is a metric name in a PromQL expression of the dashboard: every
// series agentd exports starts with one of these prefixes.
var metricRef = regexp.MustCompile(`\b(?:agentd|go|process)_[a-z0-9_]+\b`)

// TestGrafanaDashboard: every metric deploy/grafana-dashboard.json queries
// is one agentd exports, so a renamed or removed metric cannot leave a
// panel silently empty; and the panels the deployment needs are there.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string      `json:"uid"`
		Panels []dashPanel `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatal("no uid or no panels")
	}
	exported := exportedMetrics(t)
	used := map[string]bool{}
	for _, p := range flatten(dash.Panels) {
		for _, target := range p.Targets {
			refs := metricRef.FindAllString(target.Expr, -1)
			if len(refs) == 0 {
				t.Errorf("panel %q queries no agentd metric: %s", p.Title, target.Expr)
			}
			for _, name := range refs {
				used[name] = true
				if !exported[name] {
					t.Errorf("panel %q queries %s, which agentd does not export", p.Title, name)
				}
			}
		}
	}
	// What the deployment asks to see: requests, latency, turns, tokens,
	// tool calls, connections by state, the webhook backlog.
	for _, want := range []string{"agentd_http_requests_total", "agentd_http_request_duration_seconds_bucket",
		"agentd_provider_calls_total", "agentd_tokens_total", "agentd_tool_calls_total",
		"agentd_connections", "agentd_webhook_deliveries_pending"} {
		if !used[want] {
			t.Errorf("no panel shows %s", want)
		}
	}
}

// dashPanel is the part of a Grafana panel the test reads; rows hold panels.
type dashPanel struct {
	Title   string      `json:"title"`
	Panels  []dashPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func flatten(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

// exportedMetrics returns the names of the series agentd exports: those of
// the process's registry as serve builds it (Go runtime and process
// collectors), and those declared in agentd's sources, by the Name of a
// prometheus.*Opts or the name given to prometheus.NewDesc (a histogram
// also as its _bucket, _sum and _count series).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	families, err := newRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		names[f.GetName()] = true
	}
	declared := 0
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "gen" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			name, kind := declaredMetric(n)
			if !strings.HasPrefix(name, "agentd_") {
				return true
			}
			declared++
			names[name] = true
			if kind == "HistogramOpts" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[name+s] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if declared < 8 {
		t.Fatalf("found %d metric declarations in the sources; the scan is broken", declared)
	}
	return names
}

// declaredMetric returns the metric name n declares, with the kind of
// declaration: prometheus.XxxOpts{Name: "..."} or prometheus.NewDesc("...", ...).
func declaredMetric(n ast.Node) (name, kind string) {
	switch n := n.(type) {
	case *ast.CompositeLit:
		sel, ok := n.Type.(*ast.SelectorExpr)
		if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") || !isIdent(sel.X, "prometheus") {
			return "", ""
		}
		for _, el := range n.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
				return stringLit(kv.Value), sel.Sel.Name
			}
		}
	case *ast.CallExpr:
		sel, ok := n.Fun.(*ast.SelectorExpr)
		if ok && sel.Sel.Name == "NewDesc" && isIdent(sel.X, "prometheus") && len(n.Args) > 0 {
			return stringLit(n.Args[0]), "Desc"
		}
	}
	return "", ""
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}
