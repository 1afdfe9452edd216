package x_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/connecttest"
	"github.com/agentd/agentd/connect/x"
	"github.com/agentd/agentd/connect/x/xtest"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/turn"
	"go.uber.org/goleak"
)

const (
	consumerKey = "ck-ada"
	token       = "1-ada-token"
	botID       = "1"
	botName     = "ada_bot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, storetest.IgnoreStatementCache) }

// fakeTurner answers "re: <text>", and to a post request a numbered post
// (the turn, not the platform, shortens to MaxChars).
type fakeTurner struct {
	mu    sync.Mutex
	reqs  []turn.Input
	posts int
}

func (f *fakeTurner) Reply(_ context.Context, r turn.Input) (turn.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	if r.Post {
		f.posts++
		return turn.Result{Text: fmt.Sprintf("post %d: lovely tea", f.posts)}, nil
	}
	return turn.Result{Text: "re: " + r.Text}, nil
}

func (f *fakeTurner) requests() []turn.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]turn.Input(nil), f.reqs...)
}

// clock is a settable clock for the post schedule.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// cursorStore records the cursors saved through it.
type cursorStore struct {
	*store.Store
	mu     sync.Mutex
	cursor string
}

func (c *cursorStore) SaveCursor(ctx context.Context, l store.Lease, cursor string) error {
	err := c.Store.SaveCursor(ctx, l, cursor)
	if err == nil {
		c.mu.Lock()
		c.cursor = cursor
		c.mu.Unlock()
	}
	return err
}

func (c *cursorStore) saved() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor
}

type fixture struct {
	t      *testing.T
	st     *store.Store
	cs     *cursorStore
	srv    *xtest.Server
	turner *fakeTurner
	clock  *clock
	acct   store.Account
	stop   func()
}

func newFixture(t *testing.T) *fixture {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"))
	mustOK(t, err)
	t.Cleanup(func() { _ = st.Close() })
	acct, err := st.CreateAccount(context.Background(), store.Account{Name: "acme", Tier: store.TierStandard})
	mustOK(t, err)
	f := &fixture{t: t, st: st, srv: xtest.New(t), turner: &fakeTurner{}, acct: acct,
		clock: &clock{now: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}}
	f.cs = &cursorStore{Store: st}
	f.srv.AddAccount(xtest.Account{ConsumerKey: consumerKey, Token: token, ID: botID, Username: botName})
	return f
}

// start runs a supervisor until stop or the end of the test.
func (f *fixture) start() {
	sup, err := connect.New(connect.Config{
		Store: f.cs, Turner: f.turner, Owner: "replica-a",
		Platforms: []connect.Platform{&x.Platform{APIURL: f.srv.URL, PollInterval: 50 * time.Millisecond,
			Now: f.clock.Now, ScheduleCheck: 20 * time.Millisecond}},
		LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond, ChangeEvery: 100 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
	})
	mustOK(f.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sup.Run(ctx) }()
	var once sync.Once
	f.stop = func() { once.Do(func() { cancel(); <-done }) }
	f.t.Cleanup(f.stop)
}

func (f *fixture) restart() {
	f.stop()
	f.start()
}

func secrets() map[string]any {
	return map[string]any{x.APIKeyVar: consumerKey, x.APISecretKeyVar: "cs", x.AccessTokenVar: token, x.AccessTokenSecretVar: "ts"}
}

func (f *fixture) agent(twitter map[string]any) store.Agent {
	settings := map[string]any{"secrets": secrets()}
	if twitter != nil {
		settings["twitter"] = twitter
	}
	fields := map[string]json.RawMessage{"name": mustJSON("Ada"), "clients": mustJSON([]string{"twitter"}), "settings": mustJSON(settings)}
	a, err := f.st.CreateAgent(context.Background(), store.Agent{AccountID: f.acct.ID, Fields: fields}, -1)
	mustOK(f.t, err)
	return a
}

func (f *fixture) state(a store.Agent) store.Connection {
	conns, err := f.st.ListConnections(context.Background(), f.acct.ID, a.ID)
	if err != nil || len(conns) == 0 {
		return store.Connection{}
	}
	return conns[0]
}

// calls counts the requests to endpoint.
func (f *fixture) calls(endpoint string) []xtest.Call {
	var out []xtest.Call
	for _, c := range f.srv.Calls(token) {
		if c.Endpoint == endpoint {
			out = append(out, c)
		}
	}
	return out
}

// polled waits until endpoint has been called n more times than now, so
// what a poll would have done is done.
func (f *fixture) polled(endpoint string, n int) {
	f.t.Helper()
	base := len(f.calls(endpoint))
	connecttest.Eventually(f.t, endpoint+" polled", func() bool { return len(f.calls(endpoint)) >= base+n })
}

func (f *fixture) waitConnected(a store.Agent) {
	connecttest.Eventually(f.t, "connected", func() bool { return f.state(a).State == store.ConnConnected })
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

func TestMentionsAnsweredOnceAcrossRestarts(t *testing.T) {
	f := newFixture(t)
	f.srv.Mention(token, xtest.Tweet{Text: "old backlog", AuthorID: "7"})
	a := f.agent(nil)
	f.start()
	f.waitConnected(a)
	f.polled("mentions", 2)
	thread := f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot hello", AuthorID: "7"})
	f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot my own post", AuthorID: botID})
	inThread := f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot and more", AuthorID: "8", ConversationID: thread})
	connecttest.Eventually(t, "two replies", func() bool { return len(f.srv.Posts(token)) == 2 })
	// A reply is counted just after it is posted: a restart before that
	// would lose the count, as any stop would.
	connecttest.Eventually(t, "the replies counted", func() bool { return f.state(a).MessagesOut == 2 })

	f.restart()
	f.polled("mentions", 2)
	posts := f.srv.Posts(token)
	if len(posts) != 2 || posts[0].Text != "re: @ada_bot hello" || posts[0].ReplyTo != thread || posts[1].ReplyTo != inThread {
		t.Fatalf("posts %+v", posts)
	}
	calls := f.calls("mentions")
	if since := calls[len(calls)-1].Query.Get("since_id"); since != inThread {
		t.Fatalf("since_id after restart = %q; want %s", since, inThread)
	}
	for _, r := range f.turner.requests() {
		if r.Conv.RoomID != "twitter:"+thread || r.Conv.Platform != "twitter" || r.MaxChars != 280 {
			t.Errorf("turn %+v", r)
		}
	}
	if len(f.srv.Likes(token)) != 0 || len(f.srv.Retweets(token)) != 0 {
		t.Errorf("liked %v, reposted %v with the switches off", f.srv.Likes(token), f.srv.Retweets(token))
	}
	if c := f.state(a); c.BotID != botID || c.BotUsername != botName || c.MessagesIn != 2 || c.MessagesOut != 2 {
		t.Errorf("connection %+v", c)
	}
}

func TestAtMostTenRepliesPerPollWithLikesAndReposts(t *testing.T) {
	f := newFixture(t)
	a := f.agent(map[string]any{"autoLike": true, "autoRetweet": true})
	f.start()
	f.waitConnected(a)
	f.polled("mentions", 2)
	f.stop() // queue twelve mentions for one poll
	var ids []string
	for i := range 12 {
		ids = append(ids, f.srv.Mention(token, xtest.Tweet{Text: fmt.Sprintf("@ada_bot q%d", i), AuthorID: "7"}))
	}
	f.start()
	connecttest.Eventually(t, "ten replies", func() bool { return len(f.srv.Posts(token)) >= 10 })
	connecttest.Eventually(t, "all twelve", func() bool { return len(f.srv.Posts(token)) == 12 })
	connecttest.Eventually(t, "likes and reposts", func() bool { return len(f.srv.Likes(token)) == 12 && len(f.srv.Retweets(token)) == 12 })
	// The first poll after the restart answered the ten oldest; the
	// second one asked from the tenth.
	var sinces []string
	for _, c := range f.calls("mentions") {
		sinces = append(sinces, c.Query.Get("since_id"))
	}
	want := ids[9]
	found := false
	for _, s := range sinces {
		found = found || s == want
	}
	if !found {
		t.Fatalf("no poll from the tenth mention %s: since_ids %v", want, sinces)
	}
}

func TestDMsAnswered(t *testing.T) {
	f := newFixture(t)
	f.srv.SendDM(token, "7", "old dm") // before the first connection: skipped
	a := f.agent(map[string]any{"enableDMs": true, "enableMentions": false})
	f.start()
	f.waitConnected(a)
	f.polled("dm_events", 2)
	f.srv.SendDM(token, "7", "hi there")
	connecttest.Eventually(t, "dm reply", func() bool { return len(f.srv.SentDMs(token)) == 1 })
	f.polled("dm_events", 2) // its own DM, now among the events, is not answered
	sent := f.srv.SentDMs(token)
	if len(sent) != 1 || sent[0].To != "7" || sent[0].Text != "re: hi there" {
		t.Fatalf("sent DMs %+v", sent)
	}
	if r := f.turner.requests(); len(r) != 1 || r[0].Conv.UserID != "twitter:7" || r[0].UserID != "twitter:7" || r[0].Conv.RoomID != "" {
		t.Fatalf("turns %+v", r)
	}
	if len(f.calls("mentions")) != 0 {
		t.Errorf("mentions polled with enableMentions false")
	}
}

func TestScheduledPosts(t *testing.T) {
	f := newFixture(t)
	t0 := f.clock.Now()
	a := f.agent(map[string]any{"postFrequency": "4h", "enableMentions": false})
	f.start()
	f.waitConnected(a)
	var cur struct{ NextPost time.Time }
	readCursor := func() time.Time {
		cur.NextPost = time.Time{}
		_ = json.Unmarshal([]byte(f.cs.saved()), &cur)
		return cur.NextPost
	}
	connecttest.Eventually(t, "first slot", func() bool { return !readCursor().IsZero() })
	within := func(what string, got, from time.Time) {
		t.Helper()
		if lo, hi := from.Add(4*time.Hour*8/10), from.Add(4*time.Hour*12/10); got.Before(lo) || got.After(hi) {
			t.Fatalf("%s at %v; want within [%v, %v]", what, got, lo, hi)
		}
	}
	slot1 := readCursor()
	within("first slot", slot1, t0)
	if len(f.srv.Posts(token)) != 0 {
		t.Fatalf("posted at connect")
	}

	f.clock.set(slot1)
	connecttest.Eventually(t, "first post", func() bool { return len(f.srv.Posts(token)) == 1 })
	connecttest.Eventually(t, "second slot", func() bool { return readCursor().After(slot1) })
	slot2 := readCursor()
	within("second slot", slot2, slot1)

	f.restart()
	f.waitConnected(a)
	f.clock.set(slot2)
	connecttest.Eventually(t, "second post", func() bool { return len(f.srv.Posts(token)) >= 2 })
	connecttest.Eventually(t, "third slot", func() bool { return readCursor().After(slot2) })
	posts := f.srv.Posts(token)
	if len(posts) != 2 || posts[0].Text != "post 1: lovely tea" || posts[1].Text != "post 2: lovely tea" ||
		posts[0].ReplyTo != "" || posts[1].ReplyTo != "" {
		t.Fatalf("posts %+v", posts)
	}
	r := f.turner.requests()[0]
	if !r.Post || r.Conv.RoomID != "twitter:posts" || r.MaxChars != 280 {
		t.Errorf("post turn %+v", r)
	}
	if c := f.state(a); c.MessagesOut != 2 || c.MessagesIn != 0 {
		t.Errorf("counters %+v", c)
	}
}

func TestRateLimitWaitsForReset(t *testing.T) {
	f := newFixture(t)
	a := f.agent(nil)
	f.start()
	f.waitConnected(a)
	f.polled("mentions", 2)
	reset := time.Now().Truncate(time.Second).Add(2 * time.Second) // x-rate-limit-reset is in whole seconds
	f.srv.Fail(token, "mentions", xtest.Failure{Status: http.StatusTooManyRequests, Reset: reset})
	connecttest.Eventually(t, "a call after the 429", func() bool {
		calls := f.calls("mentions")
		return len(calls) > 0 && calls[len(calls)-1].Failed == 0 && slices.ContainsFunc(calls, func(c xtest.Call) bool { return c.Failed != 0 })
	})
	calls := f.calls("mentions")
	i := slices.IndexFunc(calls, func(c xtest.Call) bool { return c.Failed != 0 })
	if next := calls[i+1]; next.At.Before(reset) {
		t.Fatalf("mentions asked again at %v, before the reset at %v", next.At, reset)
	}
}

func TestUnauthorizedIsErrorAndDuplicateSkipped(t *testing.T) {
	f := newFixture(t)
	a := f.agent(nil)
	f.start()
	f.waitConnected(a)
	f.polled("mentions", 2)
	f.srv.Mention(token, xtest.Tweet{Text: "same", AuthorID: "7"})
	f.srv.Mention(token, xtest.Tweet{Text: "same", AuthorID: "8"}) // the same reply: a duplicate 403
	later := f.srv.Mention(token, xtest.Tweet{Text: "other", AuthorID: "9"})
	// Each mention is its own thread, answered in parallel: either "same"
	// may be the duplicate, and "other" may come first.
	connecttest.Eventually(t, "the duplicate tried and the other mention answered", func() bool {
		return len(f.calls("tweets")) == 3 && slices.ContainsFunc(f.srv.Posts(token), func(p xtest.Tweet) bool { return p.ReplyTo == later })
	})
	if posts := f.srv.Posts(token); len(posts) != 2 {
		t.Fatalf("posts %+v; want the first \"same\" and \"other\" answered", posts)
	}
	if c := f.state(a); c.State != store.ConnConnected {
		t.Fatalf("after a duplicate: %+v", c)
	}
	f.srv.Fail(token, "mentions", xtest.Failure{Status: http.StatusUnauthorized, Detail: "Unauthorized"})
	connecttest.Eventually(t, "error", func() bool {
		c := f.state(a)
		return c.State == store.ConnError && strings.Contains(c.Reason, x.AccessTokenVar)
	})
}

func TestMissingCredentialsDisabled(t *testing.T) {
	f := newFixture(t)
	fields := map[string]json.RawMessage{"name": mustJSON("Ada"), "clients": mustJSON([]string{"twitter"}),
		"settings": mustJSON(map[string]any{"secrets": map[string]any{x.APIKeyVar: consumerKey}})}
	a, err := f.st.CreateAgent(context.Background(), store.Agent{AccountID: f.acct.ID, Fields: fields}, -1)
	mustOK(t, err)
	f.start()
	connecttest.Eventually(t, "disabled", func() bool {
		c := f.state(a)
		return c.State == store.ConnDisabled && strings.Contains(c.Reason, x.AccessTokenSecretVar) && !strings.Contains(c.Reason, x.APIKeyVar+",")
	})
}

func TestStopsWhenInactiveOrDeleted(t *testing.T) {
	f := newFixture(t)
	f.start()
	ctx := context.Background()
	inactive := store.StatusInactive
	for _, name := range []string{"inactive", "deleted"} {
		a := f.agent(nil)
		f.waitConnected(a)
		f.polled("mentions", 1)
		if name == "inactive" {
			_, _, err := f.st.UpdateAgent(ctx, f.acct.ID, a.ID, nil, &inactive)
			mustOK(t, err)
			connecttest.Eventually(t, "disconnected", func() bool { return f.state(a).State == store.ConnDisconnected })
		} else {
			_, err := f.st.DeleteAgent(ctx, f.acct.ID, a.ID)
			mustOK(t, err)
		}
		// Stopped: no poll for three poll intervals in a row.
		connecttest.Eventually(t, name+" stops polling", func() bool {
			n := len(f.calls("mentions"))
			time.Sleep(150 * time.Millisecond)
			return len(f.calls("mentions")) == n
		})
		if name == "inactive" {
			_, err := f.st.DeleteAgent(ctx, f.acct.ID, a.ID)
			mustOK(t, err)
		}
	}
}
