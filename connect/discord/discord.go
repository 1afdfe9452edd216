// Package discord connects agents to Discord bots over the gateway, through
// github.com/bwmarrin/discordgo. It implements connect.Platform; discordtest
// is a wire-format test server.
//
// discordgo's own reconnect loop is off (it retries forever, also after
// close codes that no retry can fix, and Close does not stop it): each Run
// is one gateway session, and the runtime's runner reconnects with capped,
// jittered back-off, while Platform spaces the IDENTIFYs of one bot.
package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// TokenVar is the secret holding the bot token from the Developer Portal.
const TokenVar = "DISCORD_API_TOKEN"

// DefaultAPIURL is Discord's API host.
const DefaultAPIURL = "https://discord.com"

// Intents are the gateway intents the bot asks for; MessageContent is
// privileged and must be enabled in the Developer Portal.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// Gateway close codes that no retry can fix.
const (
	closeAuthenticationFailed = 4004
	closeDisallowedIntents    = 4014
)

// fatalCloses are the other close codes no retry can fix, with what to
// do: retrying them spends the bot's daily IDENTIFY budget (about 1,000),
// past which Discord resets the token.
var fatalCloses = map[int]string{
	4010: "Discord refused the gateway session (invalid shard, close code 4010): this bot needs a sharded connection, which agentd does not open",
	4011: "Discord requires sharding for this bot (close code 4011: it is in too many servers for one gateway connection), which agentd does not do yet",
	4012: "Discord refused the gateway API version (close code 4012): upgrade agentd",
	4013: "Discord refused the gateway intents as invalid (close code 4013): upgrade agentd",
}

// Reasons of a connection in error, saying what to fix.
const (
	reasonBadToken = "Discord rejected DISCORD_API_TOKEN (authentication failed, close code 4004): " +
		"copy the bot's token from the Developer Portal (Bot, Reset Token) into settings.secrets"
	reasonIntents = "Discord refused the gateway intents (disallowed intents, close code 4014): " +
		"enable the Message Content Intent in the Developer Portal (Bot, Privileged Gateway Intents)"
)

// Platform connects agents to Discord.
type Platform struct {
	// APIURL is where the API is reached (DISCORD_API_URL): requests to
	// discord.com go to its scheme and host instead. The gateway address
	// comes from its GET /api/v9/gateway.
	APIURL string
	// Transport makes the HTTP calls; nil for http.DefaultTransport.
	Transport http.RoundTripper
	// IdentifyEvery is the least time between two IDENTIFYs of one bot
	// (5s, Discord's identify rate): a flapping connection cannot burn
	// the bot's daily identify budget.
	IdentifyEvery time.Duration

	mu           sync.Mutex
	nextIdentify map[string]time.Time // by token
}

var _ connect.Platform = (*Platform)(nil)

// Name is "discord".
func (p *Platform) Name() string { return "discord" }

// Credentials is DISCORD_API_TOKEN.
func (p *Platform) Credentials() []string { return []string{TokenVar} }

// Settings are the members of an agent's settings.discord.
type Settings struct {
	// RespondToMentions (default true): in guild channels, answer only
	// messages that mention or reply to the bot; false answers every
	// message in Channels.
	RespondToMentions *bool `json:"respondToMentions"`
	// RespondToDMs (default true) answers direct messages.
	RespondToDMs *bool `json:"respondToDMs"`
	// Channels, when non-empty, are the only guild channels answered (ids
	// or names).
	Channels []string `json:"channels"`
	// ModerationEnabled is stored and echoed; it does not act yet.
	ModerationEnabled bool `json:"moderationEnabled"`
}

// Run opens one gateway session and serves it until ctx ends (nil) or the
// session drops (an error: the runner reconnects with back-off). A
// rejected token or disallowed intents are a *connect.FatalError.
func (p *Platform) Run(ctx context.Context, c *connect.Conn) error {
	token := c.Secrets.String(TokenVar)
	if !p.waitIdentify(ctx, token) {
		return nil
	}
	s := newSession(ctx, p, c, token)
	if len(c.Settings) > 0 {
		_ = json.Unmarshal(c.Settings, &s.settings) // validated on write; unknown shapes mean defaults
	}
	dropped := make(chan struct{}, 1)
	s.dg.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		select {
		case dropped <- struct{}{}:
		default:
		}
	})
	s.dg.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) { s.me.Store(r.User) })
	s.dg.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { s.handle(m.Message) })
	if err := s.open(); err != nil {
		return openError(err)
	}
	defer s.close()
	me := s.me.Load()
	if me == nil {
		return errors.New("discord: the gateway sent no READY")
	}
	if err := c.Connected(ctx, me.ID, me.Username); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-dropped:
		return errors.New("discord: the gateway connection dropped")
	}
}

// waitIdentify waits for the bot's next IDENTIFY slot and reports false
// when ctx ends first. Slots are reserved in turn, so two connections of
// one bot (another agent's, a replacing runner) are spaced too.
func (p *Platform) waitIdentify(ctx context.Context, token string) bool {
	every := p.IdentifyEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	now := time.Now()
	p.mu.Lock()
	if p.nextIdentify == nil {
		p.nextIdentify = map[string]time.Time{}
	}
	for t, next := range p.nextIdentify {
		if next.Before(now) {
			delete(p.nextIdentify, t)
		}
	}
	at := now
	if next := p.nextIdentify[token]; next.After(at) {
		at = next
	}
	p.nextIdentify[token] = at.Add(every)
	p.mu.Unlock()
	return connect.Sleep(ctx, time.Until(at))
}

// openError turns the close codes and statuses that no retry can fix into
// a *connect.FatalError, and returns other errors wrapped.
func openError(err error) error {
	var ce *websocket.CloseError
	var re *discordgo.RESTError
	switch {
	case errors.As(err, &ce) && ce.Code == closeAuthenticationFailed,
		errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized:
		return &connect.FatalError{Reason: reasonBadToken}
	case errors.As(err, &ce) && ce.Code == closeDisallowedIntents:
		return &connect.FatalError{Reason: reasonIntents}
	case errors.As(err, &ce) && fatalCloses[ce.Code] != "":
		return &connect.FatalError{Reason: fatalCloses[ce.Code]}
	}
	return fmt.Errorf("discord: open gateway: %w", err)
}

// session is one gateway session of a bot: who it is and how it answers.
type session struct {
	c        *connect.Conn
	dg       *discordgo.Session
	settings Settings
	me       atomic.Pointer[discordgo.User]
	ctx      context.Context // the Run's

	// conn is the gateway's network connection, to end a blocked Open.
	connMu sync.Mutex
	conn   net.Conn

	chanMu   sync.Mutex
	channels map[string]*discordgo.Channel // fetched channels, by id
}

func newSession(ctx context.Context, p *Platform, c *connect.Conn, token string) *session {
	s := &session{c: c, ctx: ctx, channels: map[string]*discordgo.Channel{}}
	dg, _ := discordgo.New("Bot " + token) // New never fails
	dg.ShouldReconnectOnError = false
	dg.ShouldReconnectVoiceOnSessionError = false
	dg.Compress = false
	dg.Identify.Compress = false
	dg.Identify.Intents = Intents
	dg.SyncEvents = true // handlers only queue work: no goroutine per event
	dg.LogLevel = -1     // failures come back as errors and are logged by the runtime
	dg.State.TrackMembers, dg.State.TrackRoles, dg.State.TrackEmojis = false, false, false
	dg.State.TrackVoice, dg.State.TrackPresences, dg.State.TrackStickers = false, false, false
	dg.Client = &http.Client{Timeout: 20 * time.Second, Transport: &rewrite{base: p.Transport, target: p.apiURL(), ctx: ctx}}
	dg.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 20 * time.Second, NetDialContext: s.dial}
	s.dg = dg
	return s
}

func (p *Platform) apiURL() *url.URL {
	u, err := url.Parse(p.APIURL)
	if p.APIURL == "" || err != nil {
		u, _ = url.Parse(DefaultAPIURL)
	}
	return u
}

// open opens the gateway. discordgo's Open takes no context: ending the
// Run's closes the network connection under it, which ends a blocked Open.
// A failed Open has started no goroutine.
func (s *session) open() error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-s.ctx.Done():
			s.connMu.Lock()
			if s.conn != nil {
				_ = s.conn.Close()
			}
			s.connMu.Unlock()
		case <-done:
		}
	}()
	return s.dg.Open()
}

// close closes the session. discordgo's reader and heartbeat goroutines
// leave as soon as they see it: the reader on its next read of the closed
// connection, the heartbeat at once.
func (s *session) close() {
	if err := s.dg.Close(); err != nil {
		s.c.Logger.Debug("close discord gateway", "error", err)
	}
}

// dial dials the gateway with the Run's context and keeps the connection,
// for open to close.
func (s *session) dial(_ context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(s.ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("discord: dial gateway: %w", err)
	}
	s.connMu.Lock()
	s.conn = nc
	s.connMu.Unlock()
	return nc, nil
}

// rewrite sends discordgo's requests for discord.com to target's scheme
// and host; requests made without a context get the Run's, so a stopping
// connection does not wait for them.
type rewrite struct {
	base   http.RoundTripper
	target *url.URL
	ctx    context.Context
}

func (r *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if ctx.Done() == nil {
		ctx = r.ctx
	}
	out := req.Clone(ctx)
	out.URL.Scheme, out.URL.Host, out.Host = r.target.Scheme, r.target.Host, ""
	base := r.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(out)
}
