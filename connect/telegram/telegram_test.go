package telegram_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/telegram"
	"github.com/agentd/agentd/connect/telegram/telegramtest"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/connecttest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store/storetest"
	"github.com/go-telegram/bot/models"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

const (
	token   = "123:abc"
	botID   = 123
	botName = "ada_bot"
)

type fixture struct {
	*connecttest.Fixture
	tg   *telegramtest.Server
	logs *testutil.Logs // the supervisors' logs, when a test sets it
}

// newFixture runs supervisors against a fresh test server holding the bot
// token.
func newFixture(t *testing.T) *fixture {
	tg := telegramtest.New(t)
	tg.AddBot(token, botID, botName)
	f := &fixture{tg: tg, Fixture: connecttest.NewFixture(t, "telegram", func() connect.Platform {
		return &telegram.Platform{APIURL: tg.URL, PollTimeout: 2 * time.Second}
	})}
	f.Live = func() error {
		if tg.Polling(token) == 0 {
			return errors.New("the bot is not polled")
		}
		return nil
	}
	return f
}

// keepLogs makes the supervisors log to f.logs.
func (f *fixture) keepLogs() {
	f.logs = testutil.NewLogs()
	f.Config.Logger = slog.New(f.logs)
}

func withToken(extra map[string]any) map[string]any {
	s := map[string]any{"secrets": map[string]any{telegram.TokenVar: token}}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// sent is a check that the bot sent n messages.
func (f *fixture) sent(n int) func() error {
	return func() error { return testutil.Equal("messages sent", len(f.tg.Sent(token)), n) }
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
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	u := private("hello")
	f.tg.Queue(token, u)
	testutil.Eventually(t, "reply", f.sent(1))
	sent := f.tg.Sent(token)[0]
	if sent.Text != "re: hello" || sent.ReplyTo != u.Message.ID || sent.ChatID != "42" {
		t.Fatalf("sent %+v; want re: hello quoting %d", sent, u.Message.ID)
	}
	req := f.Turner.Requests()[0]
	if req.Conv.UserID != "telegram:42" || req.Conv.RoomID != "" || req.Conv.Platform != "telegram" || req.AgentID != a.ID {
		t.Fatalf("turn request %+v", req)
	}
	testutil.Eventually(t, "counters", f.Counted(a, 1, 1))
	if c := f.State(a); c.BotID != "123" || c.BotUsername != botName {
		t.Fatalf("connection %+v", c)
	}
}

func TestGroupRules(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(map[string]any{"telegram": map[string]any{"adminUsers": []string{"boss"}}}))
	f.Start()
	f.WaitConnected(a)
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
	testutil.Eventually(t, "replies", f.sent(len(answered)+1))
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
	if r := f.Turner.Requests()[0]; r.Conv.RoomID != "telegram:-100" || r.UserID != "telegram:42" || r.Channel != "Friends" {
		t.Errorf("group turn %+v", r)
	}
}

func TestGroupIDsAndAdminReset(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(map[string]any{"telegram": map[string]any{"groupIds": []string{"@friends"}, "adminUsers": []string{"@Boss"}}}))
	f.Start()
	f.WaitConnected(a)
	other := group("/help", alice, command("/help"))
	other.Message.Chat = models.Chat{ID: -200, Type: models.ChatTypeGroup, Title: "Strangers"}
	f.tg.Queue(token, other)
	reset := group("/reset", &models.User{ID: 7, Username: "boss"}, command("/reset"))
	f.tg.Queue(token, reset)
	testutil.Eventually(t, "reset reply", f.sent(1))
	if s := f.tg.Sent(token)[0]; s.ReplyTo != reset.Message.ID || s.Text != "I have forgotten our conversation." {
		t.Fatalf("sent %+v", s)
	}
}

func TestDuplicateAnsweredOnceAndLongRepliesSplit(t *testing.T) {
	f := newFixture(t)
	f.Turner.Text = strings.Repeat("a", 4000) + " " + strings.Repeat("b", 200)
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	u := private("tell me everything")
	f.tg.Queue(token, u)
	testutil.Eventually(t, "two parts", f.sent(2))
	f.tg.QueueAgain(token, models.Update{ID: 99, Message: u.Message}) // same message, delivered again
	// Numbered after the duplicate: the server forgets updates below the
	// offset its poller confirmed.
	later := private("next")
	later.ID = 100
	f.tg.QueueAgain(token, later)
	testutil.Eventually(t, "next reply", f.sent(4))
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
	f.Start()
	ctx := context.Background()
	inactive := domain.StatusInactive
	active := domain.StatusActive
	stops := map[string]func(a domain.Agent){
		"inactive": func(a domain.Agent) {
			_, _, err := f.Store.Agents().UpdateAgent(ctx, f.Account.ID, a.ID, nil, &inactive, domain.AnyVersion)
			testutil.OK(t, err)
		},
		"removed": func(a domain.Agent) {
			_, _, err := f.Store.Agents().UpdateAgent(ctx, f.Account.ID, a.ID, map[string]json.RawMessage{"clients": json.RawMessage(`[]`)}, &active, domain.AnyVersion)
			testutil.OK(t, err)
		},
		"deleted": func(a domain.Agent) {
			_, err := f.Store.Agents().DeleteAgent(ctx, f.Account.ID, a.ID, domain.AnyVersion)
			testutil.OK(t, err)
		},
	}
	for _, name := range []string{"inactive", "removed", "deleted"} {
		a := f.Agent(withToken(nil))
		f.WaitConnected(a)
		stops[name](a)
		testutil.Eventually(t, name+" stops polling", func() error { return testutil.Equal("pollers", f.tg.Polling(token), 0) })
		if name == "inactive" {
			// The runner records why it stopped after it stops polling.
			testutil.Eventually(t, "the inactive agent's connection state", func() error {
				if c := f.State(a); c.State != domain.ConnDisconnected || c.Reason != "the agent is inactive" {
					return fmt.Errorf("connection %+v", c)
				}
				return nil
			})
		}
		_, err := f.Store.Agents().DeleteAgent(ctx, f.Account.ID, a.ID, domain.AnyVersion)
		if err != nil && name != "deleted" {
			t.Fatal(err)
		}
	}
}

func TestTokenChangesMissingAndRejected(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(map[string]any{})
	f.Start()
	testutil.Eventually(t, "disabled", f.InState(a, domain.ConnDisabled, telegram.TokenVar))
	// A connection that cannot run holds no lease, so a fleet of agents
	// without credentials costs the database no renewals: another replica
	// could take it at once.
	testutil.Eventually(t, "the lease released", func() error {
		l, ok, err := f.Store.Connections().AcquireLease(context.Background(), a.ID, "telegram", "replica-probe", time.Second)
		if ok {
			c := f.State(a)
			testutil.OK(t, f.Store.Connections().ReleaseLease(context.Background(), l, c.State, c.Reason))
		}
		if err == nil && !ok {
			return errors.New("the lease is still held")
		}
		return err
	})
	setToken := func(tok string) {
		_, _, err := f.Store.Agents().UpdateAgent(context.Background(), f.Account.ID, a.ID, map[string]json.RawMessage{"settings": connecttest.JSON(map[string]any{"secrets": map[string]any{telegram.TokenVar: tok}})}, nil, domain.AnyVersion)

		testutil.OK(t, err)
	}
	setToken("999:unknown") // the test server answers 401 for it
	testutil.Eventually(t, "error", f.InState(a, domain.ConnError, "401"))
	setToken(token)
	f.WaitConnected(a)
}

// TestTokenOfAnotherBotStartsAfresh: update ids are per bot, so when the
// token changes to another bot's, that bot starts as on a first
// connection: its backlog is skipped and its first new message answered,
// not taken as already seen below the old bot's cursor.
func TestTokenOfAnotherBotStartsAfresh(t *testing.T) {
	f := newFixture(t)
	const token2 = "456:def"
	f.tg.AddBot(token2, 456, "other_bot")
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	for range 5 { // the first bot's update ids reach 5
		f.tg.Queue(token, private("warm up"))
	}
	testutil.Eventually(t, "five replies", f.sent(5))
	f.tg.Queue(token2, private("backlog of the new bot"))
	_, _, err := f.Store.Agents().UpdateAgent(context.Background(), f.Account.ID, a.ID, map[string]json.RawMessage{"settings": connecttest.JSON(map[string]any{"secrets": map[string]any{telegram.TokenVar: token2}})}, nil, domain.AnyVersion)

	testutil.OK(t, err)
	testutil.Eventually(t, "the new bot polled", func() error {
		if f.tg.Polling(token2) == 0 {
			return errors.New("not polled")
		}
		return nil
	})
	f.tg.Queue(token2, private("hello new bot"))
	testutil.Eventually(t, "the new bot's message answered", func() error {
		return testutil.Equal("messages sent by the new bot", len(f.tg.Sent(token2)), 1)
	})
	if got := f.tg.Sent(token2)[0].Text; !strings.Contains(got, "hello new bot") {
		t.Errorf("the new bot answered %q, want the message after the token change", got)
	}
}

func TestTooManyRequestsHonoured(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.Fail(token, "sendMessage", 429, 1)
	start := time.Now()
	f.tg.Queue(token, private("hi"))
	testutil.Eventually(t, "reply after retry_after", f.sent(1))
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
	f.keepLogs()
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	for range times {
		f.tg.Fail(token, "getUpdates", status, retryAfter)
	}
	f.tg.Queue(token, private("one")) // ends the held poll: the next ones fail
	testutil.Eventually(t, "the failed polls waited out", func() error {
		errs, _ := f.pollFailures()
		return testutil.Equal("failed polls", len(errs), times)
	})
	f.tg.Queue(token, private("two"))
	testutil.Eventually(t, "both replies", f.sent(2))
	errs, waits := f.pollFailures()
	for _, e := range errs {
		if !strings.Contains(e, strconv.Itoa(status)) {
			t.Errorf("poll failure logged as %q; want %d", e, status)
		}
	}
	if n := f.calls("getMe"); n != 1 {
		t.Errorf("getMe called %d times: the connection was restarted instead of waiting", n)
	}
	if c := f.State(a); c.State != domain.ConnConnected {
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

// A connection answers a bounded number of messages at once; while it is
// full it stops polling, so the rest wait with Telegram, and every message
// is answered in the end, in order. None is dropped.
func TestBusyConnectionStopsPollingAndDropsNothing(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.Config.QueueSize, f.Config.Registerer = 2, reg
	f.Turner.Block = make(chan struct{})
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	one, two, three := private("one"), private("two"), private("three")
	f.tg.Queue(token, one)
	f.tg.Queue(token, two)
	testutil.Eventually(t, "polling stopped while full", func() error { return testutil.Equal("polls in flight", f.tg.Polling(token), 0) })
	f.tg.Queue(token, three)
	time.Sleep(100 * time.Millisecond)
	if n := f.tg.Polling(token); n != 0 {
		t.Fatalf("%d polls in flight with the queue full; want none", n)
	}
	close(f.Turner.Block)
	testutil.Eventually(t, "every reply", f.sent(3))
	var quoted []int
	for _, s := range f.tg.Sent(token) {
		quoted = append(quoted, s.ReplyTo)
	}
	if want := []int{one.Message.ID, two.Message.ID, three.Message.ID}; !slices.Equal(quoted, want) {
		t.Fatalf("replies quote %v; want %v", quoted, want)
	}
	if n := connecttest.Dropped(t, reg, "telegram", connect.DropNotAnswering); n != 0 {
		t.Fatalf("dropped counter %v; want 0", n)
	}
}

// A message whose answer is in progress when the service stops (a rolling
// deploy) is answered: the stopping runner keeps its lease while the turn
// finishes, within DrainTimeout.
func TestMessageInFlightAtStopIsFinished(t *testing.T) {
	f := newFixture(t)
	f.Turner.Block = make(chan struct{})
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.Queue(token, private("in flight at deploy"))
	testutil.Eventually(t, "the turn started", f.Counted(a, 1, 0))
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.Stop() }()
	time.Sleep(50 * time.Millisecond)
	close(f.Turner.Block) // the turn ends while the runner drains
	<-stopped
	if sent := f.tg.Sent(token); len(sent) != 1 || sent[0].Text != "re: in flight at deploy" {
		t.Fatalf("sent %+v; want the reply of the message in flight", sent)
	}
}

// A message whose turn cannot finish before the drain's deadline stays in
// the inbox, and the next runner (after a restart) answers it, once.
func TestMessageCutShortAtStopIsAnsweredAfterRestart(t *testing.T) {
	f := newFixture(t)
	f.Config.DrainTimeout = 50 * time.Millisecond
	f.Turner.Block = make(chan struct{})
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.Queue(token, private("in flight at deploy"))
	testutil.Eventually(t, "the turn started", f.Counted(a, 1, 0))
	f.Stop()
	if sent := f.tg.Sent(token); len(sent) != 0 {
		t.Fatalf("sent %+v before the restart", sent)
	}
	close(f.Turner.Block)
	f.Start()
	testutil.Eventually(t, "the reply after the restart", f.sent(1))
	f.tg.Queue(token, private("after deploy"))
	testutil.Eventually(t, "the next reply", f.sent(2))
	if sent := f.tg.Sent(token); sent[0].Text != "re: in flight at deploy" || sent[1].Text != "re: after deploy" {
		t.Fatalf("sent %+v; want the message cut short, then the next, each once", sent)
	}
}

// allowedUsers keeps strangers out of private chats, and userRateLimit
// answers nothing past its count a minute; each refusal is counted.
// A message whose run a spent budget refused gets no answer and is
// counted dropped with reason budget.
func TestSpentBudgetDropsTheMessage(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.Config.Registerer = reg
	f.Turner.Err = &domain.BudgetExceededError{Budget: domain.BudgetState{Scope: domain.ScopeAgent, Period: domain.PeriodDay,
		LimitMicros: 1_000_000, SpentMicros: 1_000_500}}
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.Queue(token, private("hello"))
	testutil.Eventually(t, "the message dropped", func() error {
		return testutil.Equal("dropped for budget", connecttest.Dropped(t, reg, "telegram", connect.DropBudget), 1)
	})
	if sent := f.tg.Sent(token); len(sent) != 0 {
		t.Fatalf("sent %+v; want nothing", sent)
	}
}

func TestWhoMayTalkAndHowOften(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.Config.Registerer = reg
	a := f.Agent(withToken(map[string]any{"telegram": map[string]any{"allowedUsers": []string{"@Alice"}, "userRateLimit": 2}}))
	f.Start()
	f.WaitConnected(a)
	stranger := private("who are you")
	stranger.Message.From = &models.User{ID: 77, Username: "mallory"}
	stranger.Message.Chat.ID = 77
	f.tg.Queue(token, stranger)
	testutil.Eventually(t, "the stranger refused", func() error {
		return testutil.Equal("not allowed", connecttest.Dropped(t, reg, "telegram", "not_allowed"), 1)
	})
	for _, text := range []string{"one", "two", "three"} {
		f.tg.Queue(token, private(text))
	}
	testutil.Eventually(t, "the third message refused", func() error {
		return testutil.Equal("rate limited", connecttest.Dropped(t, reg, "telegram", "rate_limited"), 1)
	})
	testutil.Eventually(t, "two replies", f.sent(2))
	if sent := f.tg.Sent(token); sent[0].Text != "re: one" || sent[1].Text != "re: two" {
		t.Fatalf("sent %+v; want the first two of alice's", sent)
	}
	if n := len(f.Turner.Requests()); n != 2 {
		t.Fatalf("%d turns; want 2: refused messages cost nothing", n)
	}
}

func TestFailoverOnPostgres(t *testing.T) {
	f := newFixture(t)
	dsn := storetest.PostgresDSN(t)
	stA, stB := storetest.Open(t, dsn), storetest.Open(t, dsn)
	f.Store, f.Account = stB, storetest.Account(t, stB, "acme")
	a := f.Agent(withToken(nil))

	stopA := f.Run(stA, "replica-a")
	f.WaitConnected(a)
	f.Run(stB, "replica-b")
	f.tg.Queue(token, private("one"))
	testutil.Eventually(t, "first reply", f.sent(1))
	if n := f.tg.Polling(token); n != 1 {
		t.Fatalf("%d pollers; want exactly one", n)
	}

	// Kill replica-a: its database goes away with it, so its lease is
	// never released and must expire.
	_ = stA.Close()
	stopA()
	f.tg.Queue(token, private("two"))
	testutil.Eventually(t, "replica-b answers", f.sent(2))
	f.tg.Queue(token, private("three"))
	testutil.Eventually(t, "third reply", f.sent(3))
	sent := f.tg.Sent(token)
	if sent[0].Text != "re: one" || sent[1].Text != "re: two" || sent[2].Text != "re: three" {
		t.Fatalf("sent after failover: %+v", sent)
	}
}

// TestStateSaysWhatPollingDoes: a webhook set on the bot by another host
// makes polls fail with 409: the connection is in error with a reason that
// names the webhook's host and how to remove it, never connected, and
// agentd does not remove it; once removed, the connection is connected
// again and answers. Another failing poll shows connecting while it is
// retried.
func TestStateSaysWhatPollingDoes(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.SetWebhook(token, "https://hooks.other.example/telegram/s3cret-path")
	f.tg.Queue(token, private("ends the held poll"))
	testutil.Eventually(t, "error naming the webhook", f.InState(a, domain.ConnError, "webhook", "hooks.other.example", "deleteWebhook"))
	if c := f.State(a); strings.Contains(c.Reason, "s3cret") {
		t.Errorf("the reason shows the webhook's path: %q", c.Reason)
	}
	if f.calls("deleteWebhook") != 0 {
		t.Error("agentd removed the webhook")
	}
	f.tg.SetWebhook(token, "")
	testutil.Eventually(t, "connected again", f.InState(a, domain.ConnConnected))
	f.tg.Queue(token, private("after the webhook"))
	testutil.Eventually(t, "answered", func() error {
		for _, s := range f.tg.Sent(token) {
			if strings.Contains(s.Text, "after the webhook") {
				return nil
			}
		}
		return errors.New("not yet")
	})

	f.tg.Fail(token, "getUpdates", http.StatusInternalServerError, 0)
	f.tg.Fail(token, "getUpdates", http.StatusInternalServerError, 0)
	f.tg.Queue(token, private("ends the held poll again"))
	testutil.Eventually(t, "connecting while polls fail", f.InState(a, domain.ConnConnecting, "500"))
	testutil.Eventually(t, "connected once they work", f.InState(a, domain.ConnConnected))
}

// TestWebhookFromTheStartIsTheBotsFault: a webhook set on the bot before
// its first connection makes every poll a 409 from the start. That is how
// the bot is configured, not an outage: the connection stays where it is
// (never reconnected, so never handed to the other replica), in error with
// a reason naming the webhook, and emits one change to error, not a
// flapping series. Once the webhook is removed it connects and answers.
func TestWebhookFromTheStartIsTheBotsFault(t *testing.T) {
	f := newFixture(t)
	changes := f.Changes()
	f.tg.SetWebhook(token, "https://hooks.other.example/telegram/s3cret-path")
	a := f.Agent(withToken(nil))
	f.Start()
	f.Run(nil, "replica-b")
	testutil.Eventually(t, "error naming the webhook", f.InState(a, domain.ConnError, "webhook", "hooks.other.example", "deleteWebhook"))
	time.Sleep(3 * time.Second) // many times the fixture's lease, back-off and give-up times
	got := changes()
	if n := len(got); n == 0 || !strings.HasPrefix(got[n-1], "error: ") ||
		slices.ContainsFunc(got[:n-1], func(c string) bool { return !strings.HasPrefix(c, "connecting: ") }) {
		t.Errorf("connection.changed: %q; want it connecting, then in error once", got)
	}
	if n := f.calls("getMe"); n != 1 {
		t.Errorf("getMe called %d times: the connection was restarted or moved", n)
	}
	f.tg.SetWebhook(token, "")
	f.WaitConnected(a)
	f.tg.Queue(token, private("after the webhook"))
	testutil.Eventually(t, "answered", f.sent(1))
}

// TestTypingWhileTheTurnWorks: while a turn works the chat shows the bot
// typing, renewed before Telegram's indicator (about 5 s) fades, and no
// longer once the reply is sent.
func TestTypingWhileTheTurnWorks(t *testing.T) {
	f := newFixture(t)
	f.Turner.Block = make(chan struct{})
	a := f.Agent(withToken(nil))
	f.Start()
	f.WaitConnected(a)
	f.tg.Queue(token, private("think hard"))
	typing := func() (n int) {
		for _, c := range f.tg.Calls(token) {
			if c.Method == "sendChatAction" && c.Params["action"] == "typing" && c.Params["chat_id"] == "42" {
				n++
			}
		}
		return n
	}
	testutil.Eventually(t, "typing, then typing again", func() error { return testutil.Equal("typing actions", min(typing(), 2), 2) })
	close(f.Turner.Block)
	testutil.Eventually(t, "reply", f.sent(1))
	shown := typing()
	time.Sleep(5 * time.Second)
	if n := typing(); n != shown {
		t.Errorf("typing shown %d more times after the reply", n-shown)
	}
}
