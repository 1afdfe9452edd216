package x

import "time"

// The reply policy against reply loops. X has no bot flag, so two
// accounts that answer their mentions (two agents, or an agent and any
// auto-reply bot) would answer each other in one thread forever. A
// connection therefore answers at most maxThreadReplies mentions of one
// conversation (X's conversation_id: a post and every reply under it)
// within threadWindow; later mentions there are not answered, and each is
// counted as a drop with DropThreadLimit. A loop so ends after a few
// exchanges, while a person talking to the agent in a thread still gets
// that many answers a day.
//
// The counts are kept with the lease (Conn.Local), as the per-user rate
// limit is: a restart or a lease move forgets them, so a loop that
// outlives one is cut again after maxThreadReplies more answers.
const (
	maxThreadReplies = 5
	threadWindow     = 24 * time.Hour
)

// DropThreadLimit is why Drop counts a mention not answered because its
// conversation reached maxThreadReplies.
const DropThreadLimit = "thread_limit"

// threads counts the mentions taken for an answer per conversation. Only
// the mention loop uses it, and the Runs of a lease never overlap, so it
// needs no lock.
type threads struct {
	taken map[string][]time.Time // conversation id → when, oldest first, within threadWindow
}

// allow reports whether one more mention of conv may be answered at now,
// with extra more taken already in the poll under way.
func (t *threads) allow(conv string, extra int, now time.Time) bool {
	n := extra
	for _, at := range t.taken[conv] {
		if now.Sub(at) < threadWindow {
			n++
		}
	}
	return n < maxThreadReplies
}

// add counts a mention of conv taken for an answer at now.
func (t *threads) add(conv string, now time.Time) {
	if t.taken == nil {
		t.taken = map[string][]time.Time{}
	}
	t.taken[conv] = append(t.taken[conv], now)
}

// forget drops what is older than threadWindow at now, so the counts
// hold only the conversations answered within it.
func (t *threads) forget(now time.Time) {
	for conv, times := range t.taken {
		i := 0
		for i < len(times) && now.Sub(times[i]) >= threadWindow {
			i++
		}
		if i == len(times) {
			delete(t.taken, conv)
		} else if i > 0 {
			t.taken[conv] = append([]time.Time(nil), times[i:]...)
		}
	}
}
