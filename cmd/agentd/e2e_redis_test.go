package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/redis/go-redis/v9"
)

// testRedisURL is the Redis the tests use; .ci/setup (make test) starts it.
const testRedisURL = "redis://127.0.0.1:6379/0"

// metricsListening is what serve writes to stderr for a metrics listener.
var metricsListening = regexp.MustCompile(`metrics on (http://\S+/metrics)\n`)

// redisClient returns a client of the test Redis; an unreachable one skips
// the test, or fails it in CI.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(testRedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(opts)
	t.Cleanup(func() { _ = rc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rc.Ping(ctx).Err(); err != nil {
		testutil.Unavailable(t, "Redis at "+testRedisURL, err)
	}
	return rc
}

func TestServeWithRedisAndAMetricsListener(t *testing.T) {
	rc := redisClient(t)
	db := tempDB(t)
	in := boot(t, nil, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--redis-url", testRedisURL, "--db", db)
	m := metricsListening.FindStringSubmatch(in.stderr.String())
	if m == nil {
		t.Fatalf("no metrics address on stderr: %s", in.stderr)
	}
	key := keyFrom(t, in.stdout.String())
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 10 * time.Second}, contract: loadContract(t)}

	r := c.do("GET", "/v1/agents", key, nil)
	expect(t, "list", r, 200, "")
	if r.header.Get("X-RateLimit-Limit") != "60" {
		t.Errorf("X-RateLimit-Limit = %q, want the standard account's 60", r.header.Get("X-RateLimit-Limit"))
	}
	var keys []string
	iter := rc.Scan(context.Background(), 0, redisPrefix+"*", 100).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if len(keys) == 0 {
		t.Errorf("no %s* key in Redis: the limits are not kept there", redisPrefix)
	}

	if r := c.do("GET", "/metrics", "", nil); r.status != http.StatusNotFound {
		t.Errorf("/metrics on the API listener: %d, want 404 when it has its own listener", r.status)
	}
	res, err := c.http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(body), "agentd_http_requests_total") {
		t.Errorf("metrics listener: %d\n%s", res.StatusCode, body)
	}
}

func TestServeLetsAStreamFinishOnShutdown(t *testing.T) {
	openai := llmtest.NewOpenAI(t)
	openai.Respond(llmtest.Reply{Fragments: []string{"one ", "two ", "three ", "four"}, FragmentDelay: 150 * time.Millisecond, PromptTokens: 1, CompletionTokens: 4})
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.URL}
	in := boot(t, env, "--addr", "127.0.0.1:0", "--db", tempDB(t))
	key := keyFrom(t, in.stdout.String())
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &client{t: t, base: in.base, http: &http.Client{Transport: transport, Timeout: 10 * time.Second}, contract: loadContract(t)}
	r := c.do("POST", "/v1/agents", key, map[string]any{"name": "Slow"})
	expect(t, "create", r, 201, "")
	id := r.data(t)["id"].(string)

	req, _ := http.NewRequest("POST", in.base+"/v1/agents/"+id+"/messages/stream", strings.NewReader(`{"text":"Count"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := c.http.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", res, err)
	}
	defer res.Body.Close()
	stopped := make(chan struct{})
	go func() { in.stop(t); close(stopped) }() // as SIGTERM, while the stream runs
	body, err := io.ReadAll(res.Body)
	<-stopped
	events := sseEvents(t, body)
	if err != nil || len(events) == 0 {
		t.Fatalf("stream cut by the shutdown: %v %q", err, body)
	}
	var last map[string]any
	_ = json.Unmarshal(events[len(events)-1], &last)
	if last["type"] != "done" || len(events) != 6 { // start, four tokens, done
		t.Errorf("stream cut by the shutdown: %d events, last %v", len(events), last)
	}
}
