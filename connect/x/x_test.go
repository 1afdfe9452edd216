package x_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/connect/x"
	"github.com/agentd/agentd/connect/x/xtest"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/connecttest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"go.uber.org/goleak"
)

const (
	consumerKey = "ck-ada"
	token       = "1-ada-token"
	botID       = "1"
	botName     = "ada_bot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, storetest.IgnoreStatementCache) }

// cursorStore records the cursors saved through it.
type cursorStore struct {
	store.Connections
	mu      sync.Mutex
	cursor  string
	history []string // every cursor saved, oldest first
}

func (c *cursorStore) SaveCursor(ctx context.Context, l domain.Lease, cursor string) error {
	err := c.Connections.SaveCursor(ctx, l, cursor)
	c.record(cursor, err)
	return err
}

// TakePlatformMessages stores the cursor with the messages taken.
func (c *cursorStore) TakePlatformMessages(ctx context.Context, l domain.Lease, cursor string, msgs []domain.InboxMessage) ([]domain.InboxMessage, error) {
	fresh, err := c.Connections.TakePlatformMessages(ctx, l, cursor, msgs)
	if cursor != "" {
		c.record(cursor, err)
	}
	return fresh, err
}

func (c *cursorStore) record(cursor string, err error) {
	if err == nil {
		c.mu.Lock()
		c.cursor = cursor
		c.history = append(c.history, cursor)
		c.mu.Unlock()
	}
}

// mentionCursors returns the mentions cursors saved, oldest first, each
// once in a row.
func (c *cursorStore) mentionCursors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, raw := range c.history {
		var cur struct{ Mentions string }
		_ = json.Unmarshal([]byte(raw), &cur)
		if cur.Mentions != "" && (len(out) == 0 || out[len(out)-1] != cur.Mentions) {
			out = append(out, cur.Mentions)
		}
	}
	return out
}

func (c *cursorStore) saved() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursor
}

type fixture struct {
	*connecttest.Fixture
	srv   *xtest.Server
	cs    *cursorStore
	clock *connecttest.Clock
}

// newFixture runs supervisors against a fresh test server holding the bot's
// account, on a store recording the cursors saved, with a settable clock.
func newFixture(t *testing.T) *fixture {
	srv := xtest.New(t)
	srv.AddAccount(xtest.Account{ConsumerKey: consumerKey, Token: token, ID: botID, Username: botName})
	clock := connecttest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	f := &fixture{srv: srv, clock: clock, Fixture: connecttest.NewFixture(t, "twitter", func() connect.Platform {
		return &x.Platform{APIURL: srv.URL, PollInterval: 50 * time.Millisecond, Now: clock.Now, ScheduleCheck: 20 * time.Millisecond}
	})}
	f.cs = &cursorStore{Connections: f.Store.Connections()}
	f.Config.Stores = connecttest.Stores(f.Store)
	f.Config.Stores.Connections = f.cs
	return f
}

func secrets() map[string]any {
	return map[string]any{x.APIKeyVar: consumerKey, x.APISecretKeyVar: "cs", x.AccessTokenVar: token, x.AccessTokenSecretVar: "ts"}
}

// agent creates an agent with the bot's credentials and, when given,
// settings.twitter.
func (f *fixture) agent(twitter map[string]any) domain.Agent {
	settings := map[string]any{"secrets": secrets()}
	if twitter != nil {
		settings["twitter"] = twitter
	}
	return f.Agent(settings)
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
	f.T.Helper()
	base := len(f.calls(endpoint))
	testutil.Eventually(f.T, endpoint+" polled", func() error {
		if got := len(f.calls(endpoint)) - base; got < n {
			return fmt.Errorf("%d more calls", got)
		}
		return nil
	})
}

// posted is a check that the bot posted n times.
func (f *fixture) posted(n int) func() error {
	return func() error { return testutil.Equal("posts", len(f.srv.Posts(token)), n) }
}

func TestMentionsAnsweredOnceAcrossRestarts(t *testing.T) {
	f := newFixture(t)
	f.srv.Mention(token, xtest.Tweet{Text: "old backlog", AuthorID: "7"})
	a := f.agent(nil)
	f.Start()
	f.WaitConnected(a)
	f.polled("mentions", 2)
	thread := f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot hello", AuthorID: "7"})
	f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot my own post", AuthorID: botID})
	inThread := f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot and more", AuthorID: "8", ConversationID: thread})
	testutil.Eventually(t, "two replies", f.posted(2))
	// A reply is counted just after it is posted: a restart before that
	// would lose the count, as any stop would.
	testutil.Eventually(t, "the replies counted", func() error { return testutil.Equal("messages out", f.State(a).MessagesOut, 2) })

	f.Restart()
	f.polled("mentions", 2)
	posts := f.srv.Posts(token)
	if len(posts) != 2 || posts[0].Text != "re: @ada_bot hello" || posts[0].ReplyTo != thread || posts[1].ReplyTo != inThread {
		t.Fatalf("posts %+v", posts)
	}
	calls := f.calls("mentions")
	if since := calls[len(calls)-1].Query.Get("since_id"); since != inThread {
		t.Fatalf("since_id after restart = %q; want %s", since, inThread)
	}
	for _, r := range f.Turner.Requests() {
		if r.Conv.RoomID != "twitter:"+thread || r.Conv.Platform != "twitter" || r.Shape.MaxChars != 280 {
			t.Errorf("turn %+v", r)
		}
	}
	if len(f.srv.Likes(token)) != 0 || len(f.srv.Retweets(token)) != 0 {
		t.Errorf("liked %v, reposted %v with the switches off", f.srv.Likes(token), f.srv.Retweets(token))
	}
	if c := f.State(a); c.BotID != botID || c.BotUsername != botName || c.MessagesIn != 2 || c.MessagesOut != 2 {
		t.Errorf("connection %+v", c)
	}
}

func TestAtMostTenRepliesPerPollWithLikesAndReposts(t *testing.T) {
	f := newFixture(t)
	// One author's twelve mentions, within a userRateLimit that allows them.
	a := f.agent(map[string]any{"autoLike": true, "autoRetweet": true, "userRateLimit": 20})
	f.Start()
	f.WaitConnected(a)
	f.polled("mentions", 2)
	f.Stop() // queue twelve mentions for one poll
	var ids []string
	for i := range 12 {
		ids = append(ids, f.srv.Mention(token, xtest.Tweet{Text: fmt.Sprintf("@ada_bot q%d", i), AuthorID: "7"}))
	}
	f.Start()
	testutil.Eventually(t, "ten replies", func() error {
		if n := len(f.srv.Posts(token)); n < 10 {
			return fmt.Errorf("%d posts", n)
		}
		return nil
	})
	testutil.Eventually(t, "all twelve", f.posted(12))
	testutil.Eventually(t, "likes and reposts", func() error {
		if l, r := len(f.srv.Likes(token)), len(f.srv.Retweets(token)); l != 12 || r != 12 {
			return fmt.Errorf("%d likes, %d reposts", l, r)
		}
		return nil
	})
	// The first poll after the restart took the ten oldest, moving the
	// cursor past the tenth only; the next one took the other two.
	if got, want := f.cs.mentionCursors(), []string{"0", ids[9], ids[11]}; !slices.Equal(got, want) {
		t.Fatalf("mentions cursors %v; want %v", got, want)
	}
}

func TestDMsAnswered(t *testing.T) {
	f := newFixture(t)
	f.srv.SendDM(token, "7", "old dm") // before the first connection: skipped
	a := f.agent(map[string]any{"enableDMs": true, "enableMentions": false})
	f.Start()
	f.WaitConnected(a)
	f.polled("dm_events", 2)
	f.srv.SendDM(token, "7", "hi there")
	testutil.Eventually(t, "dm reply", func() error { return testutil.Equal("DMs sent", len(f.srv.SentDMs(token)), 1) })
	f.polled("dm_events", 2) // its own DM, now among the events, is not answered
	sent := f.srv.SentDMs(token)
	if len(sent) != 1 || sent[0].To != "7" || sent[0].Text != "re: hi there" {
		t.Fatalf("sent DMs %+v", sent)
	}
	if r := f.Turner.Requests(); len(r) != 1 || r[0].Conv.UserID != "twitter:7" || r[0].UserID != "twitter:7" || r[0].Conv.RoomID != "" {
		t.Fatalf("turns %+v", r)
	}
	if len(f.calls("mentions")) != 0 {
		t.Errorf("mentions polled with enableMentions false")
	}
}

// More direct messages than one page came while the connection was
// down: each is answered, once, the older pages read with
// pagination_token.
func TestDMsPaged(t *testing.T) {
	f := newFixture(t)
	f.busy()
	a := f.agent(map[string]any{"enableDMs": true, "enableMentions": false})
	f.Start()
	f.WaitConnected(a)
	f.polled("dm_events", 2)
	f.Stop()
	const n = 120
	for i := range n {
		f.srv.SendDM(token, strconv.Itoa(100+i), fmt.Sprintf("hello %d", i))
	}
	f.Start()
	testutil.Eventually(t, "every DM answered", func() error { return testutil.Equal("DMs sent", len(f.srv.SentDMs(token)), n) })
	f.polled("dm_events", 2)
	to := map[string]bool{}
	for _, d := range f.srv.SentDMs(token) {
		to[d.To] = true
	}
	if len(to) != n || len(f.srv.SentDMs(token)) != n {
		t.Fatalf("%d DMs sent to %d senders; want one to each of %d", len(f.srv.SentDMs(token)), len(to), n)
	}
	if !slices.ContainsFunc(f.calls("dm_events"), func(c xtest.Call) bool { return c.Query.Get("pagination_token") != "" }) {
		t.Fatalf("no page asked with pagination_token")
	}
}

func TestScheduledPosts(t *testing.T) {
	f := newFixture(t)
	t0 := f.clock.Now()
	a := f.agent(map[string]any{"postFrequency": "4h", "enableMentions": false})
	f.Start()
	f.WaitConnected(a)
	var cur struct{ NextPost time.Time }
	readCursor := func() time.Time {
		cur.NextPost = time.Time{}
		_ = json.Unmarshal([]byte(f.cs.saved()), &cur)
		return cur.NextPost
	}
	testutil.Eventually(t, "first slot", func() error {
		if readCursor().IsZero() {
			return fmt.Errorf("cursor %q", f.cs.saved())
		}
		return nil
	})
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

	f.clock.Set(slot1)
	testutil.Eventually(t, "first post", f.posted(1))
	testutil.Eventually(t, "second slot", func() error { return after(readCursor(), slot1) })
	slot2 := readCursor()
	within("second slot", slot2, slot1)

	f.Restart()
	f.WaitConnected(a)
	f.clock.Set(slot2)
	testutil.Eventually(t, "second post", func() error {
		if n := len(f.srv.Posts(token)); n < 2 {
			return fmt.Errorf("%d posts", n)
		}
		return nil
	})
	testutil.Eventually(t, "third slot", func() error { return after(readCursor(), slot2) })
	posts := f.srv.Posts(token)
	if len(posts) != 2 || posts[0].Text != "post 1: lovely tea" || posts[1].Text != "post 2: lovely tea" ||
		posts[0].ReplyTo != "" || posts[1].ReplyTo != "" {
		t.Fatalf("posts %+v", posts)
	}
	r := f.Turner.Requests()[0]
	if !r.Shape.Post || r.Conv.RoomID != "twitter:posts" || r.Shape.MaxChars != 280 {
		t.Errorf("post turn %+v", r)
	}
	testutil.Eventually(t, "the counters", func() error {
		if c := f.State(a); c.MessagesOut != 2 || c.MessagesIn != 0 {
			return fmt.Errorf("counters %+v", c)
		}
		return nil
	})
}

func TestRateLimitWaitsForReset(t *testing.T) {
	f := newFixture(t)
	a := f.agent(nil)
	f.Start()
	f.WaitConnected(a)
	f.polled("mentions", 2)
	reset := time.Now().Truncate(time.Second).Add(2 * time.Second) // x-rate-limit-reset is in whole seconds
	f.srv.Fail(token, "mentions", xtest.Failure{Status: http.StatusTooManyRequests, Reset: reset})
	testutil.Eventually(t, "a call after the 429", func() error {
		calls := f.calls("mentions")
		if !slices.ContainsFunc(calls, func(c xtest.Call) bool { return c.Failed != 0 }) {
			return errors.New("no call failed yet")
		}
		if last := calls[len(calls)-1]; last.Failed != 0 {
			return fmt.Errorf("the last call failed with %d", last.Failed)
		}
		return nil
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
	f.Start()
	f.WaitConnected(a)
	f.polled("mentions", 2)
	f.srv.Mention(token, xtest.Tweet{Text: "same", AuthorID: "7"})
	f.srv.Mention(token, xtest.Tweet{Text: "same", AuthorID: "8"}) // the same reply: a duplicate 403
	later := f.srv.Mention(token, xtest.Tweet{Text: "other", AuthorID: "9"})
	// Each mention is its own thread, answered in parallel: either "same"
	// may be the duplicate, and "other" may come first.
	testutil.Eventually(t, "the duplicate tried and the other mention answered", func() error {
		if n := len(f.calls("tweets")); n != 3 {
			return fmt.Errorf("%d posts tried", n)
		}
		if posts := f.srv.Posts(token); !slices.ContainsFunc(posts, func(p xtest.Tweet) bool { return p.ReplyTo == later }) {
			return fmt.Errorf("posts %+v", posts)
		}
		return nil
	})
	if posts := f.srv.Posts(token); len(posts) != 2 {
		t.Fatalf("posts %+v; want the first \"same\" and \"other\" answered", posts)
	}
	if c := f.State(a); c.State != domain.ConnConnected {
		t.Fatalf("after a duplicate: %+v", c)
	}
	f.srv.Fail(token, "mentions", xtest.Failure{Status: http.StatusUnauthorized, Detail: "Unauthorized"})
	testutil.Eventually(t, "error", f.InState(a, domain.ConnError, x.AccessTokenVar))
}

func TestMissingCredentialsDisabled(t *testing.T) {
	f := newFixture(t)
	a := f.Agent(map[string]any{"secrets": map[string]any{x.APIKeyVar: consumerKey}})
	f.Start()
	testutil.Eventually(t, "disabled", func() error {
		if c := f.State(a); c.State != domain.ConnDisabled || !strings.Contains(c.Reason, x.AccessTokenSecretVar) || strings.Contains(c.Reason, x.APIKeyVar+",") {
			return fmt.Errorf("state %q (%s)", c.State, c.Reason)
		}
		return nil
	})
}

func TestStopsWhenInactiveOrDeleted(t *testing.T) {
	f := newFixture(t)
	f.Start()
	ctx := context.Background()
	inactive := domain.StatusInactive
	for _, name := range []string{"inactive", "deleted"} {
		a := f.agent(nil)
		f.WaitConnected(a)
		f.polled("mentions", 1)
		if name == "inactive" {
			_, _, err := f.Store.Agents().UpdateAgent(ctx, f.Account.ID, a.ID, nil, &inactive, domain.AnyVersion)
			testutil.OK(t, err)
			testutil.Eventually(t, "disconnected", f.InState(a, domain.ConnDisconnected))
		} else {
			_, err := f.Store.Agents().DeleteAgent(ctx, f.Account.ID, a.ID, domain.AnyVersion)
			testutil.OK(t, err)
		}
		// Stopped: no poll for three poll intervals in a row.
		testutil.Eventually(t, name+" stops polling", func() error {
			n := len(f.calls("mentions"))
			time.Sleep(150 * time.Millisecond)
			if more := len(f.calls("mentions")) - n; more != 0 {
				return fmt.Errorf("%d polls in 150ms", more)
			}
			return nil
		})
		if name == "inactive" {
			_, err := f.Store.Agents().DeleteAgent(ctx, f.Account.ID, a.ID, domain.AnyVersion)
			testutil.OK(t, err)
		}
	}
}

// after is a check that got is after t.
func after(got, t time.Time) error {
	if !got.After(t) {
		return fmt.Errorf("%v, not after %v", got, t)
	}
	return nil
}
