package discord_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/discord"
	"github.com/agentd/agentd/connect/discord/discordtest"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/connecttest"
	"github.com/agentd/agentd/internal/testutil"
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

type fixture struct {
	*connecttest.Fixture
	dc *discordtest.Server
}

// newFixture runs supervisors against a fresh test server holding the bot
// token and a guild of three channels.
func newFixture(t *testing.T) *fixture {
	dc := discordtest.New(t)
	dc.AddBot(token, botID, botName, true)
	dc.AddChannel(guild, "111", "ops")
	dc.AddChannel(guild, "222", "general")
	dc.AddChannel(guild, "333", "off-topic")
	f := &fixture{dc: dc, Fixture: connecttest.NewFixture(t, "discord", func() connect.Platform {
		return &discord.Platform{APIURL: dc.URL, IdentifyEvery: 50 * time.Millisecond}
	})}
	// A stopping connection waits up to a second for Discord's answer to
	// its close frame, after the lease stopped being renewed: the lease
	// must outlast it for the release to store the final state.
	f.Config.LeaseTTL = 3 * time.Second
	f.Live = func() error { return testutil.Equal("gateway connections", dc.Connected(token), 1) }
	return f
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

// sent is a check that the bot sent n messages.
func (f *fixture) sent(n int) func() error {
	return func() error { return testutil.Equal("messages sent", len(f.dc.Sent(token)), n) }
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
	a := f.Agent(withToken(token, nil))
	f.Start()
	f.WaitConnected(a)
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
	testutil.Eventually(t, "replies", f.sent(len(answered)))
	got := f.replies()
	want := map[string]string{answered[0].ID: "re: @ada hello", answered[1].ID: "re: go on", answered[2].ID: "re: hi in private"}
	for id, text := range want {
		if got[id] != text {
			t.Errorf("reply to %s = %q; want %q (all: %v)", id, got[id], text, got)
		}
	}
	reqs := f.Turner.Requests()
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
	testutil.Eventually(t, "counters", f.Counted(a, 3, 3))
	if c := f.State(a); c.BotID != botID || c.BotUsername != botName {
		t.Fatalf("connection %+v", c)
	}
}

func TestChannelsByIDAndNameWithoutMentions(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(token, map[string]any{"respondToMentions": false, "channels": []string{"111", "#General"}, "moderationEnabled": true}))
	f.Start()
	f.WaitConnected(a)
	byID := f.inGuild("111", "in ops", alice)
	byName := f.inGuild("222", "in general", alice)
	f.dc.Dispatch(token, f.inGuild("333", "<@"+botID+"> in off-topic", alice))
	f.dc.Dispatch(token, byID)
	f.dc.Dispatch(token, byName)
	testutil.Eventually(t, "replies", func() error {
		if n := len(f.dc.Sent(token)); n < 2 {
			return fmt.Errorf("%d messages sent", n)
		}
		return nil
	})
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
	a := f.Agent(withToken(token, map[string]any{"respondToDMs": false, "respondToMentions": false}))
	f.Start()
	f.WaitConnected(a)
	f.dc.Dispatch(token, direct("ignored"))
	last := f.inGuild("333", "anything", alice)
	f.dc.Dispatch(token, last)
	testutil.Eventually(t, "guild reply", func() error {
		if len(f.dc.Sent(token)) == 0 {
			return errors.New("no message sent")
		}
		return nil
	})
	if got := f.replies(); len(got) != 1 || got[last.ID] != "re: anything" {
		t.Fatalf("replies %v", got)
	}
}

func TestLongReplySplitAndDuplicateAnsweredOnce(t *testing.T) {
	f := newFixture(t)
	f.Turner.Text = strings.Repeat("a", 1900) + " " + strings.Repeat("é", 300)
	a := f.Agent(withToken(token, nil))
	f.Start()
	f.WaitConnected(a)
	m := direct("tell me everything")
	f.dc.Dispatch(token, m)
	testutil.Eventually(t, "two parts", f.sent(2))
	dup := *m
	f.dc.Dispatch(token, &dup) // the same message delivered again
	later := direct("next")
	f.dc.Dispatch(token, later)
	testutil.Eventually(t, "next reply", f.sent(4))
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
	bad := f.Agent(withToken("unknown.token", nil))
	intents := f.Agent(withToken(noContent, nil))
	f.Start()
	testutil.Eventually(t, "errors", func() error {
		if b, i := f.State(bad), f.State(intents); b.State != domain.ConnError || i.State != domain.ConnError {
			return fmt.Errorf("states %q (%s) and %q (%s)", b.State, b.Reason, i.State, i.Reason)
		}
		return nil
	})
	if r := f.State(bad).Reason; !strings.Contains(r, "4004") || !strings.Contains(r, "Developer Portal") {
		t.Errorf("4004 reason %q", r)
	}
	if r := f.State(intents).Reason; !strings.Contains(r, "4014") || !strings.Contains(r, "Message Content Intent") {
		t.Errorf("4014 reason %q", r)
	}
	// Many times the back-off (≤200ms) and the identify spacing (50ms):
	// a retry would have identified again by now.
	time.Sleep(time.Second)
	if n := len(f.dc.Identifies(noContent)); n != 1 {
		t.Fatalf("%d identifies after 4014; want 1", n)
	}
	if c := f.State(intents); c.State != domain.ConnError {
		t.Fatalf("state after 4014: %+v", c)
	}
}

// TestFatalCloseCodesAreNotRetried: the close codes no retry can fix
// (sharding, API version, invalid intents) put the connection in error
// with the reason, after one IDENTIFY: retrying would spend the bot's
// daily IDENTIFY budget.
func TestFatalCloseCodesAreNotRetried(t *testing.T) {
	for _, code := range []int{4010, 4011, 4012, 4013} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f := newFixture(t)
			f.dc.RejectIdentify(token, code)
			a := f.Agent(withToken(token, nil))
			f.Start()
			testutil.Eventually(t, "error", f.InState(a, domain.ConnError, fmt.Sprint(code)))
			time.Sleep(500 * time.Millisecond) // many times the back-off and the identify spacing
			if n := len(f.dc.Identifies(token)); n != 1 {
				t.Fatalf("%d identifies after close code %d; want 1", n, code)
			}
		})
	}
}

// stateLog is the fixture's store, recording each connection state
// stored, "state: reason", even one that lasts a moment.
type stateLog struct {
	connect.Connections
	mu     sync.Mutex
	states []string
}

func (l *stateLog) SetConnectionState(ctx context.Context, lease domain.Lease, state domain.ConnState, reason string) error {
	l.mu.Lock()
	l.states = append(l.states, string(state)+": "+reason)
	l.mu.Unlock()
	return l.Connections.SetConnectionState(ctx, lease, state, reason)
}

// saw is a check that a state stored holds every one of words.
func (l *stateLog) saw(words ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.ContainsFunc(l.states, func(s string) bool {
		return !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(s, w) })
	}) {
		return nil
	}
	return fmt.Errorf("no state with %q in %q", words, l.states)
}

// answered is a check that m was answered.
func (f *fixture) answered(m *discordgo.Message) func() error {
	return func() error { return testutil.Equal("reply to "+m.Content, f.replies()[m.ID], "re: "+m.Content) }
}

// TestDropsResumeWithMissedEvents: however the gateway connection ends
// short of the session (a network drop, a close code that is not fatal,
// op 7, a resumable op 9), the next connection RESUMEs at READY's
// resume_gateway_url, spending no IDENTIFY (none would be allowed), and
// the messages sent meanwhile are answered. The state says so.
func TestDropsResumeWithMissedEvents(t *testing.T) {
	f := newFixture(t)
	states := &stateLog{Connections: f.Store.Connections()}
	f.Config.Stores = connecttest.Stores(f.Store)
	f.Config.Stores.Connections = states
	ctx := context.Background()
	w, err := f.Store.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: f.Account.ID, URL: "https://hooks.example.com/",
		Events: []string{string(domain.EventConnectionChanged)}, Enabled: true})
	testutil.OK(t, err)
	deliveries := func() int {
		ds, total, err := f.Store.Webhooks().ListDeliveries(ctx, f.Account.ID, w.ID, domain.DeliveryQuery{})
		testutil.OK(t, err)
		for _, d := range ds {
			if d.Type != domain.EventConnectionChanged {
				t.Fatalf("delivery of %s", d.Type)
			}
		}
		return int(total)
	}
	a := f.Agent(withToken(token, nil))
	f.Start()
	f.WaitConnected(a)
	f.dc.SessionStartLimit(token, 0, time.Hour) // an IDENTIFY would wait an hour
	drops := []struct {
		name string
		drop func()
	}{
		{"network drop", func() { f.dc.Drop(token) }},
		{"close 4000", func() { f.dc.CloseWith(token, 4000) }},
		{"op 7 reconnect", func() { f.dc.Reconnect(token) }},
		{"op 9 resumable", func() { f.dc.InvalidSession(token, true) }},
	}
	var seq int64
	for i, d := range drops {
		before := deliveries()
		d.drop()
		missed := direct("while down after " + d.name)
		if n := f.dc.Dispatch(token, missed); n != 1 {
			t.Fatalf("%s: dispatched to %d sessions", d.name, n)
		}
		testutil.Eventually(t, d.name+": resumed", func() error { return testutil.Equal("resumes", len(f.dc.Resumes(token)), i+1) })
		f.WaitConnected(a)
		testutil.Eventually(t, d.name+": missed message answered", f.answered(missed))
		r := f.dc.Resumes(token)[i]
		if r.SessionID != "session-1" || !r.AtResumeURL || r.Refused || r.Seq <= seq {
			t.Fatalf("%s: resume %+v after sequence number %d", d.name, r, seq)
		}
		seq = r.Seq
		if after := deliveries(); after < before+3 { // disconnected, connecting, connected
			t.Fatalf("%s: connection.changed events: %d before, %d after", d.name, before, after)
		}
	}
	if r := f.dc.Resumes(token)[0]; r.Replayed < 1 {
		t.Errorf("the message sent during the network drop was not replayed: %+v", r)
	}
	if n := len(f.dc.Identifies(token)); n != 1 {
		t.Fatalf("%d identifies; want 1", n)
	}
	testutil.OK(t, states.saw(string(domain.ConnConnecting), "resuming"))
}

// TestUnresumableSessionIdentifiesAfresh: a RESUME of a session Discord
// ended gets op 9 (d=false), and so does a live connection whose session
// it invalidates: the next connection IDENTIFYs a new session.
func TestUnresumableSessionIdentifiesAfresh(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(token, nil))
	f.Start()
	f.WaitConnected(a)
	f.dc.Drop(token)
	f.dc.EndSessions(token)
	testutil.Eventually(t, "a second identify", func() error { return testutil.Equal("identifies", len(f.dc.Identifies(token)), 2) })
	f.WaitConnected(a)
	f.dc.InvalidSession(token, false)
	testutil.Eventually(t, "a third identify", func() error { return testutil.Equal("identifies", len(f.dc.Identifies(token)), 3) })
	f.WaitConnected(a)
	m := direct("still there?")
	f.dc.Dispatch(token, m)
	testutil.Eventually(t, "reply after identifying", f.answered(m))
	// One RESUME, refused; none after op 9 (d=false) on a live connection.
	if r := f.dc.Resumes(token); len(r) != 1 || !r[0].Refused || r[0].SessionID != "session-1" {
		t.Fatalf("resumes %+v", r)
	}
}

// TestIdentifyWaitsForTheSessionStartLimit: with fewer than 5 session
// starts left of the bot's daily limit, the connection IDENTIFYs only
// after the limit resets, saying why meanwhile.
func TestIdentifyWaitsForTheSessionStartLimit(t *testing.T) {
	f := newFixture(t)
	resets := time.Now().Add(1500 * time.Millisecond)
	f.dc.SessionStartLimit(token, 4, time.Until(resets))
	a := f.Agent(withToken(token, nil))
	f.Start()
	testutil.Eventually(t, "waiting", f.InState(a, domain.ConnConnecting, "daily session start limit", "4 of 1000 left", "reset"))
	if n := len(f.dc.Identifies(token)); n != 0 {
		t.Fatalf("%d identifies with 4 session starts left", n)
	}
	f.WaitConnected(a)
	if time.Now().Before(resets) {
		t.Fatal("connected before the session start limit reset")
	}
	if n := len(f.dc.Identifies(token)); n != 1 {
		t.Fatalf("%d identifies; want 1", n)
	}
}

// TestDeadConnectionResumesWithinTwoHeartbeats: a connection that stops
// carrying anything (no heartbeat ACK, no event) is dropped after about two
// heartbeat intervals without an ACK, not discordgo's five, and resumed:
// the message it did not deliver is answered.
func TestDeadConnectionResumesWithinTwoHeartbeats(t *testing.T) {
	f := newFixture(t)
	const every = 400 * time.Millisecond
	f.dc.HeartbeatInterval = every
	a := f.Agent(withToken(token, nil))
	f.Start()
	f.WaitConnected(a)
	f.dc.Zombie(token)
	lost := direct("into the void")
	f.dc.Dispatch(token, lost)
	// 2.25 intervals, the reconnection back-off (≤240ms) and slack for the
	// race detector, where five missed ACKs alone take longer.
	testutil.Within(t, "resumed", 5*every, func() error { return testutil.Equal("resumes", len(f.dc.Resumes(token)), 1) })
	testutil.Eventually(t, "the lost message answered", f.answered(lost))
	if n := len(f.dc.Identifies(token)); n != 1 {
		t.Fatalf("%d identifies; want 1", n)
	}
}

func TestStopsWhenInactiveOrDeleted(t *testing.T) {
	f := newFixture(t)
	f.Start()
	ctx := context.Background()
	inactive := domain.StatusInactive
	for _, name := range []string{"inactive", "deleted"} {
		a := f.Agent(withToken(token, nil))
		f.WaitConnected(a)
		if name == "inactive" {
			_, _, err := f.Store.Agents().UpdateAgent(ctx, f.Account.ID, a.ID, nil, &inactive, domain.AnyVersion)
			testutil.OK(t, err)
		} else {
			_, err := f.Store.Agents().DeleteAgent(ctx, f.Account.ID, a.ID, domain.AnyVersion)
			testutil.OK(t, err)
		}
		testutil.Eventually(t, name+" disconnects", func() error { return testutil.Equal("gateway connections", f.dc.Connected(token), 0) })
		if name == "inactive" {
			testutil.Eventually(t, "disconnected state", func() error {
				if c := f.State(a); c.State != domain.ConnDisconnected || c.Reason != "the agent is inactive" {
					return fmt.Errorf("state %q (%s)", c.State, c.Reason)
				}
				return nil
			})
			_, err := f.Store.Agents().DeleteAgent(ctx, f.Account.ID, a.ID, domain.AnyVersion)
			testutil.OK(t, err)
		}
	}
}

func TestMissingTokenDisabled(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(map[string]any{})
	f.Start()
	testutil.Eventually(t, "disabled", f.InState(a, domain.ConnDisabled, discord.TokenVar))
}

func TestFailoverOnPostgres(t *testing.T) {
	f := newFixture(t)
	dsn := storetest.PostgresDSN(t)
	stA, stB := storetest.Open(t, dsn), storetest.Open(t, dsn)
	f.Store, f.Account = stB, storetest.Account(t, stB, "acme")
	a := f.Agent(withToken(token, nil))

	stopA := f.Run(stA, "replica-a")
	f.WaitConnected(a)
	f.Run(stB, "replica-b")
	one := direct("one")
	f.dc.Dispatch(token, one)
	testutil.Eventually(t, "first reply", f.sent(1))
	if n := f.dc.Connected(token); n != 1 {
		t.Fatalf("%d gateway connections; want exactly one", n)
	}

	// Kill replica-a: its database goes away with it, so its lease is
	// never released and must expire; its socket drops with it.
	_ = stA.Close()
	stopA()
	testutil.Eventually(t, "replica-b connects", func() error {
		if n := len(f.dc.Identifies(token)); n != 2 {
			return fmt.Errorf("%d identifies", n)
		}
		if err := f.InState(a, domain.ConnConnected)(); err != nil {
			return err
		}
		return f.Live()
	})
	two := direct("two")
	f.dc.Dispatch(token, two)
	testutil.Eventually(t, "replica-b answers", f.sent(2))
	if got := f.replies(); got[one.ID] != "re: one" || got[two.ID] != "re: two" {
		t.Fatalf("sent after failover: %v", got)
	}
}

// A reply Discord posted but whose answer was lost (a 502) is not posted
// again: a retry would show the user the same reply twice.
func TestReplyNotPostedTwiceAfterA502(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(withToken(token, nil))
	f.Start()
	f.WaitConnected(a)
	f.dc.LoseAnswers(token, 1)
	f.dc.Dispatch(token, direct("hello"))
	testutil.Eventually(t, "the reply posted", f.sent(1))
	time.Sleep(300 * time.Millisecond) // discordgo's retries come within this
	if sent := f.dc.Sent(token); len(sent) != 1 {
		t.Fatalf("posted %d times: %+v; want once", len(sent), sent)
	}
}
