package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rule forbids the packages from selects to depend, directly or
// transitively, on any package forbidden selects.
type rule struct {
	name      string
	from      func(rel string) bool  // the module's packages, by path in the module
	forbidden func(path string) bool // any package, by import path
}

// rules are the layering rules docs/architecture.md states.
func rules(mod string) []rule {
	own := func(prefixes ...string) func(string) bool {
		return func(p string) bool {
			rel, ok := strings.CutPrefix(p, mod+"/")
			return ok && under(rel, prefixes...)
		}
	}
	return []rule{
		{
			name: "GORM, its drivers and goose only in store, cmd/agentd, bench and store's test support",
			from: func(rel string) bool {
				return !slices.Contains([]string{"store", "store/storetest", "store/storetest/pgtest",
					"cmd/agentd", "bench", "internal/connecttest"}, rel)
			},
			forbidden: func(p string) bool {
				return hasPrefix(p, "gorm.io", "github.com/jackc/pgx", "github.com/mattn/go-sqlite3",
					"modernc.org/sqlite", "github.com/glebarez/sqlite", "github.com/pressly/goose")
			},
		},
		{
			name:      "server never imports connect",
			from:      func(rel string) bool { return rel == "server" },
			forbidden: own("connect"),
		},
		{
			name:      "connect never imports server",
			from:      func(rel string) bool { return under(rel, "connect") },
			forbidden: own("server"),
		},
		{
			name: "turn knows no HTTP handler (Echo, gen, server) and no platform",
			from: func(rel string) bool { return rel == "turn" },
			forbidden: func(p string) bool {
				return hasPrefix(p, "github.com/labstack/echo") || own("gen", "server", "connect")(p)
			},
		},
		{
			name: "domain, the shared vocabulary, builds on agent alone",
			from: func(rel string) bool { return rel == "domain" },
			forbidden: func(p string) bool {
				rel, ok := strings.CutPrefix(p, mod+"/")
				return ok && !under(rel, "agent", "netguard")
			},
		},
		{
			name:      "tools, llm, agent and webhook never reach store",
			from:      func(rel string) bool { return under(rel, "tools", "llm", "agent", "webhook") },
			forbidden: own("store"),
		},
	}
}

// under reports whether rel is one of dirs or inside one of them.
func under(rel string, dirs ...string) bool {
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// hasPrefix reports whether import path p is one of prefixes or below one.
func hasPrefix(p string, prefixes ...string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// reach is the shortest import chain from package from to a package that
// match accepts, as "a → b → c", or "" when there is none.
func (m *module) reach(from string, match func(string) bool) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != from && match(cur) {
			var path []string
			for p := cur; p != ""; p = prev[p] {
				path = append(path, m.short(p))
			}
			slices.Reverse(path)
			return strings.Join(path, " → ")
		}
		if p := m.pkgs[cur]; p != nil {
			for _, imp := range p.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = cur
					queue = append(queue, imp)
				}
			}
		}
	}
	return ""
}

// violations checks every rule over the module's packages and returns the
// broken edges, each with its chain and rule.
func violations(m *module, rs []rule) (broken []string) {
	for _, r := range rs {
		for _, p := range m.own {
			if !r.from(m.rel(p)) {
				continue
			}
			if chain := m.reach(p, r.forbidden); chain != "" {
				broken = append(broken, fmt.Sprintf("%s (rule: %s)", chain, r.name))
			}
		}
	}
	return broken
}

// TestLayering fails on every import edge that breaks a layering rule,
// naming the chain of imports and the rule.
func TestLayering(t *testing.T) {
	m := load(t)
	for _, want := range []string{"domain", "store", "server", "connect", "turn", "tools", "llm", "agent", "webhook", "cmd/agentd", "bench"} {
		if m.pkgs[m.path+"/"+want] == nil {
			t.Errorf("the rules name package %s, which is gone: update rules()", want)
		}
	}
	for _, s := range violations(m, rules(m.path)) {
		t.Errorf("forbidden dependency: %s", s)
	}
}

// TestRulesCatch runs the rules over a made-up graph with one broken edge
// of each rule, so a rule that silently matches nothing fails here.
func TestRulesCatch(t *testing.T) {
	const mod = "example.com/m"
	m := &module{path: mod, pkgs: map[string]*pkg{}}
	edges := map[string][]string{
		"store":            {"gorm.io/gorm"},
		"recall":           {mod + "/store"},
		"llm":              {mod + "/recall"},
		"turn":             {mod + "/server"},
		"server":           {mod + "/connect/x"},
		"connect/x":        {mod + "/connect", mod + "/server"},
		"connect":          nil,
		"webhook":          {"github.com/pressly/goose/v3"},
		"cmd/agentd":       {mod + "/store"},
		"connect/telegram": nil,
		"domain":           {mod + "/agent", mod + "/llm"},
	}
	for rel, imps := range edges {
		m.pkgs[mod+"/"+rel] = &pkg{ImportPath: mod + "/" + rel, Imports: imps}
		m.own = append(m.own, mod+"/"+rel)
	}
	slices.Sort(m.own)
	broken := violations(m, rules(mod))
	got := strings.Join(broken, "\n")
	for _, frag := range []string{
		"llm → recall → store → gorm.io/gorm (rule: GORM",
		"webhook → github.com/pressly/goose/v3 (rule: GORM",
		"server → connect/x (rule: server never imports connect)",
		"connect/x → server (rule: connect never imports server)",
		"turn → server (rule: turn knows no HTTP handler",
		"llm → recall → store (rule: tools, llm, agent and webhook never reach store)",
		"domain → llm (rule: domain",
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("no violation %q among:\n%s", frag, got)
		}
	}
	for _, b := range broken {
		if strings.HasPrefix(b, "cmd/agentd →") || strings.HasPrefix(b, "store →") {
			t.Errorf("an allowed edge reported: %s", b)
		}
	}
}
