package x

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/agentd/agentd/connect"
)

// The secrets a connection signs its calls with (OAuth 1.0a user context).
const (
	APIKeyVar            = "TWITTER_API_KEY"
	APISecretKeyVar      = "TWITTER_API_SECRET_KEY"
	AccessTokenVar       = "TWITTER_ACCESS_TOKEN"
	AccessTokenSecretVar = "TWITTER_ACCESS_TOKEN_SECRET"
)

// DefaultAPIURL is the X API.
const DefaultAPIURL = "https://api.x.com"

// DefaultPollInterval is the gap between polls of mentions and of DMs.
const DefaultPollInterval = 2 * time.Minute

// maxPost is X's limit on a post's length.
const maxPost = 280

// maxRepliesPerPoll caps the mentions answered per poll; the rest wait for
// the next one.
const maxRepliesPerPoll = 10

// Platform connects agents to X.
type Platform struct {
	// APIURL is the X API's base URL (TWITTER_API_URL).
	APIURL string
	// PollInterval is the gap between polls of mentions and of DMs
	// (TWITTER_POLL_INTERVAL, 2m).
	PollInterval time.Duration
	// Client makes the HTTP calls (before signing); nil for a default one
	// (see client).
	Client *http.Client
	once   sync.Once
	// Now is the clock of the post schedule and of the thread limit; nil
	// for time.Now.
	Now func() time.Time
	// ScheduleCheck is the longest gap between looks at the post schedule
	// (30s), so a post is at most that late.
	ScheduleCheck time.Duration
}

var _ connect.Platform = (*Platform)(nil)

// Name is "twitter", the platform's id in clients.
func (p *Platform) Name() string { return "twitter" }

// Credentials are the four OAuth 1.0a secrets.
func (p *Platform) Credentials() []string {
	return []string{APIKeyVar, APISecretKeyVar, AccessTokenVar, AccessTokenSecretVar}
}

func (p *Platform) apiURL() string {
	if p.APIURL == "" {
		return DefaultAPIURL
	}
	return p.APIURL
}

func (p *Platform) pollInterval() time.Duration {
	if p.PollInterval <= 0 {
		return DefaultPollInterval
	}
	return p.PollInterval
}

func (p *Platform) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

func (p *Platform) scheduleCheck() time.Duration {
	if p.ScheduleCheck <= 0 {
		return 30 * time.Second
	}
	return p.ScheduleCheck
}

// client is the Client given, else one shared by the platform's accounts.
func (p *Platform) client() *http.Client {
	p.once.Do(func() {
		if p.Client == nil {
			p.Client = connect.HTTPClient(connect.CallTimeout)
		}
	})
	return p.Client
}

// Settings are the members of an agent's settings.twitter; nil switches
// take their defaults.
type Settings struct {
	PostFrequency  string `json:"postFrequency"`
	EnableMentions *bool  `json:"enableMentions"`
	EnableReplies  *bool  `json:"enableReplies"`
	EnableDMs      *bool  `json:"enableDMs"`
	AutoLike       *bool  `json:"autoLike"`
	AutoRetweet    *bool  `json:"autoRetweet"`
}

func on(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

var frequencyPattern = regexp.MustCompile(`^([1-9][0-9]*)([mhd])$`)

// frequency is the interval of postFrequency ("4h"), 0 for no posts.
func (s Settings) frequency() time.Duration {
	m := frequencyPattern.FindStringSubmatch(s.PostFrequency)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	unit := map[string]time.Duration{"m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit
}

// cursor is what a connection stores between runs. Mentions and DMs are
// the newest ids handled, "0" once polling started with none, "" before
// the first poll (which skips the backlog); NextPost is the next post's
// slot.
type cursor struct {
	// Account is the X account the ids below belong to.
	Account  string    `json:"account,omitempty"`
	Mentions string    `json:"mentions,omitempty"`
	DMs      string    `json:"dms,omitempty"`
	NextPost time.Time `json:"nextPost,omitzero"`
}

// session is one connection of an X account.
type session struct {
	p        *Platform
	c        *connect.Conn
	api      *client
	me       user
	settings Settings
	fail     context.CancelCauseFunc // ends the session with a *connect.FatalError

	mu  sync.Mutex // orders cursor updates of the loops
	cur cursor

	health health
	// pending are the mentions fetched, newer than the cursor, and not
	// taken yet (past maxRepliesPerPoll), oldest first; the mention loop's
	// own.
	pending []tweet
	threads *threads // the thread limit's counts, kept with the lease
}

// local is what a connection keeps across the Runs of its lease
// (Conn.Local).
type local struct {
	threads threads
}

// Run connects the account, then polls mentions and DMs and posts on
// schedule until ctx ends. Rejected credentials or an account used by
// another agent are a *connect.FatalError.
func (p *Platform) Run(ctx context.Context, c *connect.Conn) error {
	s := &session{p: p, c: c}
	kept, ok := c.Local.(*local)
	if !ok {
		kept = &local{}
		c.Local = kept
	}
	s.threads = &kept.threads
	if len(c.Settings) > 0 {
		_ = json.Unmarshal(c.Settings, &s.settings) // validated on write; unknown shapes mean defaults
	}
	if cur := c.Cursor(); cur != "" {
		if err := json.Unmarshal([]byte(cur), &s.cur); err != nil {
			return fmt.Errorf("x: stored cursor %q: %w", cur, err)
		}
	}
	s.api = newClient(p.apiURL(), p.client(), c.Secrets.String(APIKeyVar), c.Secrets.String(APISecretKeyVar),
		c.Secrets.String(AccessTokenVar), c.Secrets.String(AccessTokenSecretVar))
	me, err := s.api.me(ctx)
	if kindOf(err) == kindForbidden {
		return &connect.FatalError{Reason: fmt.Sprintf("X refuses this app even the account lookup (users/me; X answered %s): "+
			"the app must belong to a Project with X API access", describe(err))}
	}
	if err != nil {
		return s.fatal(err)
	}
	s.me = me
	s.cur = s.cur.of(me.ID)
	if err := c.Connected(ctx, me.ID, me.Username); err != nil {
		return err
	}
	if err := c.Resume(ctx, s.answer); err != nil {
		return err
	}
	parent := ctx
	ctx, s.fail = context.WithCancelCause(ctx)
	defer s.fail(nil)
	loops := []func(context.Context) error{s.postLoop}
	if on(s.settings.EnableMentions, true) {
		loops = append(loops, s.mentionLoop)
	}
	if on(s.settings.EnableDMs, false) {
		loops = append(loops, s.dmLoop)
	}
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop(ctx); err != nil {
				s.fail(err)
			}
		}()
	}
	wg.Wait()
	// With every loop done (nothing enabled, or not allowed by the access
	// tier) the connection stays up until it is stopped or a queued answer
	// finds the credentials rejected.
	<-ctx.Done()
	if parent.Err() != nil {
		return nil
	}
	return context.Cause(ctx)
}

// fatal turns rejected credentials into a *connect.FatalError and returns
// other errors unchanged.
func (s *session) fatal(err error) error {
	if kindOf(err) == kindAuth {
		return &connect.FatalError{Reason: fmt.Sprintf("X rejected the credentials (%s): check %s, %s, %s and %s and the app's read and write permission",
			err, APIKeyVar, APISecretKeyVar, AccessTokenVar, AccessTokenSecretVar)}
	}
	return err
}

// of is the cursor as account's: another account's (the credentials now
// name another account) is none, so that account starts as on a first
// connection instead of reading its mentions from the other's ids. A
// cursor stored before cursors named their account is taken as account's.
func (c cursor) of(account string) cursor {
	if c.Account != "" && c.Account != account {
		c = cursor{}
	}
	c.Account = account
	return c
}

// update changes the cursor and stores it.
func (s *session) update(ctx context.Context, change func(*cursor)) error {
	return s.store(change, func(raw string) error { return s.c.SaveCursor(ctx, raw) })
}

// take stores the cursor as change leaves it together with msgs, taken
// into the connection's inbox.
func (s *session) take(ctx context.Context, change func(*cursor), msgs []connect.Inbound) error {
	return s.store(change, func(raw string) error { return s.c.Take(ctx, raw, msgs, s.answer) })
}

// store changes the cursor, kept once save has stored it.
func (s *session) store(change func(*cursor), save func(raw string) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.cur
	change(&next)
	raw, _ := json.Marshal(next)
	if err := save(string(raw)); err != nil {
		return err
	}
	s.cur = next
	return nil
}

func (s *session) cursor() cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// newer reports whether X id a is after id b (ids are decimal numbers that
// grow with time; "" and "0" are before every id).
func newer(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
