package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// TokenVar is the secret holding the bot token from BotFather.
const TokenVar = "TELEGRAM_BOT_TOKEN"

// DefaultAPIURL is Telegram's Bot API.
const DefaultAPIURL = "https://api.telegram.org"

// Platform connects agents to Telegram.
type Platform struct {
	// APIURL is the Bot API's base URL (TELEGRAM_API_URL).
	APIURL string
	// PollTimeout is how long Telegram holds a getUpdates request (50s);
	// it is also how long a stopping connection may wait for it.
	PollTimeout time.Duration
	// Client makes the HTTP calls; nil for a default client (see client).
	Client *http.Client
	once   sync.Once
}

var _ connect.Platform = (*Platform)(nil)

// Name is "telegram".
func (p *Platform) Name() string { return "telegram" }

// Credentials is TELEGRAM_BOT_TOKEN.
func (p *Platform) Credentials() []string { return []string{TokenVar} }

func (p *Platform) apiURL() string {
	if p.APIURL == "" {
		return DefaultAPIURL
	}
	return p.APIURL
}

func (p *Platform) pollTimeout() time.Duration {
	if p.PollTimeout < time.Second {
		return 50 * time.Second
	}
	return p.PollTimeout
}

// client is the Client given, else one shared by the platform's bots
// whose wait for response headers outlasts a long poll.
func (p *Platform) client() *http.Client {
	p.once.Do(func() {
		if p.Client == nil {
			p.Client = connect.HTTPClient(p.pollTimeout() + 15*time.Second)
		}
	})
	return p.Client
}

// Settings are the members of an agent's settings.telegram that this
// package reads; connect reads the others (allowedUsers, userRateLimit,
// adminUsers).
type Settings struct {
	GroupIDs          []string `json:"groupIds"`
	RespondToCommands *bool    `json:"respondToCommands"`
}

// session is one connection of a bot: who it is and how it answers.
type session struct {
	p        *Platform
	c        *connect.Conn
	b        *bot.Bot
	me       *models.User
	settings Settings
	// trouble is the reason shown while polls fail, "" when they work.
	trouble string
}

// Run connects the bot, then polls for updates until ctx ends. A rejected
// token or a bot used by another agent is a *connect.FatalError.
func (p *Platform) Run(ctx context.Context, c *connect.Conn) error {
	token := c.Secrets.String(TokenVar)
	b, err := bot.New(token, bot.WithServerURL(p.apiURL()), bot.WithSkipGetMe(),
		bot.WithHTTPClient(p.pollTimeout(), p.client()), bot.WithErrorsHandler(func(error) {}))
	if err != nil {
		return fmt.Errorf("telegram: new bot: %w", err)
	}
	me, err := b.GetMe(ctx)
	if errors.Is(err, bot.ErrorUnauthorized) {
		return &connect.FatalError{Reason: "Telegram rejected TELEGRAM_BOT_TOKEN (401 Unauthorized)"}
	}
	if err != nil {
		return fmt.Errorf("telegram: getMe: %w", redact(err, token))
	}
	s := &session{p: p, c: c, b: b, me: me}
	if len(c.Settings) > 0 {
		_ = json.Unmarshal(c.Settings, &s.settings) // validated on write; unknown shapes mean defaults
	}
	// The bot is claimed first (a bot in use elsewhere must not lose its
	// updates to this connection), then the backlog measured before the
	// connection says it is connected: a message sent once it shows
	// connected is never taken for backlog.
	if err := c.ClaimBot(ctx, strconv.FormatInt(me.ID, 10), me.Username); err != nil {
		return err
	}
	next, err := s.firstOffset(ctx, token)
	if err != nil {
		return err
	}
	if err := c.MarkConnected(ctx); err != nil {
		return err
	}
	s.trouble = "" // the 409s pending waited out are over
	c.Chats(s.chatReply)
	if err := c.Resume(ctx, s.answer); err != nil {
		return err
	}
	return s.poll(ctx, token, next)
}

// poll long-polls from offset next and takes the updates to answer, with
// the cursor after them, in one write: an update is confirmed to Telegram
// (by the next poll's offset) only once it is stored. It polls only while
// the connection has room, so a busy bot leaves updates with Telegram.
func (s *session) poll(ctx context.Context, token string, next int64) error {
	var backoff time.Duration
	for s.c.Room(ctx) {
		updates, err := getUpdates(ctx, s.p.client(), s.p.apiURL(), token, next, s.p.pollTimeout())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if backoff, err = s.wait(ctx, token, err, backoff); err != nil {
				return err
			}
			continue
		}
		backoff = 0
		if err := s.recovered(ctx); err != nil {
			return err
		}
		if len(updates) == 0 {
			continue
		}
		var msgs []connect.Inbound
		for _, u := range updates {
			if m, ok := s.inbound(u); ok {
				msgs = append(msgs, m)
			}
		}
		last := updates[len(updates)-1].ID
		if err := s.c.Take(ctx, s.cursor(last), msgs, s.answer); err != nil {
			return err
		}
		next = last + 1
	}
	return nil
}

// firstOffset is the offset to poll from: after the stored cursor, or, on
// the first connection of this bot, after its newest pending update (which
// is stored as the cursor, so the backlog is never answered).
func (s *session) firstOffset(ctx context.Context, token string) (int64, error) {
	id, ok, err := cursorOf(s.c.Cursor(), s.me.ID)
	if err != nil || ok {
		return id + 1, err
	}
	last, err := s.pending(ctx, token)
	if err != nil {
		return 0, err
	}
	id = 0
	if len(last) > 0 {
		id = last[len(last)-1].ID
	}
	if err := s.c.SaveCursor(ctx, s.cursor(id)); err != nil {
		return 0, err
	}
	return id + 1, nil
}

// pending asks for the bot's pending updates without waiting. A 409 (a
// webhook set on the bot, or another program polling it) is how the bot
// is set up, not an outage: it is shown and waited out here, as a poll's
// is, for the connection to go on once the operator fixes it. Returned, it
// would end the connection, which reconnects again and again, flapping its
// state, and is given up to another replica that fares no better.
func (s *session) pending(ctx context.Context, token string) ([]models.Update, error) {
	var backoff time.Duration
	for {
		last, err := getUpdates(ctx, s.p.client(), s.p.apiURL(), token, -1, 0)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Code != http.StatusConflict || ctx.Err() != nil {
			return last, s.fatal(err)
		}
		if backoff, err = s.wait(ctx, token, err, backoff); err != nil {
			return nil, err
		}
	}
}

// cursor is the stored form of the last update taken: with the bot it
// came from.
func (s *session) cursor(updateID int64) string { return fmt.Sprintf("%d:%d", s.me.ID, updateID) }

// cursorOf reads a stored cursor, "<bot id>:<update id>", as bot botID's:
// update ids are per bot, so another bot's cursor (the token was changed
// to another bot's) is none, and the bot starts as on a first connection.
// A bare update id, stored before cursors named their bot, is taken as
// this bot's.
func cursorOf(stored string, botID int64) (updateID int64, ok bool, err error) {
	if stored == "" {
		return 0, false, nil
	}
	bot, id, named := strings.Cut(stored, ":")
	if !named {
		id = bot
	} else if bot != strconv.FormatInt(botID, 10) {
		return 0, false, nil
	}
	updateID, err = strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("telegram: stored cursor %q: %w", stored, err)
	}
	return updateID, true, nil
}

// wait backs off after a failed poll: retry_after for 429, a growing wait
// for 409 (another poller) and transient failures; 401 is fatal.
func (s *session) wait(ctx context.Context, token string, err error, backoff time.Duration) (time.Duration, error) {
	if fe := s.fatal(err); fe != err {
		return 0, fe
	}
	if err := s.report(ctx, token, err); err != nil {
		return 0, err
	}
	backoff = min(max(2*backoff, 500*time.Millisecond), 30*time.Second)
	d := backoff
	var ae *apiError
	if errors.As(err, &ae) && ae.RetryAfter > 0 {
		d = ae.RetryAfter
	}
	s.c.Logger.Warn("telegram poll failed; waiting", "error", err, "wait", d)
	connect.Sleep(ctx, d)
	return backoff, nil
}

// report shows what failing polls mean in the connection's state, when
// that changes: a webhook set on the bot, or another program polling it,
// is an error only the operator can fix (agentd never removes another
// host's webhook); anything else is connecting while the polls are
// retried. The connection is never shown connected meanwhile.
func (s *session) report(ctx context.Context, token string, err error) error {
	state, reason := domain.ConnConnecting, "Polling Telegram fails; retrying: "+err.Error()
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == http.StatusConflict {
		state, reason = domain.ConnError, conflictReason(ctx, s, token)
	}
	if reason == s.trouble {
		return nil
	}
	s.trouble = reason
	return s.c.Trouble(ctx, state, reason)
}

// conflictReason says why Telegram refuses to be polled (409) and how to
// fix it: a webhook is set (named by its host: its path may hold a
// secret), or another program polls the bot.
func conflictReason(ctx context.Context, s *session, token string) string {
	url, err := webhookURL(ctx, s.p.client(), s.p.apiURL(), token)
	if err == nil && url != "" {
		host := url
		if u, perr := neturl.Parse(url); perr == nil && u.Host != "" {
			host = u.Host
		}
		return "A webhook is set on this bot (at " + host + "), so Telegram refuses polling (409 Conflict). " +
			"agentd does not remove another host's webhook: remove it with the Bot API's deleteWebhook " +
			"(https://api.telegram.org/bot<token>/deleteWebhook) and the connection resumes by itself."
	}
	return "Another program polls this bot (Telegram answers 409 Conflict): stop it, or give this agent " +
		"another bot's token; the connection resumes by itself once it is the only poller."
}

// recovered shows the connection connected again after failing polls.
func (s *session) recovered(ctx context.Context) error {
	if s.trouble == "" {
		return nil
	}
	s.trouble = ""
	return s.c.MarkConnected(ctx)
}

// fatal turns a 401 into a *connect.FatalError and returns other errors
// unchanged.
func (s *session) fatal(err error) error {
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == http.StatusUnauthorized {
		return &connect.FatalError{Reason: "Telegram rejected TELEGRAM_BOT_TOKEN (401 Unauthorized)"}
	}
	return err
}
