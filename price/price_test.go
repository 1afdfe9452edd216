package price

import (
	"testing"
)

func TestCostIsInMillionthsOfADollar(t *testing.T) {
	p := Price{Input: 0.25, Output: 2}
	// 1,234 in at $0.25/M = 0.0003085; 567 out at $2/M = 0.001134.
	if got, want := p.Cost(1234, 567), int64(1443); got != want || USD(got) != 0.001443 {
		t.Fatalf("Cost = %v (%v USD), want %v", got, USD(got), want)
	}
	if got := (Price{Input: 0.075, Output: 0.3}).Cost(1, 1); got != 0 {
		t.Fatalf("a cost under half a millionth of a dollar = %v, want 0", got)
	}
}

func TestFileAddsAndReplaces(t *testing.T) {
	file, err := ParseFile("prices.json", []byte(`{"openai/gpt-5.6-terra":{"input":1,"output":3},
		"ollama/llama3.2":{"input":0,"output":0.5},"groq/openai/gpt-oss-20b":{"input":2,"output":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	tab := Builtin().With(file)
	for _, c := range []struct {
		provider, model string
		want            Price
	}{
		{"openai", "gpt-5.6-terra", Price{1, 3}},
		{"ollama", "llama3.2", Price{0, 0.5}},
		{"groq", "openai/gpt-oss-20b", Price{2, 4}},
		{"anthropic", "claude-haiku-4-5", builtin["anthropic/claude-haiku-4-5"]},
	} {
		if got, ok := tab.Lookup(c.provider, c.model); !ok || got != c.want {
			t.Errorf("Lookup(%s, %s) = %v, %v; want %v", c.provider, c.model, got, ok, c.want)
		}
	}
	if _, ok := Builtin().Lookup("ollama", "llama3.2"); ok {
		t.Error("an Ollama model is priced without a file")
	}
	var fromFile int
	for _, e := range tab.Entries() {
		if e.Source == SourceFile {
			fromFile++
		}
	}
	if fromFile != 3 || len(tab.Entries()) != len(builtin)+1 {
		t.Errorf("entries: %d from the file of %d; want 3 of %d", fromFile, len(tab.Entries()), len(builtin)+1)
	}
}

func TestParseFileRefuses(t *testing.T) {
	for _, doc := range []string{
		`[]`,
		`{"gpt-5":{"input":1,"output":1}}`,
		`{"openai/gpt-5":{"input":1}}`,
		`{"openai/gpt-5":{"input":-1,"output":1}}`,
		`{"openai/gpt-5":{"input":1,"output":10001}}`,
	} {
		if _, err := ParseFile("p.json", []byte(doc)); err == nil {
			t.Errorf("ParseFile(%s) took it", doc)
		}
	}
}

func TestAgentPriceWins(t *testing.T) {
	own := Price{Input: 7, Output: 9}
	if p, ok := Builtin().Of(&own, "openai", "gpt-5.6-terra"); !ok || p != own {
		t.Fatalf("Of = %v, %v; want the agent's %v", p, ok, own)
	}
	if _, ok := Builtin().Of(nil, "ollama", "llama3.2"); ok {
		t.Fatal("an unpriced model has a price")
	}
}
