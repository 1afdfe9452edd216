// Package discord connects agents to Discord bots over the gateway. It
// implements connect.Platform: rules.go decides which messages to answer,
// reads each back into a turn and sends the reply, and
// connect.Conn.Answer does the rest. An approval message goes to an
// admin's DM with two buttons (message components), whose presses come
// back as INTERACTION_CREATE and are answered through the interaction's
// callback. discordtest is a wire-format test server.
//
// github.com/bwmarrin/discordgo serves the REST API, the event types and
// the channel cache; the gateway client is this package's (gateway.go).
// discordgo's (v0.29) cannot be kept within Discord's limits: it resumes
// at the first gateway's address rather than resume_gateway_url,
// IDENTIFYs at once on every invalid session (even a resumable one), never
// reads the daily session start limit, and notices a dead connection only
// after five heartbeat intervals without an ACK. Each Run is one gateway
// connection; the runtime's runner reconnects with capped, jittered
// back-off, the session lives for the lease so that reconnections RESUME,
// and Platform spaces and budgets the IDENTIFYs of one bot.
package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// comes from its GET /api/v9/gateway/bot.
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

// Run serves one gateway connection of the lease's session until ctx ends
// (nil) or the connection drops (an error: the runner reconnects with
// back-off). The session outlives the connection (in c.Local), so the next
// Run of the lease RESUMEs it when Discord allows, and Discord replays the
// events missed meanwhile. A rejected token or disallowed intents are a
// *connect.FatalError.
func (p *Platform) Run(ctx context.Context, c *connect.Conn) error {
	s := p.session(c)
	s.ctx = ctx
	err := s.connect(ctx, p)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// session returns the lease's session, made by its first Run.
func (p *Platform) session(c *connect.Conn) *session {
	if s, ok := c.Local.(*session); ok {
		return s
	}
	s := newSession(p, c)
	c.Local = s
	return s
}

// waitIdentify waits for the bot's next IDENTIFY slot and reports false
// when ctx ends first. Slots are reserved in turn, so two connections of
// one bot (another agent's, a replacing runner) are spaced too.
func (p *Platform) waitIdentify(ctx context.Context, token string) bool {
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
	p.nextIdentify[token] = at.Add(p.identifyEvery())
	p.mu.Unlock()
	return connect.Sleep(ctx, time.Until(at))
}

// identifyEvery is IdentifyEvery, or its default.
func (p *Platform) identifyEvery() time.Duration {
	if p.IdentifyEvery <= 0 {
		return 5 * time.Second
	}
	return p.IdentifyEvery
}

// gatewayError turns the close codes and statuses that no retry can fix
// into a *connect.FatalError, and returns other errors wrapped.
func gatewayError(err error) error {
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
	return fmt.Errorf("discord: gateway: %w", err)
}

// session is a bot's gateway session for one lease (kept in Conn.Local):
// who it is, how it answers, and what resuming it needs. Only the Run in
// progress touches resume and ctx, so they need no lock.
type session struct {
	c        *connect.Conn
	dg       *discordgo.Session // the REST API, the IDENTIFY payload and the channel cache
	settings Settings
	me       atomic.Pointer[discordgo.User]
	resume   resumeState
	ctx      context.Context // the running Run's, for handle

	chanMu   sync.Mutex
	channels map[string]*discordgo.Channel // fetched channels, by id
}

func newSession(p *Platform, c *connect.Conn) *session {
	s := &session{c: c, channels: map[string]*discordgo.Channel{}}
	if len(c.Settings) > 0 {
		_ = json.Unmarshal(c.Settings, &s.settings) // validated on write; unknown shapes mean defaults
	}
	dg, _ := discordgo.New("Bot " + c.Secrets.String(TokenVar)) // New never fails
	dg.Identify.Compress = false
	dg.Identify.Intents = Intents
	dg.LogLevel = -1 // failures come back as errors and are logged by the runtime
	dg.State.TrackMembers, dg.State.TrackRoles, dg.State.TrackEmojis = false, false, false
	dg.State.TrackVoice, dg.State.TrackPresences, dg.State.TrackStickers = false, false, false
	dg.Client = &http.Client{Timeout: 20 * time.Second, Transport: &rewrite{base: p.Transport, target: p.apiURL()}}
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

// rewrite sends discordgo's requests for discord.com to target's scheme
// and host.
type rewrite struct {
	base   http.RoundTripper
	target *url.URL
}

func (r *rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = r.target.Scheme, r.target.Host, ""
	base := r.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(out)
}
