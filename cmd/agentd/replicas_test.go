package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/connect/telegram/telegramtest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
)

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).AddrPort().String()
}

// startNginx runs nginx with deploy/nginx.conf in front of the replicas'
// base URLs, on a free loopback port, and returns its base URL. Without
// nginx the test is skipped, except in CI (.ci/setup installs it).
func startNginx(t *testing.T, replicas []string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, statErr := os.Stat(bin); statErr != nil {
			testutil.Unavailable(t, "nginx (the replica test runs deploy/nginx.conf)", statErr)
		}
	}
	conf, err := os.ReadFile("../../deploy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	var servers strings.Builder
	for _, r := range replicas {
		servers.WriteString("        server " + strings.TrimPrefix(r, "http://") + " max_fails=1 fail_timeout=5s;\n")
	}
	upstream := regexp.MustCompile(`(?m)^\s*server 127\.0\.0\.1:808\d.*\n`)
	text := upstream.ReplaceAllString(string(conf), "")
	text = strings.Replace(text, "keepalive 64;", strings.TrimLeft(servers.String(), " ")+"        keepalive 64;", 1)
	addr := freePort(t)
	text = strings.Replace(text, "listen 8080;", "listen "+addr+";", 1)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr testutil.SyncBuffer
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-g", "daemon off; pid "+filepath.Join(dir, "nginx.pid")+";")
	cmd.Stderr = &stderr
	// SIGTERM makes the master stop its workers too; they share stderr, so
	// Wait gives up on the pipe after WaitDelay rather than hang.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	base := "http://" + addr
	testutil.Eventually(t, "nginx listening", func() error {
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return err
		}
		res.Body.Close()
		return testutil.Equal("status", res.StatusCode, 200)
	})
	return base
}

// TestReplicasBehindNginx runs three agentd processes on one PostgreSQL
// database and Redis behind nginx, configured by deploy/nginx.conf.
func TestReplicasBehindNginx(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes and nginx")
	}
	db := storetest.PostgresDSN(t)
	redisClient(t)
	openai := llmtest.NewOpenAI(t)
	tg := telegramtest.New(t)
	const token = "777:replicas"
	tg.AddBot(token, 777, "replica_bot")
	env := []string{"AGENTD_REDIS_URL=" + testRedisURL, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + openai.URL,
		"TELEGRAM_API_URL=" + tg.URL}
	replicas := []*process{spawn(t, db, env...)}
	key := keyFrom(t, replicas[0].stdout.String())
	replicas = append(replicas, spawn(t, db, env...), spawn(t, db, env...))
	var bases []string
	for _, r := range replicas {
		bases = append(bases, r.base)
	}
	lb := newClient(t, startNginx(t, bases))
	direct := []*client{newClient(t, bases[0]), newClient(t, bases[1]), newClient(t, bases[2])}
	rcv := newHookReceiver(t, false)
	expect(t, "create webhook", lb.do("POST", "/v1/webhooks", key, map[string]any{"url": rcv.URL, "events": []string{"agent.created"}}), 201, "")

	t.Run("one agent, every replica", func(t *testing.T) {
		id := lb.do("POST", "/v1/agents", key, map[string]any{"name": "shared"}).data(t)["id"].(string)
		expect(t, "read on replica 2", direct[1].do("GET", "/v1/agents/"+id, key, nil), 200, "")
		expect(t, "patch on replica 3", direct[2].do("PATCH", "/v1/agents/"+id, key, map[string]any{"bio": []string{"patched"}}), 200, "")
		if bio := direct[0].do("GET", "/v1/agents/"+id, key, nil).data(t)["bio"]; len(bio.([]any)) != 1 {
			t.Errorf("replica 1 reads bio %v", bio)
		}
		openai.Respond(llmtest.Reply{Text: "hello from any replica"})
		expect(t, "message on replica 2", direct[1].do("POST", "/v1/agents/"+id+"/messages", key, map[string]any{"text": "hi", "userId": "u"}), 200, "")
		convs := direct[2].do("GET", "/v1/agents/"+id+"/conversations", key, nil).data(t)["items"].([]any)
		if len(convs) != 1 {
			t.Errorf("replica 3 sees %d conversations", len(convs))
		}
		expect(t, "delete on replica 3", direct[2].do("DELETE", "/v1/agents/"+id, key, nil), 200, "")
		expect(t, "gone on replica 1", direct[0].do("GET", "/v1/agents/"+id, key, nil), 404, "AGENT_NOT_FOUND")
	})

	t.Run("rate limits and the concurrency cap hold across replicas", func(t *testing.T) {
		mustAgentd(t, db, "accounts", "create", "limited")
		std := keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "limited").stdout)
		codes := map[int]int{}
		for i := range 11 {
			codes[direct[i%3].do("POST", "/v1/agents", std, map[string]any{"name": "n"}).status]++
		}
		if codes[201] != 10 || codes[429] != 1 {
			t.Errorf("11 creates of a standard account over 3 replicas: %v, want 10 created and 1 refused", codes)
		}
		id := lb.do("POST", "/v1/agents", key, map[string]any{"name": "busy"}).data(t)["id"].(string)
		openai.Respond(llmtest.Reply{Text: "slow", Delay: 1500 * time.Millisecond})
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[int]int{}
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status := rawPost(direct[i%3].base+"/v1/agents/"+id+"/messages", key, `{"text":"hi"}`)
				mu.Lock()
				got[status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if got[200] != 10 || got[429] != 2 {
			t.Errorf("12 concurrent messages over 3 replicas: %v, want 10 answered and 2 refused", got)
		}
	})

	t.Run("a stream passes nginx token by token", func(t *testing.T) {
		id := lb.do("POST", "/v1/agents", key, map[string]any{"name": "streamer"}).data(t)["id"].(string)
		openai.Respond(llmtest.Reply{Fragments: []string{"one ", "two ", "three"}, FragmentDelay: 400 * time.Millisecond})
		req, _ := http.NewRequest("POST", lb.base+"/v1/agents/"+id+"/messages/stream", strings.NewReader(`{"text":"go"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		r := bufio.NewReader(res.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before a token: %v", err)
			}
			if strings.Contains(line, `"type":"token"`) {
				break
			}
		}
		// Buffered by nginx, the first token would arrive with the rest of
		// the stream: unbuffered, the done event is still to come.
		if pending, _ := r.Peek(r.Buffered()); bytes.Contains(pending, []byte(`"type":"done"`)) {
			t.Error("the first token arrived together with the end of the stream: nginx buffered it")
		}
	})

	t.Run("each webhook event once", func(t *testing.T) {
		// The default account created shared, busy and streamer.
		testutil.Eventually(t, "every agent.created", func() error { return testutil.Equal("events", len(rcv.counts()), 3) })
		for id, n := range rcv.counts() {
			if n != 1 {
				t.Errorf("event %s delivered %d times", id, n)
			}
		}
	})

	t.Run("a connection runs on one replica and moves when it dies", func(t *testing.T) {
		id := lb.do("POST", "/v1/agents", key, map[string]any{"name": "bot", "clients": []string{"telegram"},
			"settings": map[string]any{"secrets": map[string]string{"TELEGRAM_BOT_TOKEN": token}}}).data(t)["id"].(string)
		owner := func() int {
			for i, r := range replicas {
				if r.cmd.ProcessState == nil && acquired(r, id) {
					return i
				}
			}
			return -1
		}
		testutil.Eventually(t, "one replica polls", func() error {
			if o, n := owner(), tg.Polling(token); o < 0 || n != 1 {
				return fmt.Errorf("owner %d, %d pollers", o, n)
			}
			return nil
		})
		first := owner()
		replicas[first].kill(t)
		testutil.Eventually(t, "another replica takes over", func() error {
			for i, r := range replicas {
				if i != first && acquired(r, id) {
					return testutil.Equal("pollers", tg.Polling(token), 1)
				}
			}
			return errors.New("no other replica took the lease")
		})
	})

	t.Run("killing a replica mid-load loses no acknowledged write", func(t *testing.T) {
		var alive *process
		for _, r := range replicas {
			if r.cmd.ProcessState == nil {
				alive = r
				break
			}
		}
		var mu sync.Mutex
		var acked []string
		answered := 0 // creates answered, acknowledged or not
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := createVia(lb.base, key)
					mu.Lock()
					answered++
					if id != "" {
						acked = append(acked, id)
					}
					mu.Unlock()
				}
			}()
		}
		counts := func() (int, int) { // answered, acknowledged
			mu.Lock()
			defer mu.Unlock()
			return answered, len(acked)
		}
		testutil.Eventually(t, "the load acknowledged", func() error {
			if _, n := counts(); n == 0 {
				return errors.New("no create acknowledged")
			}
			return nil
		})
		alive.kill(t)
		before, _ := counts()
		// The load goes on across the kill: creates sent to the killed
		// replica fail, the others are acknowledged by the one left.
		testutil.Eventually(t, "creates answered after the kill", func() error {
			if n, _ := counts(); n-before < 8 {
				return fmt.Errorf("%d answered", n-before)
			}
			return nil
		})
		close(stop)
		wg.Wait()
		if len(acked) == 0 {
			t.Fatal("no create was acknowledged")
		}
		for _, id := range acked {
			if r := lb.do("GET", "/v1/agents/"+id, key, nil); r.status != 200 {
				t.Errorf("acknowledged agent %s: %d", id, r.status)
			}
		}
		t.Logf("%d acknowledged creates, all present after a replica was killed", len(acked))
	})
}

// acquired reports whether replica r logged taking the lease of agent id's
// connection.
func acquired(r *process, id string) bool {
	for _, line := range strings.Split(r.stderr.String(), "\n") {
		if strings.Contains(line, `"msg":"connection lease acquired"`) && strings.Contains(line, `"agent":"`+id+`"`) {
			return true
		}
	}
	return false
}

// rawPost sends a JSON body and returns the status, or 0 when the request
// failed.
func rawPost(url, key, body string) int {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// createVia creates an agent through base and returns its id when the
// create was acknowledged (201), "" otherwise.
func createVia(base, key string) string {
	req, _ := http.NewRequest("POST", base+"/v1/agents", strings.NewReader(`{"name":"load"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if res.StatusCode != 201 || json.NewDecoder(res.Body).Decode(&env) != nil {
		return ""
	}
	return env.Data.ID
}
