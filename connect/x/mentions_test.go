package x_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentd/agentd/connect/x"
	"github.com/agentd/agentd/connect/x/xtest"
	"github.com/agentd/agentd/internal/connecttest"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/prometheus/client_golang/prometheus"
)

// busy readies f for a test answering hundreds of messages: a lease that
// outlives a loaded machine's stalls, so that no handover (a crash's
// window: a reply finished but not yet sent) makes the counts flaky.
func (f *fixture) busy() { f.Config.LeaseTTL = 10 * time.Second }

// stopWithMentions stops the connection of a once it has polled, then
// has n mentions come, each from its own account in its own thread, and
// returns their ids, oldest first.
func (f *fixture) stopWithMentions(n int) []string {
	f.T.Helper()
	f.polled("mentions", 2)
	f.Stop()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = f.srv.Mention(token, xtest.Tweet{Text: fmt.Sprintf("@ada_bot q%d", i), AuthorID: strconv.Itoa(100 + i)})
	}
	return ids
}

// More mentions than one page came while the connection was down: all
// are answered, once, ten a poll from the oldest, reading each page
// once (pagination_token for the older pages, since_id the newest after).
func TestMentionBacklogPagedOldestFirst(t *testing.T) {
	f := newFixture(t)
	f.busy()
	a := f.agent(nil)
	f.Start()
	f.WaitConnected(a)
	ids := f.stopWithMentions(210)
	before := len(f.calls("mentions"))
	f.Start()
	testutil.Eventually(t, "every mention answered", f.posted(len(ids)))

	replies := map[string]int{}
	for _, p := range f.srv.Posts(token) {
		replies[p.ReplyTo]++
	}
	for i, id := range ids {
		if replies[id] != 1 {
			t.Fatalf("mention %d answered %d times", i, replies[id])
		}
	}
	want := []string{"0"}
	for i := 9; i < len(ids); i += 10 {
		want = append(want, ids[i])
	}
	if got := f.cs.mentionCursors(); !slices.Equal(got, want) {
		t.Fatalf("mentions cursors %v; want ten mentions a poll, oldest first: %v", got, want)
	}
	calls := f.calls("mentions")[before:]
	for i, c := range calls {
		since, token := c.Query.Get("since_id"), c.Query.Get("pagination_token")
		switch {
		case i == 0 && (since != "0" || token != ""),
			(i == 1 || i == 2) && (since != "0" || token == ""),
			i > 2 && (since != ids[len(ids)-1] || token != ""):
			t.Fatalf("call %d after the restart: since_id %q, pagination_token %q", i, since, token)
		}
	}
}

// X lists only the 800 newest mentions: when more came, the gap is
// counted, and the oldest of those listed are answered first.
func TestMentionsBeyondReachCounted(t *testing.T) {
	f := newFixture(t)
	f.busy()
	a := f.agent(nil)
	f.Start()
	f.WaitConnected(a)
	ids := f.stopWithMentions(xtest.MentionReach + 50)
	reg := prometheus.NewRegistry()
	f.Config.Registerer = reg
	f.Start()
	testutil.Eventually(t, "the gap counted", func() error {
		return testutil.Equal("dropped beyond reach", connecttest.Dropped(t, reg, "twitter", x.DropBeyondReach), 1)
	})
	testutil.Eventually(t, "the oldest listed taken first", func() error {
		got := f.cs.mentionCursors()
		if len(got) < 2 {
			return fmt.Errorf("mentions cursors %v", got)
		}
		return testutil.Equal("first cursor after the restart", got[1], ids[59])
	})
	for _, p := range f.srv.Posts(token) {
		if i := slices.Index(ids, p.ReplyTo); i < 50 {
			t.Fatalf("mention %d answered, beyond X's reach", i)
		}
	}
}

// Another bot answering every reply in one thread: the agent answers at
// most five mentions of a conversation a day, the next is counted as
// thread_limit, and a day later it answers there again.
func TestThreadLimitEndsReplyLoops(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.Config.Registerer = reg
	a := f.agent(nil)
	f.Start()
	f.WaitConnected(a)
	f.polled("mentions", 2)
	const otherBot = "200"
	root := f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot hi bot", AuthorID: otherBot})
	answered := 0
	dropped := func() float64 { return connecttest.Dropped(t, reg, "twitter", x.DropThreadLimit) }
	testutil.Eventually(t, "the loop cut", func() error {
		// The other bot mentions the agent in the thread after each reply.
		for posts := f.srv.Posts(token); answered < len(posts); answered++ {
			f.srv.Mention(token, xtest.Tweet{Text: fmt.Sprintf("@ada_bot reply %d", answered), AuthorID: otherBot, ConversationID: root})
		}
		return testutil.Equal("mentions refused by the thread limit", dropped(), 1)
	})
	f.polled("mentions", 3)
	if n, d := len(f.srv.Posts(token)), dropped(); n != 5 || d != 1 {
		t.Fatalf("%d replies, %v refused; want 5 and 1", n, d)
	}

	f.clock.Set(f.clock.Now().Add(24 * time.Hour))
	later := f.srv.Mention(token, xtest.Tweet{Text: "@ada_bot a day later", AuthorID: otherBot, ConversationID: root})
	testutil.Eventually(t, "answered a day later", f.posted(6))
	if posts := f.srv.Posts(token); posts[5].ReplyTo != later {
		t.Fatalf("the sixth reply answers %s; want %s", posts[5].ReplyTo, later)
	}
}
