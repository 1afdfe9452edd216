package x

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/turn"
)

// poll runs once every poll interval until ctx ends. Rejected credentials
// end the connection; an endpoint the access tier does not allow stops
// this loop only (posting may still work) and says so in the connection's
// reason, naming setting, the switch of the loop; failures that last
// failingAfter polls are shown there too until a poll works again.
func (s *session) poll(ctx context.Context, what, setting string, once func(context.Context) error) error {
	failed := 0
	for {
		err := once(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failed = 0
			s.recovered(ctx, what)
		case kindOf(err) == kindAuth:
			return s.fatal(err)
		case kindOf(err) == kindForbidden:
			s.c.Logger.Warn("X refused "+what+"; the account's X API access tier may not include it: polling stopped", "error", err)
			s.report(ctx, what, unavailable(what, setting, err))
			return nil
		default:
			failed++
			s.c.Logger.Warn("X "+what+" poll failed", "error", err, "failures", failed)
			if failed >= failingAfter {
				s.report(ctx, what, failing(what, err))
			}
		}
		if !connect.Sleep(ctx, s.p.pollInterval()) {
			return nil
		}
	}
}

func (s *session) mentionLoop(ctx context.Context) error {
	return s.poll(ctx, "mentions", "enableMentions", s.pollMentions)
}

func (s *session) dmLoop(ctx context.Context) error {
	return s.poll(ctx, "direct messages", "enableDMs", s.pollDMs)
}

// DropBeyondReach is why Drop counts messages never read: more came
// between two polls than X's mentions timeline reaches (its 800 newest),
// or than maxPages pages of direct-message events hold. Each count is one
// gap, of at least one message.
const DropBeyondReach = "beyond_reach"

// maxPending bounds the mentions fetched and waiting for a later poll's
// answers; while that many wait, newer ones wait with X.
const maxPending = mentionReach

// pollMentions fetches the mentions after the newest one fetched, every
// page of them, and takes the answers of at most maxRepliesPerPoll of the
// waiting ones, oldest first. The stored cursor moves only past the
// mentions taken or passed over, so the rest are answered by later polls,
// or by the next session from the cursor if this one ends first. The
// first poll only notes the newest mention.
func (s *session) pollMentions(ctx context.Context) error {
	since := s.cursor().Mentions
	if since == "" {
		tweets, err := s.api.newestMentions(ctx, s.me.ID)
		if err != nil {
			return err
		}
		last := "0"
		for _, t := range tweets {
			if newer(t.ID, last) {
				last = t.ID
			}
		}
		return s.take(ctx, func(c *cursor) { c.Mentions = last }, nil)
	}
	if err := s.fetchMentions(ctx, since); err != nil {
		return err
	}
	now := s.p.now()
	s.threads.forget(now)
	last, msgs, walked := s.pickMentions(since, now)
	if last == since {
		return nil
	}
	if err := s.take(ctx, func(c *cursor) { c.Mentions = last }, msgs); err != nil {
		return err
	}
	s.pending = s.pending[walked:]
	for _, m := range msgs {
		s.threads.add(strings.TrimPrefix(m.Chat, threadPrefix), now)
	}
	return nil
}

// fetchMentions adds the mentions after the newest one waiting (since,
// the cursor, when none is) to s.pending, oldest first. A gap that X's
// reach leaves between them is logged and counted.
func (s *session) fetchMentions(ctx context.Context, since string) error {
	if len(s.pending) >= maxPending {
		return nil
	}
	from := since
	if len(s.pending) > 0 {
		from = s.pending[len(s.pending)-1].ID
	}
	tweets, complete, err := s.api.mentions(ctx, s.me.ID, from)
	if err != nil {
		return err
	}
	sort.Slice(tweets, func(i, j int) bool { return newer(tweets[j].ID, tweets[i].ID) })
	if !complete && len(tweets) > 0 {
		s.c.Logger.Warn("X mentions skipped: more came between two polls than X's mentions timeline reaches (the 800 newest), "+
			"so some after the last one seen were never listed", "after", from, "oldest_listed", tweets[0].ID)
		s.c.Drop(DropBeyondReach, "mentions")
	}
	for _, t := range tweets {
		if newer(t.ID, from) {
			s.pending = append(s.pending, t)
			from = t.ID
		}
	}
	return nil
}

// threadPrefix starts the chat of a mention: its conversation.
const threadPrefix = "thread:"

// pickMentions walks the waiting mentions, oldest first, and picks the
// ones to answer, at most maxRepliesPerPoll: the account's own (and every
// one while enableReplies is off) are passed over, and the thread limit
// or Admit may refuse one (a drop, counted). It returns the id the cursor
// moves to, the messages to take, and how many waiting mentions it
// walked.
func (s *session) pickMentions(since string, now time.Time) (last string, msgs []connect.Inbound, walked int) {
	last = since
	replies := on(s.settings.EnableReplies, true)
	picked := map[string]int{} // conversation → mentions picked in it
	for _, t := range s.pending {
		if t.AuthorID != s.me.ID && replies {
			if len(msgs) == maxRepliesPerPoll {
				break
			}
			chat := threadPrefix + t.ConversationID
			switch {
			case !s.threads.allow(t.ConversationID, picked[t.ConversationID], now):
				s.c.Drop(DropThreadLimit, chat)
			case s.c.Admit(connect.Sender{ID: t.AuthorID}, false, chat):
				msgs = append(msgs, inbound(mentionPrefix+t.ID, chat, t))
				picked[t.ConversationID]++
			}
		}
		last = t.ID
		walked++
	}
	return last, msgs, walked
}

// The prefixes of the ids of the messages a connection takes, by kind.
const (
	mentionPrefix = "mention:"
	dmPrefix      = "dm:"
	postPrefix    = "post:"
)

// inbound is a mention or direct message to take, with v as its payload.
func inbound(id, chat string, v any) connect.Inbound {
	payload, _ := json.Marshal(v) // tweets and events always marshal
	return connect.Inbound{ID: id, Chat: chat, Payload: payload}
}

// answer answers a taken mention or direct message, or posts a slot's
// post.
func (s *session) answer(ctx context.Context, in connect.Inbound) {
	var err error
	switch {
	case strings.HasPrefix(in.ID, postPrefix):
		s.post(ctx, in)
	case strings.HasPrefix(in.ID, mentionPrefix):
		var t tweet
		if err = json.Unmarshal(in.Payload, &t); err == nil {
			s.answerMention(ctx, in, t)
		}
	case strings.HasPrefix(in.ID, dmPrefix):
		var e dmEvent
		if err = json.Unmarshal(in.Payload, &e); err == nil {
			s.answerDM(ctx, in, e)
		}
	}
	if err != nil {
		s.c.Logger.Warn("X message unreadable", "error", err)
	}
}

// answerMention replies to t in its thread, then likes and reposts it when
// switched on.
func (s *session) answerMention(ctx context.Context, in connect.Inbound, t tweet) {
	out := s.sending("reply", func(ctx context.Context, text string) error { return s.api.post(ctx, text, t.ID) })
	out.Then = func(ctx context.Context) {
		if on(s.settings.AutoLike, false) {
			s.act("like", func() error { return s.api.like(ctx, s.me.ID, t.ID) })
		}
		if on(s.settings.AutoRetweet, false) {
			s.act("repost", func() error { return s.api.repost(ctx, s.me.ID, t.ID) })
		}
	}
	s.c.Answer(ctx, in, turn.Input{Text: t.Text, Conv: domain.ConversationRef{RoomID: "twitter:" + t.ConversationID},
		UserID: "twitter:" + t.AuthorID, Channel: "a thread on X where you were mentioned",
		Shape: turn.Shaping{MaxChars: maxPost, Length: weightedLength}}, out)
}

// pollDMs fetches the direct-message events after the stored one, every
// page of them, and queues an answer to each, oldest first, never the
// account's own. The first poll only notes the newest event.
func (s *session) pollDMs(ctx context.Context) error {
	since := s.cursor().DMs
	events, complete, err := s.api.dmEvents(ctx, since)
	if err != nil {
		return err
	}
	sort.Slice(events, func(i, j int) bool { return newer(events[j].ID, events[i].ID) })
	if !complete && len(events) > 0 {
		s.c.Logger.Warn("X direct messages skipped: more came between two polls than one poll reads",
			"after", since, "oldest_read", events[0].ID)
		s.c.Drop(DropBeyondReach, "direct messages")
	}
	last := since
	if since == "" {
		last = "0"
		if len(events) > 0 {
			last = events[len(events)-1].ID
		}
		events = nil
	}
	var msgs []connect.Inbound
	for _, e := range events {
		if !newer(e.ID, last) {
			continue
		}
		chat := "dm:" + e.SenderID
		if e.SenderID != s.me.ID && e.EventType == "MessageCreate" && e.Text != "" && s.c.Admit(connect.Sender{ID: e.SenderID}, true, chat) {
			msgs = append(msgs, inbound(dmPrefix+e.ID, chat, e))
		}
		last = e.ID
	}
	if last == since {
		return nil
	}
	return s.take(ctx, func(c *cursor) { c.DMs = last }, msgs)
}

// answerDM answers a direct message in the sender's direct conversation.
func (s *session) answerDM(ctx context.Context, in connect.Inbound, e dmEvent) {
	user := "twitter:" + e.SenderID
	s.c.Answer(ctx, in, turn.Input{Text: e.Text, Conv: domain.ConversationRef{UserID: user}, UserID: user,
		Channel: "direct messages on X"},
		s.sending("direct message", func(ctx context.Context, text string) error { return s.api.sendDM(ctx, e.SenderID, text) }))
}

// postLoop posts on the postFrequency schedule until ctx ends: the first
// slot one interval (±20%) after the first connection, each next one an
// interval (±20%) after the last, kept in the cursor so a restart neither
// posts a slot twice nor skips one.
func (s *session) postLoop(ctx context.Context) error {
	every := s.settings.frequency()
	if every == 0 {
		return nil
	}
	for {
		next := s.cursor().NextPost
		now := s.p.now()
		switch {
		case next.IsZero():
			if err := s.update(ctx, func(c *cursor) { c.NextPost = now.Add(connect.Jitter(every)) }); err != nil {
				return err
			}
			continue
		case !now.Before(next):
			following := next.Add(connect.Jitter(every))
			if !following.After(now) { // long down: one post now, no burst of missed ones
				following = now.Add(connect.Jitter(every))
			}
			// The slot is taken with the next one stored: it is posted
			// once, even by the next holder if this one stops first.
			slot := inbound(postPrefix+strconv.FormatInt(next.Unix(), 10), "posts", next)
			if err := s.take(ctx, func(c *cursor) { c.NextPost = following }, []connect.Inbound{slot}); err != nil {
				return err
			}
			continue
		}
		if !connect.Sleep(ctx, min(s.p.scheduleCheck(), next.Sub(now))) {
			return nil
		}
	}
}

// post writes and posts the post of a slot (shortened to maxPost by the
// turn); a failure skips the slot.
func (s *session) post(ctx context.Context, in connect.Inbound) {
	s.c.Answer(ctx, in, turn.Input{Shape: turn.Shaping{Post: true, MaxChars: maxPost, Length: weightedLength},
		Conv: domain.ConversationRef{RoomID: "twitter:posts"}, Channel: "your feed on X"},
		s.sending("post", func(ctx context.Context, text string) error { return s.api.post(ctx, text, "") }))
}

// sending is the Reply of an answer that call sends whole, in one post or
// direct message (a post's turn shortens it to maxPost); what names it in
// the log (act).
func (s *session) sending(what string, call func(ctx context.Context, text string) error) connect.Reply {
	return connect.Reply{Send: func(ctx context.Context, _ int, text string) error {
		return s.act(what, func() error { return call(ctx, text) })
	}}
}

// act makes one call with a side effect of an answer (after Answering)
// and returns its error, reported: a duplicate post is skipped and
// logged; rejected credentials end the connection.
func (s *session) act(what string, call func() error) error {
	err := call()
	switch {
	case err == nil:
	case kindOf(err) == kindDuplicate:
		s.c.Logger.Warn("X "+what+" skipped: X refused it as duplicate content", "error", err)
	case kindOf(err) == kindAuth:
		s.fail(s.fatal(err))
	default:
		s.c.Logger.Warn("X "+what+" not sent", "error", err)
	}
	return err
}
