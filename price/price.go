// Package price knows what model calls cost: the built-in price table,
// the operator's additions (AGENTD_PRICES) and the arithmetic that turns
// a call's tokens into US dollars. It imports nothing of agentd, so the
// turn, the server and the binary can all share one table.
package price

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Taken is the date the built-in prices were taken from the providers'
// public price lists (README lists them).
const Taken = "2026-11-28"

// Max is the highest price per million tokens agentd accepts, for an
// agent's modelSettings.price as for a price file.
const Max = 10000

// Price is what a model charges, USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Cost is what a call of inTokens and outTokens costs at p, in
// millionths of a US dollar (the 6 decimals the API answers), rounded to
// the nearest. Costs are kept and summed as these integers, so a day's
// spend is exactly the sum of the costs its replies showed, however many
// there were.
func (p Price) Cost(inTokens, outTokens int) int64 {
	return int64(math.Round(float64(inTokens)*p.Input + float64(outTokens)*p.Output))
}

// USD is micros millionths of a US dollar in dollars, as the API answers.
func USD(micros int64) float64 { return float64(micros) / 1e6 }

// valid reports whether both prices are within 0..Max.
func (p Price) valid() bool {
	ok := func(v float64) bool { return v >= 0 && v <= Max && !math.IsNaN(v) }
	return ok(p.Input) && ok(p.Output)
}

// Source says where a price in force came from.
type Source string

// The sources of a price.
const (
	SourceBuiltin Source = "builtin"
	SourceFile    Source = "file"
)

// Entry is one model's price in force.
type Entry struct {
	Provider, Model string
	Price
	Source Source
}

// Table is the price table in force: the built-in prices with the
// operator's file over them. The zero Table knows no price.
type Table struct {
	byKey map[string]Entry // "provider/model"
}

// builtin are the built-in prices: the default model of each provider and
// the current models of each provider's public price list, as of Taken.
// Ollama runs locally and costs nothing unless the operator prices it.
var builtin = map[string]Price{
	"openai/gpt-5.6-terra":                           {Input: 0.25, Output: 2},
	"openai/gpt-5.6":                                 {Input: 1.25, Output: 10},
	"openai/gpt-5-mini":                              {Input: 0.25, Output: 2},
	"openai/gpt-5-nano":                              {Input: 0.05, Output: 0.4},
	"openai/gpt-5":                                   {Input: 1.25, Output: 10},
	"openai/gpt-4.1-mini":                            {Input: 0.4, Output: 1.6},
	"openai/gpt-4o-mini":                             {Input: 0.15, Output: 0.6},
	"anthropic/claude-haiku-4-5":                     {Input: 1, Output: 5},
	"anthropic/claude-sonnet-4-5":                    {Input: 3, Output: 15},
	"anthropic/claude-opus-4-5":                      {Input: 5, Output: 25},
	"groq/openai/gpt-oss-20b":                        {Input: 0.075, Output: 0.3},
	"groq/openai/gpt-oss-120b":                       {Input: 0.15, Output: 0.6},
	"groq/meta-llama/llama-4-scout-17b-16e-instruct": {Input: 0.11, Output: 0.34},
	"google/gemini-3.5-flash":                        {Input: 0.3, Output: 2.5},
	"google/gemini-2.5-flash-lite":                   {Input: 0.1, Output: 0.4},
	"google/gemini-2.5-pro":                          {Input: 1.25, Output: 10},
}

// Builtin is the built-in table.
func Builtin() Table {
	t := Table{byKey: make(map[string]Entry, len(builtin))}
	for key, p := range builtin {
		t.add(key, p, SourceBuiltin)
	}
	return t
}

// add puts the price of "provider/model" key in t; the provider is what
// comes before the first slash, so Groq's "openai/gpt-oss-20b" keeps its
// own slash.
func (t Table) add(key string, p Price, src Source) {
	provider, model, _ := strings.Cut(key, "/")
	t.byKey[key] = Entry{Provider: provider, Model: model, Price: p, Source: src}
}

// ParseFile reads a price file, JSON `{ "<provider>/<model>": { input,
// output } }`, as AGENTD_PRICES names it; name is for its errors.
func ParseFile(name string, data []byte) (map[string]Price, error) {
	var raw map[string]struct {
		Input, Output *float64
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of prices: %w", name, err)
	}
	out := make(map[string]Price, len(raw))
	for key, v := range raw {
		provider, model, ok := strings.Cut(key, "/")
		if !ok || provider == "" || model == "" {
			return nil, fmt.Errorf("%s: %q is not \"provider/model\"", name, key)
		}
		if v.Input == nil || v.Output == nil {
			return nil, fmt.Errorf("%s: %q needs both input and output", name, key)
		}
		p := Price{Input: *v.Input, Output: *v.Output}
		if !p.valid() {
			return nil, fmt.Errorf("%s: %q: prices are USD per million tokens, 0 to %d", name, key, Max)
		}
		out[key] = p
	}
	return out, nil
}

// With is t with the file's prices added or replacing t's.
func (t Table) With(file map[string]Price) Table {
	out := Table{byKey: make(map[string]Entry, len(t.byKey)+len(file))}
	for k, e := range t.byKey {
		out.byKey[k] = e
	}
	for k, p := range file {
		out.add(k, p, SourceFile)
	}
	return out
}

// IsZero reports whether t is the zero Table, which no constructor makes:
// a configuration that left its prices unset.
func (t Table) IsZero() bool { return t.byKey == nil }

// Lookup is the price of provider's model in t.
func (t Table) Lookup(provider, model string) (Price, bool) {
	e, ok := t.byKey[provider+"/"+model]
	return e.Price, ok
}

// Entries are t's prices by provider, then model.
func (t Table) Entries() []Entry {
	out := make([]Entry, 0, len(t.byKey))
	for _, e := range t.byKey {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	return out
}

// Of is the price a call of an agent pays: the agent's own price when it
// set one (modelSettings.price), else t's for provider and model; ok is
// false when neither is known, and the call then costs 0.
func (t Table) Of(agentPrice *Price, provider, model string) (p Price, ok bool) {
	if agentPrice != nil {
		return *agentPrice, true
	}
	return t.Lookup(provider, model)
}
