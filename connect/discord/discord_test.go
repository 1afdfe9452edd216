package discord_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/connecttest"
	"github.com/agentd/agentd/connect/discord"
	"github.com/agentd/agentd/connect/discord/discordtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
	"github.com/bwmarrin/discordgo"
	"go.uber.org/goleak"
)

const (
	token   = "MTIz.bot.token"
	botID   = "123"
	botName = "ada"
	guild   = "900"
)

// echoTurner answers every message with "re: <text>", or with reply when set.
type echoTurner struct {
	mu    sync.Mutex
	reqs  []turn.Input
	reply string
}

func (e *echoTurner) Reply(_ context.Context, r turn.Input) (turn.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqs = append(e.reqs, r)
	if e.reply != "" {
		return turn.Result{Text: e.reply}, nil
	}
	return turn.Result{Text: "re: " + r.Text}, nil
}

func (e *echoTurner) requests() []turn.Input {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]turn.Input(nil), e.reqs...)
}

type fixture struct {
	t      *testing.T
	st     *store.Store
	dc     *discordtest.Server
	turner *echoTurner
	acct   store.Account
}

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
	f := &fixture{t: t, st: st, dc: discordtest.New(t), turner: &echoTurner{}, acct: acct}
	f.dc.AddBot(token, botID, botName, true)
	f.dc.AddChannel(guild, "111", "ops")
	f.dc.AddChannel(guild, "222", "general")
	f.dc.AddChannel(guild, "333", "off-topic")
	return f
}

// run runs a supervisor on st until the returned stop is called.
func (f *fixture) run(st *store.Store, owner string) (stop context.CancelFunc, done chan struct{}) {
	sup, err := connect.New(connect.Config{
		Store: st, Turner: f.turner, Owner: owner,
		Platforms: []connect.Platform{&discord.Platform{APIURL: f.dc.URL, IdentifyEvery: 50 * time.Millisecond}},
		// discordgo's Close waits a second for its close frame to reach
		// Discord, after the lease stopped being renewed: the lease must
		// outlast it for the release to store the final state.
		LeaseTTL: 3 * time.Second, RenewEvery: 200 * time.Millisecond, ChangeEvery: 100 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
	})
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
}

func (f *fixture) agent(settings map[string]any) store.Agent {
	doc := map[string]any{"name": "Ada", "clients": []string{"discord"}, "settings": settings}
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

// withToken returns settings with the bot token and, when given,
// settings.discord.
func withToken(tok string, discordSettings map[string]any) map[string]any {
	s := map[string]any{"secrets": map[string]any{discord.TokenVar: tok}}
	if discordSettings != nil {
		s["discord"] = discordSettings
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
	connecttest.Eventually(f.t, "connected", func() bool { return f.state(a).State == store.ConnConnected && f.dc.Connected(token) == 1 })
}

var alice = &discordgo.User{ID: "42", Username: "alice"}

// inGuild is a guild message by author in channel.
func (f *fixture) inGuild(channel, content string, author *discordgo.User) *discordgo.Message {
	return &discordgo.Message{ChannelID: channel, GuildID: guild, Content: content, Author: author, Mentions: f.dc.Mentions(content)}
}

func direct(content string) *discordgo.Message {
	return &discordgo.Message{ChannelID: "700", Content: content, Author: alice}
}

// replies returns the bot's sent messages by the message they reference.
func (f *fixture) replies() map[string]string {
	out := map[string]string{}
	for _, s := range f.dc.Sent(token) {
		out[s.ReplyTo] = s.Content
	}
	return out
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, storetest.IgnoreStatementCache) }

func TestMentionRulesDMsAndBots(t *testing.T) {
	f := newFixture(t)
	a := f.agent(withToken(token, nil))
	f.start()
	f.waitConnected(a)
	if ids := f.dc.Identifies(token); len(ids) != 1 || ids[0].Token != "Bot "+token || ids[0].Intents != discord.Intents {
		t.Fatalf("identifies %+v", ids)
	}
	replyToBot := f.inGuild("222", "go on", alice)
	replyToBot.Type = discordgo.MessageTypeReply
	replyToBot.ReferencedMessage = &discordgo.Message{ID: "1", Author: &discordgo.User{ID: botID, Bot: true}}
	answered := []*discordgo.Message{
		f.inGuild("222", "<@"+botID+"> hello", alice),
		replyToBot,
		direct("hi in private"),
	}
	ignored := []*discordgo.Message{
		f.inGuild("222", "just chatting", alice),
		f.inGuild("222", "<@"+botID+"> from a bot", &discordgo.User{ID: "9", Username: "spam", Bot: true}),
		f.inGuild("222", "<@"+botID+"> myself", &discordgo.User{ID: botID, Username: botName, Bot: true}),
	}
	for _, m := range append(ignored, answered...) {
		if f.dc.Dispatch(token, m) != 1 {
			t.Fatal("not dispatched")
		}
	}
	connecttest.Eventually(t, "replies", func() bool { return len(f.dc.Sent(token)) == len(answered) })
	got := f.replies()
	want := map[string]string{answered[0].ID: "re: @ada hello", answered[1].ID: "re: go on", answered[2].ID: "re: hi in private"}
	for id, text := range want {
		if got[id] != text {
			t.Errorf("reply to %s = %q; want %q (all: %v)", id, got[id], text, got)
		}
	}
	reqs := f.turner.requests()
	byText := map[string]turn.Input{}
	for _, r := range reqs {
		byText[r.Text] = r
	}
	if r := byText["@ada hello"]; r.Conv.RoomID != "discord:222" || r.UserID != "discord:42" || r.Conv.Platform != "discord" || r.Channel != "#general" || r.AgentID != a.ID {
		t.Errorf("guild turn %+v", r)
	}
	if r := byText["hi in private"]; r.Conv.UserID != "discord:42" || r.Conv.RoomID != "" {
		t.Errorf("direct turn %+v", r)
	}
	if typing := f.dc.Typing(token); !slices.Contains(typing, "222") || !slices.Contains(typing, "700") {
		t.Errorf("typing in %v", typing)
	}
	connecttest.Eventually(t, "counters", func() bool { c := f.state(a); return c.MessagesIn == 3 && c.MessagesOut == 3 })
	if c := f.state(a); c.BotID != botID || c.BotUsername != botName {
		t.Fatalf("connection %+v", c)
	}
}

func TestChannelsByIDAndNameWithoutMentions(t *testing.T) {
	f := newFixture(t)
	a := f.agent(withToken(token, map[string]any{"respondToMentions": false, "channels": []string{"111", "#General"}, "moderationEnabled": true}))
	f.start()
	f.waitConnected(a)
	byID := f.inGuild("111", "in ops", alice)
	byName := f.inGuild("222", "in general", alice)
	f.dc.Dispatch(token, f.inGuild("333", "<@"+botID+"> in off-topic", alice))
	f.dc.Dispatch(token, byID)
	f.dc.Dispatch(token, byName)
	connecttest.Eventually(t, "replies", func() bool { return len(f.dc.Sent(token)) >= 2 })
	// The channel filter runs in the channel's own line, which nothing
	// else waits for: give it time to (wrongly) answer.
	time.Sleep(300 * time.Millisecond)
	got := f.replies()
	if len(got) != 2 || got[byID.ID] != "re: in ops" || got[byName.ID] != "re: in general" {
		t.Fatalf("replies %v", got)
	}
}

func TestDMsOffAndEveryChannelWithoutList(t *testing.T) {
	f := newFixture(t)
	a := f.agent(withToken(token, map[string]any{"respondToDMs": false, "respondToMentions": false}))
	f.start()
	f.waitConnected(a)
	f.dc.Dispatch(token, direct("ignored"))
	last := f.inGuild("333", "anything", alice)
	f.dc.Dispatch(token, last)
	connecttest.Eventually(t, "guild reply", func() bool { return len(f.dc.Sent(token)) >= 1 })
	if got := f.replies(); len(got) != 1 || got[last.ID] != "re: anything" {
		t.Fatalf("replies %v", got)
	}
}

func TestLongReplySplitAndDuplicateAnsweredOnce(t *testing.T) {
	f := newFixture(t)
	f.turner.reply = strings.Repeat("a", 1900) + " " + strings.Repeat("é", 300)
	a := f.agent(withToken(token, nil))
	f.start()
	f.waitConnected(a)
	m := direct("tell me everything")
	f.dc.Dispatch(token, m)
	connecttest.Eventually(t, "two parts", func() bool { return len(f.dc.Sent(token)) == 2 })
	dup := *m
	f.dc.Dispatch(token, &dup) // the same message delivered again
	later := direct("next")
	f.dc.Dispatch(token, later)
	connecttest.Eventually(t, "next reply", func() bool { return len(f.dc.Sent(token)) == 4 })
	sent := f.dc.Sent(token)
	if sent[0].ReplyTo != m.ID || sent[1].ReplyTo != "" || sent[0].Content != strings.Repeat("a", 1900)+" " || sent[1].Content != strings.Repeat("é", 300) {
		t.Fatalf("parts: %d chars referencing %q, then %d chars referencing %q", len(sent[0].Content), sent[0].ReplyTo, len(sent[1].Content), sent[1].ReplyTo)
	}
	if sent[2].ReplyTo != later.ID {
		t.Fatalf("the duplicate was answered: %+v", sent[2])
	}
}

func TestRejectedTokenAndIntentsAreErrorsWithoutRetry(t *testing.T) {
	f := newFixture(t)
	const noContent = "no.content.token"
	f.dc.AddBot(noContent, "555", "mute", false)
	bad := f.agent(withToken("unknown.token", nil))
	intents := f.agent(withToken(noContent, nil))
	f.start()
	connecttest.Eventually(t, "errors", func() bool {
		return f.state(bad).State == store.ConnError && f.state(intents).State == store.ConnError
	})
	if r := f.state(bad).Reason; !strings.Contains(r, "4004") || !strings.Contains(r, "Developer Portal") {
		t.Errorf("4004 reason %q", r)
	}
	if r := f.state(intents).Reason; !strings.Contains(r, "4014") || !strings.Contains(r, "Message Content Intent") {
		t.Errorf("4014 reason %q", r)
	}
	// Many times the back-off (≤200ms) and the identify spacing (50ms):
	// a retry would have identified again by now.
	time.Sleep(time.Second)
	if n := len(f.dc.Identifies(noContent)); n != 1 {
		t.Fatalf("%d identifies after 4014; want 1", n)
	}
	if c := f.state(intents); c.State != store.ConnError {
		t.Fatalf("state after 4014: %+v", c)
	}
}

func TestDroppedSocketReconnectsWithEvents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, err := f.st.CreateWebhook(ctx, store.Webhook{AccountID: f.acct.ID, URL: "https://hooks.example.com/",
		Events: []string{string(store.EventConnectionChanged)}, Enabled: true})
	mustOK(t, err)
	deliveries := func() int {
		ds, total, err := f.st.ListDeliveries(ctx, f.acct.ID, w.ID, store.DeliveryQuery{})
		mustOK(t, err)
		for _, d := range ds {
			if d.Type != store.EventConnectionChanged {
				t.Fatalf("delivery of %s", d.Type)
			}
		}
		return int(total)
	}
	a := f.agent(withToken(token, nil))
	f.start()
	f.waitConnected(a)
	before := deliveries()
	if before < 1 { // connected (a new connection starts connecting)
		t.Fatalf("%d connection.changed events after connecting", before)
	}
	f.dc.Drop(token)
	connecttest.Eventually(t, "a second identify", func() bool { return len(f.dc.Identifies(token)) == 2 })
	f.waitConnected(a)
	if after := deliveries(); after < before+3 { // disconnected, connecting, connected
		t.Fatalf("connection.changed events: %d before the drop, %d after", before, after)
	}
	// A close with a code that is not fatal reconnects too.
	f.dc.CloseWith(token, 4000)
	connecttest.Eventually(t, "a third identify", func() bool { return len(f.dc.Identifies(token)) == 3 })
	f.waitConnected(a)
	m := direct("still there?")
	f.dc.Dispatch(token, m)
	connecttest.Eventually(t, "reply after reconnecting", func() bool { return f.replies()[m.ID] == "re: still there?" })
}

func TestStopsWhenInactiveOrDeleted(t *testing.T) {
	f := newFixture(t)
	f.start()
	ctx := context.Background()
	inactive := store.StatusInactive
	for _, name := range []string{"inactive", "deleted"} {
		a := f.agent(withToken(token, nil))
		f.waitConnected(a)
		if name == "inactive" {
			_, _, err := f.st.UpdateAgent(ctx, f.acct.ID, a.ID, nil, &inactive)
			mustOK(t, err)
		} else {
			_, err := f.st.DeleteAgent(ctx, f.acct.ID, a.ID)
			mustOK(t, err)
		}
		connecttest.Eventually(t, name+" disconnects", func() bool { return f.dc.Connected(token) == 0 })
		if name == "inactive" {
			connecttest.Eventually(t, "disconnected state", func() bool {
				c := f.state(a)
				return c.State == store.ConnDisconnected && c.Reason == "the agent is inactive"
			})
			_, err := f.st.DeleteAgent(ctx, f.acct.ID, a.ID)
			mustOK(t, err)
		}
	}
}

func TestMissingTokenDisabled(t *testing.T) {
	f := newFixture(t)
	a := f.agent(map[string]any{})
	f.start()
	connecttest.Eventually(t, "disabled", func() bool {
		c := f.state(a)
		return c.State == store.ConnDisabled && strings.Contains(c.Reason, discord.TokenVar)
	})
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
	a := f.agent(withToken(token, nil))

	stopA, doneA := f.run(stA, "replica-a")
	f.waitConnected(a)
	stopB, doneB := f.run(stB, "replica-b")
	t.Cleanup(func() { stopB(); <-doneB })
	one := direct("one")
	f.dc.Dispatch(token, one)
	connecttest.Eventually(t, "first reply", func() bool { return len(f.dc.Sent(token)) == 1 })
	if n := f.dc.Connected(token); n != 1 {
		t.Fatalf("%d gateway connections; want exactly one", n)
	}

	// Kill replica-a: its database goes away with it, so its lease is
	// never released and must expire; its socket drops with it.
	_ = stA.Close()
	stopA()
	<-doneA
	connecttest.Eventually(t, "replica-b connects", func() bool {
		c := f.state(a)
		return c.State == store.ConnConnected && f.dc.Connected(token) == 1 && len(f.dc.Identifies(token)) == 2
	})
	two := direct("two")
	f.dc.Dispatch(token, two)
	connecttest.Eventually(t, "replica-b answers", func() bool { return len(f.dc.Sent(token)) == 2 })
	if got := f.replies(); got[one.ID] != "re: one" || got[two.ID] != "re: two" {
		t.Fatalf("sent after failover: %v", got)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
