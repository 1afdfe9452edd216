package telegram_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/connecttest"
	"github.com/agentd/agentd/connect/telegram"
	"github.com/agentd/agentd/connect/telegram/telegramtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
	"github.com/go-telegram/bot/models"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

const (
	token   = "123:abc"
	botID   = 123
	botName = "ada_bot"
)

// echoTurner answers every message with "re: <text>", or with reply when
// set; when block is set, each turn first waits for it to be closed.
type echoTurner struct {
	mu    sync.Mutex
	reqs  []turn.Input
	reply string
	block chan struct{}
}

func (e *echoTurner) Reply(ctx context.Context, r turn.Input) (turn.Result, error) {
	if e.block != nil {
		select {
		case <-e.block:
		case <-ctx.Done():
			return turn.Result{}, ctx.Err()
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs = append(e.reqs, r)
	if e.reply != "" {
		return turn.Result{Text: e.reply}, nil
	}
	return turn.Result{Text: "re: " + r.Text}, nil
}

type fixture struct {
	t      *testing.T
	st     *store.Store
	tg     *telegramtest.Server
	turner *echoTurner
	acct   store.Account
	cancel context.CancelFunc
	done   chan struct{}

	// Set before start: the connection queue's size (the default when
	// 0), the metrics' registry and the logs' handler (none when nil).
	queueSize int
	reg       *prometheus.Registry
	logs      *connecttest.Logs
}

// start opens a store at dsn ("" for a SQLite file) and runs a supervisor
// on it against a fresh test server.
func newFixture(t *testing.T) *fixture {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	acct, err := st.CreateAccount(context.Background(), store.Account{Name: "acme", Tier: store.TierStandard})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, st: st, tg: telegramtest.New(t), turner: &echoTurner{}, acct: acct}
	f.tg.AddBot(token, botID, botName)
	return f
}

func (f *fixture) run(st *store.Store, owner string) (stop context.CancelFunc, done chan struct{}) {
	cfg := connect.Config{
		Store: st, Turner: f.turner, Owner: owner,
		Platforms: []connect.Platform{&telegram.Platform{APIURL: f.tg.URL, PollTimeout: 2 * time.Second}},
		LeaseTTL:  time.Second, RenewEvery: 200 * time.Millisecond, ChangeEvery: 100 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, QueueSize: f.queueSize,
	}
	if f.reg != nil {
		cfg.Registerer = f.reg
	}
	if f.logs != nil {
		cfg.Logger = slog.New(f.logs)
	}
	sup, err := connect.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { defer close(done); _ = sup.Run(ctx) }()
	return cancel, done
}

// start runs the fixture's supervisor until the test ends.
func (f *fixture) start() {
	stop, done := f.run(f.st, "replica-a")
	f.t.Cleanup(func() { stop(); <-done })
	f.cancel, f.done = stop, done
}

func (f *fixture) agent(settings map[string]any) store.Agent {
	doc := map[string]any{"name": "Ada", "clients": []string{"telegram"}, "settings": settings}
	fields := map[string]json.RawMessage{}
	for k, v := range doc {
		fields[k], _ = json.Marshal(v)
	}
	a, err := f.st.CreateAgent(context.Background(), store.Agent{AccountID: f.acct.ID, Fields: fields}, -1)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func withToken(extra map[string]any) map[string]any {
	s := map[string]any{"secrets": map[string]any{telegram.TokenVar: token}}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func (f *fixture) state(a store.Agent) store.Connection {
	conns, err := f.st.ListConnections(context.Background(), f.acct.ID, a.ID)
	if err != nil || len(conns) == 0 {
		return store.Connection{}
	}
	return conns[0]
}

func (f *fixture) waitConnected(a store.Agent) {
	connecttest.Eventually(f.t, "connected", func() bool { return f.state(a).State == store.ConnConnected && f.tg.Polling(token) > 0 })
}

var nextMsg = 1

func private(text string) models.Update {
	nextMsg++
	return models.Update{Message: &models.Message{ID: nextMsg, Text: text,
		From: &models.User{ID: 42, Username: "alice"}, Chat: models.Chat{ID: 42, Type: models.ChatTypePrivate}}}
}

func group(text string, from *models.User, entities ...models.MessageEntity) models.Update {
	nextMsg++
	return models.Update{Message: &models.Message{ID: nextMsg, Text: text, Entities: entities, From: from,
		Chat: models.Chat{ID: -100, Type: models.ChatTypeSupergroup, Title: "Friends", Username: "friends"}}}
}

var alice = &models.User{ID: 42, Username: "alice"}

func command(text string) models.MessageEntity {
	word, _, _ := strings.Cut(text, " ")
	return models.MessageEntity{Type: models.MessageEntityTypeBotCommand, Offset: 0, Length: len(word)}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, storetest.IgnoreStatementCache) }

func TestPrivateChatAnsweredWithQuote(t *testing.T) {
	f := newFixture(t)
	f.tg.Queue(token, private("old backlog")) // before the first connection: skipped
	a := f.agent(withToken(nil))
	f.start()
	f.waitConnected(a)
	u := private("hello")
	f.tg.Queue(token, u)
	connecttest.Eventually(t, "reply", func() bool { return len(f.tg.Sent(token)) == 1 })
	sent := f.tg.Sent(token)[0]
	if sent.Text != "re: hello" || sent.ReplyTo != u.Message.ID || sent.ChatID != "42" {
		t.Fatalf("sent %+v; want re: hello quoting %d", sent, u.Message.ID)
	}
	f.turner.mu.Lock()
	req := f.turner.reqs[0]
	f.turner.mu.Unlock()
	if req.Conv.UserID != "telegram:42" || req.Conv.RoomID != "" || req.Conv.Platform != "telegram" || req.AgentID != a.ID {
		t.Fatalf("turn request %+v", req)
	}
	connecttest.Eventually(t, "counters", func() bool { c := f.state(a); return c.MessagesIn == 1 && c.MessagesOut == 1 })
	if c := f.state(a); c.BotID != "123" || c.BotUsername != botName {
		t.Fatalf("connection %+v", c)
	}
}

func TestGroupRules(t *testing.T) {
	f := newFixture(t)
	a := f.agent(withToken(map[string]any{"telegram": map[string]any{"adminUsers": []string{"boss"}}}))
	f.start()
	f.waitConnected(a)
	mention := "hi @ada_bot"
	// "é" is two UTF-8 bytes but one UTF-16 unit: offsets are in UTF-16.
	accented := "é @ada_bot"
	ignored := []models.Update{
		group("just chatting", alice),
		group("hi @other_bot", alice, models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 3, Length: 10}),
		group("/help@other_bot", alice, command("/help@other_bot")),
		group("hi @ada_bot", &models.User{ID: 9, IsBot: true, Username: "spam_bot"}, models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 3, Length: 8}),
		group("/reset", alice, command("/reset")), // answered, but refused: alice is no admin
	}
	answered := []models.Update{
		group(mention, alice, models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 3, Length: 8}),
		group(accented, alice, models.MessageEntity{Type: models.MessageEntityTypeMention, Offset: 2, Length: 8}),
		group("/help", alice, command("/help")),
		group("/ask@ada_bot what now", alice, command("/ask@ada_bot")),
	}
	reply := group("go on", alice)
	reply.Message.ReplyToMessage = &models.Message{ID: 1, From: &models.User{ID: botID, IsBot: true}}
	answered = append(answered, reply)
	for _, u := range append(ignored, answered...) {
		f.tg.Queue(token, u)
	}
	connecttest.Eventually(t, "replies", func() bool { return len(f.tg.Sent(token)) == len(answered)+1 })
	texts := map[int]string{}
	for _, s := range f.tg.Sent(token) {
		texts[s.ReplyTo] = s.Text
	}
	want := map[int]string{
		ignored[4].Message.ID:  "Only the bot's admins can reset a group's conversation.",
		answered[0].Message.ID: "re: " + mention,
		answered[1].Message.ID: "re: " + accented,
		answered[3].Message.ID: "re: what now",
		answered[4].Message.ID: "re: go on",
	}
	for id, text := range want {
		if texts[id] != text || text == "" {
			t.Errorf("reply to %d = %q; want %q", id, texts[id], text)
		}
	}
	if !strings.HasPrefix(texts[answered[2].Message.ID], "Talk to me") {
		t.Errorf("/help answered %q", texts[answered[2].Message.ID])
	}
	f.turner.mu.Lock()
	defer f.turner.mu.Unlock()
	if r := f.turner.reqs[0]; r.Conv.RoomID != "telegram:-100" || r.UserID != "telegram:42" || r.Channel != "Friends" {
		t.Errorf("group turn %+v", r)
	}
}

func TestGroupIDsAndAdminReset(t *testing.T) {
	f := newFixture(t)
	a := f.agent(withToken(map[string]any{"telegram": map[string]any{"groupIds": []string{"@friends"}, "adminUsers": []string{"@Boss"}}}))
	f.start()
	f.waitConnected(a)
	other := group("/help", alice, command("/help"))
	other.Message.Chat = models.Chat{ID: -200, Type: models.ChatTypeGroup, Title: "Strangers"}
	f.tg.Queue(token, other)
	reset := group("/reset", &models.User{ID: 7, Username: "boss"}, command("/reset"))
	f.tg.Queue(token, reset)
	connecttest.Eventually(t, "reset reply", func() bool { return len(f.tg.Sent(token)) == 1 })
	if s := f.tg.Sent(token)[0]; s.ReplyTo != reset.Message.ID || s.Text != "I have forgotten our conversation." {
		t.Fatalf("sent %+v", s)
	}
}

func TestDuplicateAnsweredOnceAndLongRepliesSplit(t *testing.T) {
	f := newFixture(t)
	f.turner.reply = strings.Repeat("a", 4000) + " " + strings.Repeat("b", 200)
	a := f.agent(withToken(nil))
	f.start()
	f.waitConnected(a)
	u := private("tell me everything")
	f.tg.Queue(token, u)
	connecttest.Eventually(t, "two parts", func() bool { return len(f.tg.Sent(token)) == 2 })
	f.tg.QueueAgain(token, models.Update{ID: 99, Message: u.Message}) // same message, delivered again
	// Numbered after the duplicate: the server forgets updates below the
	// offset its poller confirmed.
	later := private("next")
	later.ID = 100
	f.tg.QueueAgain(token, later)
	connecttest.Eventually(t, "next reply", func() bool { return len(f.tg.Sent(token)) == 4 })
	sent := f.tg.Sent(token)
	if sent[0].ReplyTo != u.Message.ID || sent[1].ReplyTo != 0 || len(sent[0].Text) != 4001 || sent[1].Text != strings.Repeat("b", 200) {
		t.Fatalf("parts: %d chars quoting %d, then %q quoting %d", len(sent[0].Text), sent[0].ReplyTo, sent[1].Text, sent[1].ReplyTo)
	}
	if sent[2].ReplyTo != later.Message.ID {
		t.Fatalf("the duplicate was answered: %+v", sent[2])
	}
}

func TestStopsWhenInactiveRemovedOrDeleted(t *testing.T) {
	f := newFixture(t)
	f.start()
	ctx := context.Background()
	inactive := store.StatusInactive
	active := store.StatusActive
	stops := map[string]func(a store.Agent){
		"inactive": func(a store.Agent) {
			_, _, err := f.st.UpdateAgent(ctx, f.acct.ID, a.ID, nil, &inactive)
			mustOK(t, err)
		},
		"removed": func(a store.Agent) {
			_, _, err := f.st.UpdateAgent(ctx, f.acct.ID, a.ID, map[string]json.RawMessage{"clients": json.RawMessage(`[]`)}, &active)
			mustOK(t, err)
		},
		"deleted": func(a store.Agent) {
			_, err := f.st.DeleteAgent(ctx, f.acct.ID, a.ID)
			mustOK(t, err)
		},
	}
	for _, name := range []string{"inactive", "removed", "deleted"} {
		a := f.agent(withToken(nil))
		f.waitConnected(a)
		stops[name](a)
		connecttest.Eventually(t, name+" stops polling", func() bool { return f.tg.Polling(token) == 0 })
		if name == "inactive" {
			if c := f.state(a); c.State != store.ConnDisconnected || c.Reason != "the agent is inactive" {
				t.Fatalf("inactive agent's connection: %+v", c)
			}
		}
		_, err := f.st.DeleteAgent(ctx, f.acct.ID, a.ID)
		if err != nil && name != "deleted" {
			t.Fatal(err)
		}
	}
}

func TestTokenChangesMissingAndRejected(t *testing.T) {
	f := newFixture(t)
	a := f.agent(map[string]any{})
	f.start()
	connecttest.Eventually(t, "disabled", func() bool {
		c := f.state(a)
		return c.State == store.ConnDisabled && strings.Contains(c.Reason, telegram.TokenVar)
	})
	// A connection that cannot run holds no lease, so a fleet of agents
	// without credentials costs the database no renewals: another replica
	// could take it at once.
	connecttest.Eventually(t, "the lease released", func() bool {
		l, ok, err := f.st.AcquireLease(context.Background(), a.ID, "telegram", "replica-probe", time.Second)
		if ok {
			c := f.state(a)
			mustOK(t, f.st.ReleaseLease(context.Background(), l, c.State, c.Reason))
		}
		return err == nil && ok
	})
	setToken := func(tok string) {
		_, _, err := f.st.UpdateAgent(context.Background(), f.acct.ID, a.ID,
			map[string]json.RawMessage{"settings": mustJSON(map[string]any{"secrets": map[string]any{telegram.TokenVar: tok}})}, nil)
		mustOK(t, err)
	}
	setToken("999:unknown") // the test server answers 401 for it
	connecttest.Eventually(t, "error", func() bool {
		c := f.state(a)
		return c.State == store.ConnError && strings.Contains(c.Reason, "401")
	})
	setToken(token)
	f.waitConnected(a)
}

func TestTooManyRequestsHonoured(t *testing.T) {
	f := newFixture(t)
	a := f.agent(withToken(nil))
	f.start()
	f.waitConnected(a)
	f.tg.Fail(token, "sendMessage", 429, 1)
	start := time.Now()
	f.tg.Queue(token, private("hi"))
	connecttest.Eventually(t, "reply after retry_after", func() bool { return len(f.tg.Sent(token)) == 1 })
	if time.Since(start) < time.Second {
		t.Fatalf("the reply was retried before retry_after")
	}
}

// pollFailures returns the failed polls the session logged: each one's
// error text and the wait it chose.
func (f *fixture) pollFailures() (errs []string, waits []time.Duration) {
	for _, r := range f.logs.Records("telegram poll failed; waiting") {
		errs = append(errs, r.Attrs["error"].String())
		waits = append(waits, r.Attrs["wait"].Duration())
	}
	return errs, waits
}

// calls counts the bot's requests of method.
func (f *fixture) calls(method string) int {
	n := 0
	for _, c := range f.tg.Calls(token) {
		if c.Method == method {
			n++
		}
	}
	return n
}

// failPollAndRecover makes the next polls fail with status (and
// retryAfter), checks that the session waits them out by itself (no
// reconnection: getMe is called once) and answers what comes after; it
// returns the waits the session chose.
func failPollAndRecover(t *testing.T, status, retryAfter, times int) []time.Duration {
	f := newFixture(t)
	f.logs = connecttest.NewLogs()
	a := f.agent(withToken(nil))
	f.start()
	f.waitConnected(a)
	for range times {
		f.tg.Fail(token, "getUpdates", status, retryAfter)
	}
	f.tg.Queue(token, private("one")) // ends the held poll: the next ones fail
	connecttest.Eventually(t, "the failed polls waited out", func() bool { errs, _ := f.pollFailures(); return len(errs) == times })
	f.tg.Queue(token, private("two"))
	connecttest.Eventually(t, "both replies", func() bool { return len(f.tg.Sent(token)) == 2 })
	errs, waits := f.pollFailures()
	for _, e := range errs {
		if !strings.Contains(e, strconv.Itoa(status)) {
			t.Errorf("poll failure logged as %q; want %d", e, status)
		}
	}
	if n := f.calls("getMe"); n != 1 {
		t.Errorf("getMe called %d times: the connection was restarted instead of waiting", n)
	}
	if c := f.state(a); c.State != store.ConnConnected {
		t.Errorf("connection %+v; want connected", c)
	}
	return waits
}

// A 409 means another getUpdates is running (another poller of the bot,
// or a restarted runner's request still held): the session backs off,
// longer each time, and polls again.
func TestConflictOnGetUpdatesBacksOffAndRecovers(t *testing.T) {
	waits := failPollAndRecover(t, 409, 0, 3)
	if len(waits) != 3 || waits[0] <= 0 || waits[1] <= waits[0] || waits[2] <= waits[1] {
		t.Fatalf("waits after 409s: %v; want growing ones", waits)
	}
}

func TestTooManyRequestsOnGetUpdatesWaitsRetryAfter(t *testing.T) {
	if waits := failPollAndRecover(t, 429, 1, 1); len(waits) != 1 || waits[0] != time.Second {
		t.Fatalf("waits after a 429 with retry_after 1: %v; want [1s]", waits)
	}
}

// A connection answers a bounded number of messages at once; the rest are
// dropped, logged and counted, not queued without end.
func TestQueueOverflowDroppedLoggedAndCounted(t *testing.T) {
	f := newFixture(t)
	f.queueSize, f.reg, f.logs = 2, prometheus.NewRegistry(), connecttest.NewLogs()
	f.turner.block = make(chan struct{})
	a := f.agent(withToken(nil))
	f.start()
	f.waitConnected(a)
	// The first turn blocks, the second waits behind it: the third finds
	// the queue full.
	one, two := private("one"), private("two")
	for _, u := range []models.Update{one, two, private("three")} {
		f.tg.Queue(token, u)
	}
	connecttest.Eventually(t, "a message dropped", func() bool { return connecttest.Dropped(t, f.reg, "telegram") == 1 })
	if n := len(f.logs.Records("connection queue full: message dropped")); n != 1 {
		t.Fatalf("%d drops logged; want 1", n)
	}
	close(f.turner.block)
	connecttest.Eventually(t, "the queued replies", func() bool { return len(f.tg.Sent(token)) == 2 })
	var quoted []int
	for _, s := range f.tg.Sent(token) {
		quoted = append(quoted, s.ReplyTo)
	}
	if want := []int{one.Message.ID, two.Message.ID}; !slices.Equal(quoted, want) {
		t.Fatalf("replies quote %v; want %v", quoted, want)
	}
	// A dropped message is never turned: the two accepted ones were.
	f.turner.mu.Lock()
	turned := len(f.turner.reqs)
	f.turner.mu.Unlock()
	if turned != 2 {
		t.Fatalf("%d turns; want 2", turned)
	}
	if n := connecttest.Dropped(t, f.reg, "telegram"); n != 1 {
		t.Fatalf("dropped counter %v; want 1", n)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func TestFailoverOnPostgres(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	dsn := storetest.PostgresDSN(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, dsn)
		mustOK(t, err)
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	stA, stB := open(), open()
	acct, err := stB.CreateAccount(ctx, store.Account{Name: "acme", Tier: store.TierStandard})
	mustOK(t, err)
	f.st, f.acct = stB, acct
	a := f.agent(withToken(nil))

	stopA, doneA := f.run(stA, "replica-a")
	f.waitConnected(a)
	stopB, doneB := f.run(stB, "replica-b")
	t.Cleanup(func() { stopB(); <-doneB })
	f.tg.Queue(token, private("one"))
	connecttest.Eventually(t, "first reply", func() bool { return len(f.tg.Sent(token)) == 1 })
	if n := f.tg.Polling(token); n != 1 {
		t.Fatalf("%d pollers; want exactly one", n)
	}

	// Kill replica-a: its database goes away with it, so its lease is
	// never released and must expire.
	_ = stA.Close()
	stopA()
	<-doneA
	f.tg.Queue(token, private("two"))
	connecttest.Eventually(t, "replica-b answers", func() bool { return len(f.tg.Sent(token)) == 2 })
	f.tg.Queue(token, private("three"))
	connecttest.Eventually(t, "third reply", func() bool { return len(f.tg.Sent(token)) == 3 })
	sent := f.tg.Sent(token)
	if sent[0].Text != "re: one" || sent[1].Text != "re: two" || sent[2].Text != "re: three" {
		t.Fatalf("sent after failover: %+v", sent)
	}
}
