package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
)

func BenchmarkCreateAgent(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	f := fields(b, "name", "bench", "modelProvider", "openai", "model", "gpt-4o-mini",
		"bio", []string{"one", "two"}, "personality", map[string]any{"tone": "warm"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: f}, 1<<30); err != nil {
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
		if _, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: f}, -1); err != nil {
			b.Fatal(err)
		}
	}
	q := domain.ListQuery{Page: 10, Limit: 20, SortBy: domain.SortName, Desc: true}
	b.ReportAllocs()
	for b.Loop() {
		agents, total, err := s.Agents().ListAgents(ctx, acct.ID, q)
		if err != nil || len(agents) != 20 || total != 1000 {
			b.Fatalf("%d agents, total %d, %v", len(agents), total, err)
		}
	}
}

func BenchmarkGetAgent(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	a := mustAgent(b, s, acct.ID, "bench", "bio", []string{"one", "two"}, "personality", map[string]any{"tone": "warm"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Agents().GetAgent(ctx, acct.ID, a.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate measures a request's authentication from the cache
// (cached) and from the database (read: the cache entry has always expired).
func BenchmarkAuthenticate(b *testing.B) {
	for _, tc := range []struct {
		name string
		step time.Duration
	}{{"cached", 0}, {"read", AuthCacheTTL}} {
		b.Run(tc.name, func(b *testing.B) {
			s := newSQLite(b)
			clock := withClock(s)
			ctx := context.Background()
			mustAccount(b, s, "acme")
			plain, _, err := s.Accounts().CreateKey(ctx, "acme", domain.ScopeWrite, nil)
			mustOK(b, err)
			b.ReportAllocs()
			for b.Loop() {
				clock.add(tc.step)
				if _, err := s.Accounts().Authenticate(ctx, plain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListAgentsDepth compares the first page of 5,000 agents with
// the last (page 250 of 20): the offset walks the sort index up to the
// page, so a deep page costs more.
func BenchmarkListAgentsDepth(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	f := map[string]json.RawMessage{"name": json.RawMessage(`"agent"`)}
	for range 5000 {
		if _, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: f}, -1); err != nil {
			b.Fatal(err)
		}
	}
	for _, page := range []int{1, 250} {
		b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
			q := domain.ListQuery{Page: page, Limit: 20, SortBy: domain.SortCreatedAt, Desc: true}
			b.ReportAllocs()
			for b.Loop() {
				if agents, _, err := s.Agents().ListAgents(ctx, acct.ID, q); err != nil || len(agents) != 20 {
					b.Fatalf("%d agents, %v", len(agents), err)
				}
			}
		})
	}
}

// BenchmarkSaveExchange saves exchanges of 16 concurrent turns, each to a
// conversation of its own that already exists, as a busy service does.
func BenchmarkSaveExchange(b *testing.B) {
	s := newSQLite(b)
	ctx := context.Background()
	acct := mustAccount(b, s, "acme")
	a := mustAgent(b, s, acct.ID, "bench")
	var next atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		conv := ref(fmt.Sprintf("user:u%d", next.Add(1)))
		for pb.Next() {
			_, _, err := s.Conversations().SaveExchange(ctx, acct.ID, a.ID, conv, domain.Message{Text: "hello", UserID: "u"}, domain.Message{Text: "hi there", TokensUsed: 12})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
