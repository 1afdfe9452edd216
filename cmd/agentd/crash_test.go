package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/llm/llmtest"
	"github.com/agentd/agentd/store/storetest"
	_ "gorm.io/driver/sqlite" // registers mattn/go-sqlite3 as "sqlite3" for database/sql
)

// crashWorkers is how many clients load agentd between two kills.
const crashWorkers = 6

// TestCrashConsistency runs agentd as a process under concurrent create,
// patch and message load and kills it with SIGKILL at random moments,
// AGENTD_CRASH_KILLS times (20) on each backend, each after a load of up to
// AGENTD_CRASH_WINDOW (1s). After each restart every write acknowledged
// before the kill is there, intact, and nothing half-written is visible;
// on SQLite the file passes PRAGMA integrity_check after each kill.
func TestCrashConsistency(t *testing.T) {
	needReliability(t)
	kills := budgetInt(t, "AGENTD_CRASH_KILLS", 20)
	window := budgetDuration(t, "AGENTD_CRASH_WINDOW", time.Second)
	t.Run("sqlite", func(t *testing.T) {
		db := tempDB(t)
		crashLoop(t, db, kills, window, func(t *testing.T) { checkSQLiteIntegrity(t, db) })
	})
	t.Run("postgres", func(t *testing.T) { crashLoop(t, storetest.PostgresDSN(t), kills, window, nil) })
}

// crashAgent is what the load did to one agent, as its only writer.
type crashAgent struct {
	id, name string
	// patchSent and patchAcked are the last bio version sent and the last
	// acknowledged: the stored one lies between them.
	patchSent, patchAcked int
	// replies are the messageIds of the acknowledged replies.
	replies []string
}

// writes is how many acknowledged writes a carries: its create, its
// patches and its messages.
func (a *crashAgent) writes() int { return 1 + a.patchAcked + len(a.replies) }

// crashLoop kills agentd on db kills times under load, checking after
// each restart; afterKill, if any, inspects the database while no process
// has it open.
func crashLoop(t *testing.T, db string, kills int, window time.Duration, afterKill func(*testing.T)) {
	key := loadAccount(t, db)
	openai := llmtest.NewOpenAI(t)
	// A short provider delay keeps turns in flight when the kill comes.
	openai.Respond(llmtest.Reply{Text: "stored reply", Delay: 5 * time.Millisecond})
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + openai.URL}
	var all, last []*crashAgent
	checked := 0
	for i := range kills {
		p := spawn(t, db, env...)
		// The writes of the round just killed are checked at once; every
		// round's again after the last restart (checking all of them each
		// time would grow with the square of the rounds).
		checked += checkAfterRestart(t, newClient(t, p.base), key, last)
		var serverErrors int
		last, serverErrors = loadUntilKilled(p, key, fmt.Sprintf("k%d", i), window/4+rand.N(window*3/4))
		if serverErrors > 0 {
			t.Errorf("kill %d: %d requests answered 5xx under load", i+1, serverErrors)
		}
		all = append(all, last...)
		if afterKill != nil {
			afterKill(t)
		}
		if t.Failed() {
			t.Fatalf("stopped after kill %d", i+1)
		}
	}
	p := spawn(t, db, env...)
	checked += checkAfterRestart(t, newClient(t, p.base), key, all)
	p.stop(t)
	acked := 0
	for _, a := range all {
		acked += a.writes()
	}
	t.Logf("%d SIGKILLs survived; %d acknowledged writes (%d agents created, then patched and messaged), %d write checks after the restarts (each write after the restart following it, then all after the last)",
		kills, acked, len(all), checked)
}

// checkAfterRestart checks every acknowledged write of agents is there and
// intact, and that the newest agents, acknowledged or not, are whole; it
// returns how many acknowledged writes it checked.
func checkAfterRestart(t *testing.T, c *client, key string, agents []*crashAgent) int {
	t.Helper()
	checked := 0
	for _, a := range agents {
		r := c.do("GET", "/v1/agents/"+a.id, key, nil)
		if r.status != http.StatusOK {
			t.Errorf("acknowledged agent %s (%s): %d %s", a.id, a.name, r.status, r.body)
			continue
		}
		got := r.data(t)
		if got["name"] != a.name {
			t.Errorf("agent %s: name %v, want %s", a.id, got["name"], a.name)
		}
		if v, ok := wholeAgent(got); !ok || v < a.patchAcked || v > a.patchSent {
			t.Errorf("agent %s: bio %v goals %v; want bio version %d to %d", a.id, got["bio"], got["goals"], a.patchAcked, a.patchSent)
		}
		checkConversations(t, c, key, a)
		checked += a.writes()
	}
	// Creates cut by the kill are unknown to the load: the newest agents,
	// whatever their acknowledgment, must each be whole. The list shows a
	// summary, so each is read whole.
	list := c.do("GET", "/v1/agents?limit=100", key, nil).data(t)
	items, _ := list["agents"].([]any)
	for _, item := range items {
		id, _ := item.(map[string]any)["id"].(string)
		got := c.do("GET", "/v1/agents/"+id, key, nil).data(t)
		if _, ok := wholeAgent(got); !ok {
			t.Errorf("half-written agent: %v", got)
		}
	}
	return checked
}

// wholeAgent reports whether an agent the load created carries every
// field it was created with, and returns its bio's version (0 as created).
func wholeAgent(a map[string]any) (version int, ok bool) {
	name, _ := a["name"].(string)
	if !sameJSON(a["goals"], []any{"goal of " + name}) {
		return 0, false
	}
	bio, _ := a["bio"].([]any)
	if len(bio) != 1 {
		return 0, false
	}
	if bio[0] == "bio of "+name {
		return 0, true
	}
	s, _ := bio[0].(string)
	if _, err := fmt.Sscanf(strings.TrimPrefix(s, name+" "), "v%d", &version); err != nil || version < 1 {
		return 0, false
	}
	return version, true
}

// checkConversations checks that a's acknowledged replies are stored, and
// that each conversation holds whole exchanges counted by messageCount.
func checkConversations(t *testing.T, c *client, key string, a *crashAgent) {
	t.Helper()
	convs, _ := c.do("GET", "/v1/agents/"+a.id+"/conversations?limit=100", key, nil).data(t)["items"].([]any)
	stored := map[string]bool{}
	for _, item := range convs {
		conv := item.(map[string]any)
		msgs := conversationMessages(t, c, key, a.id, conv["id"].(string))
		if count := conv["messageCount"].(float64); int(count) != len(msgs) {
			t.Errorf("agent %s conversation %s: messageCount %v, %d messages", a.id, conv["id"], count, len(msgs))
		}
		if len(msgs)%2 != 0 {
			t.Errorf("agent %s conversation %s: %d messages, a user message without its reply", a.id, conv["id"], len(msgs))
		}
		for i, m := range msgs {
			stored[m["messageId"].(string)] = true
			if i > 0 && m["role"] == msgs[i-1]["role"] {
				t.Errorf("agent %s conversation %s: two %s messages in a row at %d", a.id, conv["id"], m["role"], i)
			}
		}
	}
	for _, id := range a.replies {
		if !stored[id] {
			t.Errorf("agent %s: acknowledged reply %s is not in its conversations", a.id, id)
		}
	}
}

// conversationMessages returns every message of a conversation, page by page.
func conversationMessages(t *testing.T, c *client, key, agentID, convID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for page := 1; ; page++ {
		d := c.do("GET", fmt.Sprintf("/v1/agents/%s/conversations/%s/messages?limit=100&page=%d", agentID, convID, page), key, nil).data(t)
		items, _ := d["items"].([]any)
		for _, m := range items {
			out = append(out, m.(map[string]any))
		}
		if pages, _ := d["pagination"].(map[string]any)["totalPages"].(float64); float64(page) >= pages {
			return out
		}
	}
}

// loadUntilKilled runs crashWorkers clients against p, each creating
// agents and patching and messaging its own, kills p after d, and returns
// what the clients were acknowledged and how many 5xx they got.
func loadUntilKilled(p *process, key, round string, d time.Duration) ([]*crashAgent, int) {
	transport := &http.Transport{MaxIdleConnsPerHost: crashWorkers}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 20 * time.Second}
	var (
		mu       sync.Mutex
		agents   []*crashAgent
		failures int
		wg       sync.WaitGroup
	)
	for w := range crashWorkers {
		wg.Go(func() {
			own, fails := crashWorker(hc, p.base, key, fmt.Sprintf("c-%s-%d", round, w))
			mu.Lock()
			defer mu.Unlock()
			agents = append(agents, own...)
			failures += fails
		})
	}
	time.Sleep(d)
	_ = p.cmd.Process.Kill()
	<-p.done
	wg.Wait()
	return agents, failures
}

// crashWorker creates, patches and messages agents named prefix-N until a
// request fails in transit (the process is gone); it returns its
// acknowledged agents and how many 5xx it got.
func crashWorker(hc *http.Client, base, key, prefix string) (own []*crashAgent, serverErrors int) {
	for n := 0; ; n++ {
		op := rand.IntN(10)
		var (
			status int
			doc    map[string]any
			err    error
		)
		switch {
		case len(own) == 0 || op < 3:
			name := fmt.Sprintf("%s-%d", prefix, n)
			status, doc, err = sendJSON(hc, "POST", base+"/v1/agents", key,
				map[string]any{"name": name, "bio": []string{"bio of " + name}, "goals": []string{"goal of " + name}})
			if status == http.StatusCreated {
				own = append(own, &crashAgent{id: doc["id"].(string), name: name})
			}
		case op < 6:
			a := own[rand.IntN(len(own))]
			a.patchSent++
			status, _, err = sendJSON(hc, "PATCH", base+"/v1/agents/"+a.id, key,
				map[string]any{"bio": []string{fmt.Sprintf("%s v%d", a.name, a.patchSent)}})
			if status == http.StatusOK {
				a.patchAcked = a.patchSent
			}
		default:
			a := own[rand.IntN(len(own))]
			status, doc, err = sendJSON(hc, "POST", base+"/v1/agents/"+a.id+"/messages", key,
				map[string]any{"text": fmt.Sprintf("message %d", n), "userId": "crash-user"})
			if status == http.StatusOK {
				a.replies = append(a.replies, doc["messageId"].(string))
			}
		}
		if err != nil {
			return own, serverErrors
		}
		if status >= 500 {
			serverErrors++
		}
	}
}

// sendJSON sends body as JSON with key and returns the status and the data
// of a success envelope; err is a failure in transit.
func sendJSON(hc *http.Client, method, url, key string, body any) (int, map[string]any, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, fmt.Errorf("encode %s %s: %w", method, url, err)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	var env struct {
		Data map[string]any `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		// A body cut by the kill: the write was not acknowledged.
		return 0, nil, fmt.Errorf("%s %s: read the answer: %w", method, url, err)
	}
	return res.StatusCode, env.Data, nil
}

// checkSQLiteIntegrity runs PRAGMA integrity_check on the SQLite file db,
// opened read-only as the killed process left it.
func checkSQLiteIntegrity(t *testing.T, db string) {
	t.Helper()
	conn, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatalf("open %s read-only: %v", db, err)
	}
	defer conn.Close()
	var result string
	if err := conn.QueryRow("PRAGMA integrity_check").Scan(&result); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	if result != "ok" {
		t.Errorf("integrity_check after the kill: %s", result)
	}
}
