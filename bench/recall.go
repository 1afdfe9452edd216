package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/recall"
	"github.com/agentd/agentd/store"
	"github.com/jackc/pgx/v5"
)

// recallDims is the size of the bench's vectors: text-embedding-3-small's.
const recallDims = 1536

// recallRounds is how many recalls each point times.
const recallRounds = 200

// recallPoint is one measured recall: a backend, what it ranked, how many
// items the agent held and how it ranked them.
type recallPoint struct {
	backend, what, ranking string
	items                  int
	p50, p95               time.Duration
}

// fixedEmbedder embeds instantly (a hashed, normalised vector), so a
// recall's time is agentd's own: the provider's embedding call excluded.
type fixedEmbedder struct{}

func (fixedEmbedder) EmbeddingModel(string) (string, bool) { return "bench-embedding", true }

func (fixedEmbedder) Embed(_ context.Context, _, _ string, texts []string) ([][]float32, string, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = benchVector(t)
	}
	return out, "bench-embedding", nil
}

// benchVector is a deterministic unit vector of recallDims for text.
func benchVector(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	seed := h.Sum64()
	v := make([]float32, recallDims)
	var norm float64
	for i := range v {
		seed = seed*6364136223846793005 + 1442695040888963407
		v[i] = float32(int32(seed>>32)) / math.MaxInt32
		norm += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(norm))
	}
	return v
}

// benchRecall measures recall on SQLite (in dir) and, when the server of
// pgAdmin answers, on a fresh PostgreSQL database made there: memories at
// 1,000 and 10,000 per agent and 1,000 knowledge chunks, ranked by vectors
// and by full text.
func benchRecall(ctx context.Context, dir, pgAdmin string) ([]recallPoint, error) {
	backends := [][2]string{{"sqlite", filepath.Join(dir, "recall.db")}}
	if pgAdmin != "" {
		dsn, drop, err := freshDatabase(ctx, pgAdmin, explainSlowStatements...)
		if err != nil {
			logf("recall on postgres skipped: %v", err)
		} else {
			defer drop()
			backends = append(backends, [2]string{"postgres", dsn})
		}
	}
	var points []recallPoint
	for _, b := range backends {
		logf("recall on %s: seeding", b[0])
		ps, err := recallOn(ctx, b[0], b[1])
		if err != nil {
			return nil, fmt.Errorf("recall on %s: %w", b[0], err)
		}
		points = append(points, ps...)
	}
	return points, nil
}

// recallOn seeds one database and times its recalls.
func recallOn(ctx context.Context, backend, dsn string) ([]recallPoint, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	acct, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: "recall-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Tier: domain.TierEnterprise, AgentQuota: 1_000_000})
	if err != nil {
		return nil, err
	}
	var points []recallPoint
	for _, n := range []int{1000, 10_000} {
		a, err := seedMemories(ctx, st, acct.ID, n)
		if err != nil {
			return nil, err
		}
		if err := analyzeSearchTables(ctx, backend, dsn); err != nil {
			return nil, err
		}
		for _, ranking := range []string{"vectors", "full text"} {
			svc := recallService(st, ranking)
			p50, p95 := timeRecall(func(i int) error {
				_, err := svc.Memories(ctx, a, []string{"u1", ""}, "what does the user think about topic "+strconv.Itoa(i%97), 5)
				return err
			})
			points = append(points, recallPoint{backend, "memories", ranking, n, p50, p95})
		}
	}
	a, err := seedKnowledge(ctx, st, acct.ID, 1000)
	if err != nil {
		return nil, err
	}
	if err := analyzeSearchTables(ctx, backend, dsn); err != nil {
		return nil, err
	}
	for _, ranking := range []string{"vectors", "full text"} {
		svc := recallService(st, ranking)
		p50, p95 := timeRecall(func(i int) error {
			_, err := svc.Knowledge(ctx, a, "how do I configure topic "+strconv.Itoa(i%97), 5)
			return err
		})
		points = append(points, recallPoint{backend, "knowledge chunks", ranking, 1000, p50, p95})
	}
	return points, nil
}

// analyzeSearchTables has PostgreSQL gather the statistics of the tables
// a recall reads, as autovacuum would within a minute of the seeding (its
// naptime): the bench measures right after adding thousands of rows, and
// without statistics the planner takes an agent's memories for a handful.
func analyzeSearchTables(ctx context.Context, backend, dsn string) error {
	if backend != "postgres" {
		return nil
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "ANALYZE memories, knowledge_chunks")
	return err
}

// recallService ranks by vectors (the instant embedder) or by full text
// (no embedder).
func recallService(st *store.Store, ranking string) *recall.Service {
	if ranking == "vectors" {
		return recall.New(st.Memories(), st.Knowledge(), fixedEmbedder{}, nil)
	}
	return recall.New(st.Memories(), st.Knowledge(), nil, nil)
}

// newRecallAgent creates an agent of account acct for the recall bench.
func newRecallAgent(ctx context.Context, st *store.Store, acct string) (recall.Agent, error) {
	a, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct, Fields: map[string]json.RawMessage{"name": json.RawMessage(`"Recall"`)}}, -1)
	return recall.Agent{AccountID: acct, ID: a.ID, Provider: "openai"}, err
}

// seedMemories gives a new agent n memories of user u1, embedded.
func seedMemories(ctx context.Context, st *store.Store, acct string, n int) (recall.Agent, error) {
	a, err := newRecallAgent(ctx, st, acct)
	if err != nil {
		return a, err
	}
	svc := recall.New(st.Memories(), st.Knowledge(), fixedEmbedder{}, nil)
	for i := range n {
		text := fmt.Sprintf("The user said something about topic %d and likes item %d", i%97, i)
		if _, err := svc.SaveMemory(ctx, a, domain.Memory{UserID: "u1", Text: text, Source: domain.MemorySourceAPI}, false); err != nil {
			return a, err
		}
	}
	return a, nil
}

// seedKnowledge gives a new agent a document of n chunks, embedded.
func seedKnowledge(ctx context.Context, st *store.Store, acct string, n int) (recall.Agent, error) {
	a, err := newRecallAgent(ctx, st, acct)
	if err != nil {
		return a, err
	}
	var doc []byte
	for i := range n {
		para := fmt.Sprintf("Section %d explains how to configure topic %d. ", i, i%97)
		for len(para) < 900 {
			para += "It goes on with details that matter to the reader. "
		}
		doc = append(doc, para+"\n\n"...)
	}
	_, err = recall.New(st.Memories(), st.Knowledge(), fixedEmbedder{}, nil).AddKnowledge(ctx, a, "manual.md", string(doc))
	return a, err
}

// timeRecall runs f recallRounds times and returns its p50 and p95.
func timeRecall(f func(i int) error) (time.Duration, time.Duration) {
	took := make([]time.Duration, 0, recallRounds)
	for i := range recallRounds {
		start := time.Now()
		if err := f(i); err != nil {
			logf("recall: %v", err)
			return 0, 0
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2], took[len(took)*95/100]
}

// explainSlowStatements are the settings of the recall bench's database
// that have auto_explain write the plan of every statement over 10 ms to
// the server's log, so a slow recall shows the plan it actually got (a
// prepared statement's plan can differ from the one psql shows).
var explainSlowStatements = []string{
	"session_preload_libraries = 'auto_explain'",
	"auto_explain.log_min_duration = '10ms'",
}

// freshDatabase creates an empty database on the PostgreSQL server of
// admin, with settings ("name = value") for its sessions, and returns its
// DSN and how to drop it.
func freshDatabase(ctx context.Context, admin string, settings ...string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	name := "agentd_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		_ = conn.Close(ctx)
		return "", nil, err
	}
	for _, set := range settings {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+name+" SET "+set); err != nil {
			logf("database %s: %s not set: %v", name, set, err) // a server that refuses still measures
		}
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_ = conn.Close(context.Background())
	}, nil
}
