package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

func BenchmarkCreateAgent(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	f := fields(b, "name", "bench", "modelProvider", "openai", "model", "gpt-4o-mini",
		"bio", []string{"one", "two"}, "personality", map[string]any{"tone": "warm"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.CreateAgent(ctx, Agent{AccountID: acct.ID, Fields: f}, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListAgents(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	for i := range 1000 {
		f := map[string]json.RawMessage{"name": json.RawMessage(fmt.Sprintf(`"agent-%04d"`, (i*7919)%1000))}
		if _, err := s.CreateAgent(ctx, Agent{AccountID: acct.ID, Fields: f}, -1); err != nil {
			b.Fatal(err)
		}
	}
	q := ListQuery{Page: 10, Limit: 20, SortBy: SortName, Desc: true}
	b.ReportAllocs()
	for b.Loop() {
		agents, total, err := s.ListAgents(ctx, acct.ID, q)
		if err != nil || len(agents) != 20 || total != 1000 {
			b.Fatalf("%d agents, total %d, %v", len(agents), total, err)
		}
	}
}
