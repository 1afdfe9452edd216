package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
)

// TestLoadRun drives a real `agentd serve` over TCP with concurrent clients
// mixing reads, writes and messages, and reports throughput and latency.
// It runs only when AGENTD_LOAD_SECONDS is set (make bench); it asserts
// correctness (no 5xx, no unexpected status), never speed.
func TestLoadRun(t *testing.T) {
	seconds, _ := strconv.Atoi(os.Getenv("AGENTD_LOAD_SECONDS"))
	if seconds <= 0 {
		t.Skip("set AGENTD_LOAD_SECONDS to run the load run (make bench does)")
	}
	wire := llmtest.NewOpenAI(t)
	wire.Respond(llmtest.Reply{Text: "a short reply from the model", PromptTokens: 20, CompletionTokens: 6})
	db := tempDB(t)
	mustAgentd(t, db, "accounts", "create", "load", "--tier", "enterprise", "--rpm", "100000000", "--endpoint-multiplier", "10000000", "--agent-quota", "1000")
	key := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "load").stdout)
	in := boot(t, map[string]string{"OPENAI_API_KEY": "sk-load", "OPENAI_BASE_URL": wire.URL, "AGENTD_LOG_LEVEL": "error"},
		"--addr", "127.0.0.1:0", "--db", db)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func(method, path, body string) (int, time.Duration) {
		req, _ := http.NewRequest(method, in.base+path, bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, time.Since(start)
	}
	ids := make([]string, 50)
	for i := range ids {
		req, _ := http.NewRequest("POST", in.base+"/v1/agents", bytes.NewBufferString(`{"name":"load `+strconv.Itoa(i)+`","bio":["a load test agent"]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil || res.StatusCode != 201 {
			t.Fatalf("create: %v %v", err, res)
		}
		var created struct{ Data struct{ ID string } }
		_ = json.NewDecoder(res.Body).Decode(&created)
		res.Body.Close()
		ids[i] = created.Data.ID
	}
	ops := []struct {
		name   string
		weight int
		run    func(id string) (int, time.Duration)
		want   int
	}{
		{"get", 50, func(id string) (int, time.Duration) { return call("GET", "/v1/agents/"+id, "") }, 200},
		{"list", 20, func(string) (int, time.Duration) { return call("GET", "/v1/agents?limit=20&sortBy=name", "") }, 200},
		{"message", 20, func(id string) (int, time.Duration) {
			return call("POST", "/v1/agents/"+id+"/messages", `{"text":"hello","userId":"u`+strconv.Itoa(rand.IntN(100))+`"}`)
		}, 200},
		{"patch", 10, func(id string) (int, time.Duration) {
			return call("PATCH", "/v1/agents/"+id, `{"goals":["goal `+strconv.Itoa(rand.IntN(1000))+`"]}`)
		}, 200},
	}
	const workers = 32
	var mu sync.Mutex
	latencies := map[string][]time.Duration{}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := map[string][]time.Duration{}
			for time.Now().Before(deadline) {
				pick := rand.IntN(100)
				for _, op := range ops {
					if pick -= op.weight; pick < 0 {
						code, d := op.run(ids[rand.IntN(len(ids))])
						if code != op.want {
							t.Errorf("%s: status %d", op.name, code)
						}
						local[op.name] = append(local[op.name], d)
						break
					}
				}
			}
			mu.Lock()
			for k, v := range local {
				latencies[k] = append(latencies[k], v...)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	total := 0
	for _, op := range ops {
		l := latencies[op.name]
		slices.Sort(l)
		total += len(l)
		if len(l) > 0 {
			t.Logf("%-8s %7d requests  p50 %8v  p95 %8v  p99 %8v", op.name, len(l), l[len(l)/2], l[len(l)*95/100], l[len(l)*99/100])
		}
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	t.Logf("total %d requests in %ds with %d clients: %.0f req/s; heap in use %.1f MiB (server and clients share this process)",
		total, seconds, workers, float64(total)/float64(seconds), float64(mem.HeapInuse)/(1<<20))
}
