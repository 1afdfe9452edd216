package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/limit"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/turn"
	"github.com/redis/go-redis/v9"
)

// rateHeaders reads the three X-RateLimit headers as integers.
func rateHeaders(t *testing.T, res response) (limit, remaining, reset int64) {
	t.Helper()
	get := func(name string) int64 {
		v, err := strconv.ParseInt(res.Header.Get(name), 10, 64)
		if err != nil {
			t.Fatalf("%s = %q: %v", name, res.Header.Get(name), err)
		}
		return v
	}
	return get("X-RateLimit-Limit"), get("X-RateLimit-Remaining"), get("X-RateLimit-Reset")
}

// inOneWindow returns once the current rate window has at least need
// left, waiting for the next one when it has not: windows are aligned to
// the clock's minutes, and a test that counts up to a limit must count in
// one of them.
func inOneWindow(need time.Duration) {
	if left := time.Until(time.Now().Truncate(limit.Window).Add(limit.Window)); left < need {
		time.Sleep(left + 50*time.Millisecond)
	}
}

func TestRateLimitHeadersCountDown(t *testing.T) {
	h := newHarness(t)
	h.newAccount("std", domain.TierStandard)
	key := h.newKey("std", domain.ScopeWrite)
	inOneWindow(15 * time.Second)
	var firstReset int64
	for i := 1; i <= 10; i++ {
		res := h.do(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "a" + strconv.Itoa(i)}})
		if res.Code != 201 {
			t.Fatalf("create %d: %d %s", i, res.Code, res.Body)
		}
		lim, rem, reset := rateHeaders(t, res)
		if lim != 10 || rem != int64(10-i) {
			t.Errorf("create %d: limit %d remaining %d", i, lim, rem)
		}
		if i == 1 {
			firstReset = reset
		}
		if reset != firstReset || reset <= time.Now().Unix()-1 || reset > time.Now().Add(61*time.Second).Unix() {
			t.Errorf("create %d: reset %d (first %d, now %d)", i, reset, firstReset, time.Now().Unix())
		}
		if res.Header.Get("RateLimit-Limit") != "10" || res.Header.Get("RateLimit-Remaining") != strconv.Itoa(10-i) {
			t.Errorf("IETF headers %v", res.Header)
		}
	}
	res := h.do(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "eleventh"}})
	if res.Code != 429 || res.ErrorCode(t) != "RATE_LIMIT_EXCEEDED" {
		t.Fatalf("11th create: %d %s", res.Code, res.Body)
	}
	retry, _ := res.Details(t)["retryAfter"].(float64)
	if retry < 1 || retry > 60 || res.Header.Get("Retry-After") != strconv.Itoa(int(retry)) {
		t.Errorf("retryAfter %v, Retry-After %q", retry, res.Header.Get("Retry-After"))
	}
	if _, rem, _ := rateHeaders(t, res); rem != 0 {
		t.Errorf("remaining on 429: %d", rem)
	}
	// Errors carry the headers too, and other endpoints have their own limit.
	res = h.do(request{method: "GET", path: "/v1/agents/agent_nope", key: key})
	if lim, rem, _ := rateHeaders(t, res); res.Code != 404 || lim != 60 || rem != 60-10-1 {
		t.Errorf("404 headers: %d limit %d remaining %d (account limit binds: 11 counted requests, the refused one is not counted)", res.Code, lim, rem)
	}
	// The failed create wrote nothing.
	list := h.do(request{method: "GET", path: "/v1/agents?limit=100", key: key}).Data(t)
	if n := len(list["agents"].([]any)); n != 10 {
		t.Errorf("%d agents stored", n)
	}
}

func TestRateLimitTiers(t *testing.T) {
	h := newHarness(t)
	h.newAccount("pro", domain.TierPro)
	pro := h.newKey("pro", domain.ScopeWrite)
	inOneWindow(15 * time.Second)
	for i := 1; i <= 50; i++ {
		if res := h.do(request{method: "POST", path: "/v1/agents", key: pro, body: map[string]any{"name": "p"}}); res.Code != 201 {
			t.Fatalf("pro create %d: %d %s", i, res.Code, res.Body)
		}
	}
	if res := h.do(request{method: "POST", path: "/v1/agents", key: pro, body: map[string]any{"name": "p"}}); res.Code != 429 {
		t.Fatalf("51st pro create: %d", res.Code)
	}
	// An account limit lower than the endpoint limit binds first.
	if _, err := h.store.Accounts().CreateAccount(context.Background(), domain.Account{Name: "ent", Tier: domain.TierEnterprise, RPM: 3, EndpointMultiplier: 10}); err != nil {
		t.Fatal(err)
	}
	ent := h.newKey("ent", domain.ScopeRead)
	for i := 1; i <= 3; i++ {
		res := h.do(request{method: "GET", path: "/v1/agents", key: ent})
		if lim, rem, _ := rateHeaders(t, res); res.Code != 200 || lim != 3 || rem != int64(3-i) {
			t.Errorf("enterprise %d: %d limit %d remaining %d", i, res.Code, lim, rem)
		}
	}
	if res := h.do(request{method: "GET", path: "/v1/agents", key: ent}); res.Code != 429 {
		t.Errorf("4th enterprise request: %d", res.Code)
	}
}

func TestUnauthenticatedRequestsAreNotCounted(t *testing.T) {
	h := newHarness(t)
	h.newAccount("std", domain.TierStandard)
	key := h.newKey("std", domain.ScopeRead)
	inOneWindow(10 * time.Second)
	for i := 0; i < 70; i++ {
		res := h.do(request{method: "GET", path: "/v1/agents", key: "agk_" + strings.Repeat("z", 40)})
		if res.Code != 401 || res.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("bad key: %d %v", res.Code, res.Header)
		}
	}
	if _, rem, _ := rateHeaders(t, h.do(request{method: "GET", path: "/v1/agents", key: key})); rem != 59 {
		t.Errorf("remaining %d after an unauthenticated flood", rem)
	}
	// A read key refused a write is authenticated: counted, with headers.
	res := h.do(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "x"}})
	if lim, rem, _ := rateHeaders(t, res); res.Code != 403 || lim != 10 || rem != 9 {
		t.Errorf("read key on create: %d limit %d remaining %d", res.Code, lim, rem)
	}
}

func TestRateLimitWindowMoves(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.Counter = limit.NewMemoryCounter(limit.WithWindow(time.Second)) })
	h.newAccount("std", domain.TierStandard)
	key := h.newKey("std", domain.ScopeRead)
	_, _, first := rateHeaders(t, h.do(request{method: "GET", path: "/v1/agents", key: key}))
	time.Sleep(time.Until(time.Unix(first, 0)) + 50*time.Millisecond)
	_, rem, next := rateHeaders(t, h.do(request{method: "GET", path: "/v1/agents", key: key}))
	if next <= first || rem != 59 {
		t.Errorf("after the window: reset %d (was %d), remaining %d", next, first, rem)
	}
}

// concurrent sends n messages at once to a slow provider and counts the
// statuses.
func concurrent(t *testing.T, handler http.Handler, key, path string, n int) map[int]int {
	t.Helper()
	ts := httptest.NewServer(handler)
	defer ts.Close()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(`{"text":"hi"}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			body := new(strings.Builder)
			_, _ = io.Copy(body, res.Body)
			if res.StatusCode == 429 && !strings.Contains(body.String(), `"limit":"concurrency"`) {
				t.Errorf("429 without the concurrency limit: %s", body)
			}
			mu.Lock()
			codes[res.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

func TestConcurrencyCap(t *testing.T) {
	for _, path := range []string{"/messages", "/messages/stream"} {
		t.Run(path, func(t *testing.T) {
			h := newHarness(t)
			h.openai.Respond(llmtest.Reply{Fragments: []string{"slow ", "reply"}, Delay: 500 * time.Millisecond})
			id := h.createAgent(map[string]any{"name": "busy"})
			codes := concurrent(t, h.srv.Handler(), h.writeKey, "/v1/agents/"+id+path, 12)
			if codes[200] != 10 || codes[429] != 2 {
				t.Fatalf("statuses %v, want 10×200 and 2×429", codes)
			}
			// Every slot came back: a new burst of 10 is admitted whole.
			h.openai.Respond(llmtest.Reply{Status: 500})
			codes = concurrent(t, h.srv.Handler(), h.writeKey, "/v1/agents/"+id+path, 10)
			if codes[429] != 0 {
				t.Fatalf("slots leaked after success: %v", codes)
			}
			h.do(request{method: "PATCH", path: "/v1/agents/" + id, key: h.writeKey, body: map[string]any{"status": "active"}})
			h.openai.Respond(llmtest.Reply{Text: "ok"})
			codes = concurrent(t, h.srv.Handler(), h.writeKey, "/v1/agents/"+id+path, 10)
			if codes[200] != 10 {
				t.Fatalf("slots leaked after errors: %v", codes)
			}
		})
	}
}

func TestQuotaUnderConcurrentCreates(t *testing.T) {
	h := newHarness(t)
	if _, err := h.store.Accounts().CreateAccount(context.Background(), domain.Account{Name: "small", Tier: domain.TierEnterprise, RPM: 1000, EndpointMultiplier: 100, AgentQuota: 5}); err != nil {
		t.Fatal(err)
	}
	key := h.newKey("small", domain.ScopeWrite)
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := h.do(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "q"}})
			if res.Code == 403 {
				d := res.Details(t)
				if res.ErrorCode(t) != "INSUFFICIENT_QUOTA" || d["quota"] != 5.0 || d["used"] != 5.0 {
					t.Errorf("quota refusal %s", res.Body)
				}
			}
			mu.Lock()
			codes[res.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[201] != 5 || codes[403] != 15 {
		t.Fatalf("statuses %v", codes)
	}
}

// redisBackends returns a counter and a semaphore on the local Redis under a
// key prefix of the test's own.
func redisBackends(t *testing.T, prefix string, lease time.Duration) (limit.Counter, limit.Semaphore) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() {
		keys, _ := client.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			client.Del(context.Background(), keys...)
		}
		_ = client.Close()
	})
	if err := client.Ping(context.Background()).Err(); err != nil {
		testutil.Unavailable(t, "Redis at 127.0.0.1:6379", err)
	}
	return limit.NewRedisCounter(client, prefix), limit.NewRedisSemaphore(client, prefix, lease)
}

func TestReplicasShareLimitsThroughRedis(t *testing.T) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "agentd-test-" + hex.EncodeToString(b[:]) + ":"
	replicaA := newHarness(t, func(c *harnessConfig) { c.Counter, c.Turn.Semaphore = redisBackends(t, prefix, 2*time.Second) })
	// Replica B serves the same database with its own Redis clients.
	cfgB := replicaA.cfg
	cfgB.Counter, cfgB.Turn.Semaphore = redisBackends(t, prefix, 2*time.Second)
	cfgB.Registry, cfgB.Turn.Registerer = nil, nil
	turnsB, err := turn.New(cfgB.Turn)
	if err != nil {
		t.Fatal(err)
	}
	cfgB.Turns = turnsB
	replicaB := newServer(t, cfgB.Config)
	replicaA.newAccount("std", domain.TierStandard)
	key := replicaA.newKey("std", domain.ScopeWrite)
	inOneWindow(15 * time.Second)
	for i := 0; i < 10; i++ {
		srv := replicaA.srv
		if i%2 == 1 {
			srv = replicaB
		}
		rec := httptest.NewRecorder()
		req := replicaA.httpRequest(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "r"}})
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 201 {
			t.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	replicaB.Handler().ServeHTTP(rec, replicaA.httpRequest(request{method: "POST", path: "/v1/agents", key: key, body: map[string]any{"name": "r"}}))
	if rec.Code != 429 {
		t.Fatalf("11th create across replicas: %d", rec.Code)
	}

	replicaA.openai.Respond(llmtest.Reply{Fragments: []string{"slow ", "reply"}, Delay: 500 * time.Millisecond})
	id := replicaA.createAgent(map[string]any{"name": "shared"})
	var wg sync.WaitGroup
	var codesA, codesB map[int]int
	wg.Add(2)
	go func() {
		defer wg.Done()
		codesA = concurrent(t, replicaA.srv.Handler(), replicaA.writeKey, "/v1/agents/"+id+"/messages", 6)
	}()
	go func() {
		defer wg.Done()
		codesB = concurrent(t, replicaB.Handler(), replicaA.writeKey, "/v1/agents/"+id+"/messages", 6)
	}()
	wg.Wait()
	if codesA[200]+codesB[200] != 10 || codesA[429]+codesB[429] != 2 {
		t.Fatalf("replica A %v, replica B %v: want 10 admitted in all", codesA, codesB)
	}
}
