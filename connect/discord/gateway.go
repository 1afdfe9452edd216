package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// closeToResume closes a connection whose session is to be resumed:
// Discord ends the session of a connection closed with 1000 or 1001, and
// keeps it for a RESUME after any other code.
const closeToResume = 4000

// identifyFloor is how many session starts of the bot's daily limit are
// left unspent: below it a connection waits for the limit to reset, as
// running out makes Discord reset the bot's token.
const identifyFloor = 5

// handshakeTimeout bounds the WebSocket handshake and the wait for HELLO;
// writeTimeout bounds a write to the gateway; closeWait bounds the wait
// for Discord's answer to a close frame, so that it reads the code.
const (
	handshakeTimeout = 20 * time.Second
	writeTimeout     = 10 * time.Second
	closeWait        = time.Second
)

// reasonResuming is the connection's reason while it resumes.
const reasonResuming = "resuming the Discord gateway session after the connection dropped"

// gatewayDialer dials the gateway, at the address Discord gives (APIURL
// redirects only the REST API).
var gatewayDialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: handshakeTimeout}

// stateEvents are the dispatches that keep the channel cache (dg.State)
// current, with the type each decodes to.
var stateEvents = map[string]func() any{
	"GUILD_CREATE":     func() any { return new(discordgo.GuildCreate) },
	"GUILD_UPDATE":     func() any { return new(discordgo.GuildUpdate) },
	"GUILD_DELETE":     func() any { return new(discordgo.GuildDelete) },
	"CHANNEL_CREATE":   func() any { return new(discordgo.ChannelCreate) },
	"CHANNEL_UPDATE":   func() any { return new(discordgo.ChannelUpdate) },
	"CHANNEL_DELETE":   func() any { return new(discordgo.ChannelDelete) },
	"THREAD_CREATE":    func() any { return new(discordgo.ThreadCreate) },
	"THREAD_UPDATE":    func() any { return new(discordgo.ThreadUpdate) },
	"THREAD_DELETE":    func() any { return new(discordgo.ThreadDelete) },
	"THREAD_LIST_SYNC": func() any { return new(discordgo.ThreadListSync) },
}

// resumeState is what resuming the session needs; the zero value means
// that the next connection IDENTIFYs.
type resumeState struct {
	id  string // READY's session_id
	url string // where to resume: READY's resume_gateway_url, else where it identified
	seq int64  // the sequence number of the last dispatch received
}

// frame is a gateway payload as read.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  int64           `json:"s"`
	T  string          `json:"t"`
}

// payload is a gateway payload to send.
type payload struct {
	Op int `json:"op"`
	D  any `json:"d"`
}

// connect opens one gateway connection, resuming the session when it can,
// and serves it until ctx ends or the connection does.
func (s *session) connect(ctx context.Context, p *Platform) error {
	addr, err := s.address(ctx, p)
	if err != nil {
		return err
	}
	g, err := dial(ctx, s, addr)
	if err != nil {
		return err
	}
	return g.serve(ctx)
}

// address returns where to connect: where the session resumes (a RESUME
// spends no session start), else the gateway, once the bot's daily
// session start limit allows and its next IDENTIFY slot has come.
func (s *session) address(ctx context.Context, p *Platform) (string, error) {
	if s.resume.id != "" {
		return s.resume.url, s.c.Trouble(ctx, domain.ConnConnecting, reasonResuming)
	}
	addr, err := s.waitStartLimit(ctx, p)
	if err != nil {
		return "", err
	}
	if !p.waitIdentify(ctx, s.c.Secrets.String(TokenVar)) {
		return "", ctx.Err()
	}
	return addr, nil
}

// waitStartLimit returns the gateway's address from GET /gateway/bot once
// the bot's daily session start limit has identifyFloor left; until then
// it says so as the connection's reason and waits for the limit's reset.
func (s *session) waitStartLimit(ctx context.Context, p *Platform) (string, error) {
	for {
		gb, err := s.dg.GatewayBot(discordgo.WithContext(ctx))
		if err != nil {
			return "", gatewayError(err)
		}
		limit := gb.SessionStartLimit
		if limit.Remaining >= identifyFloor {
			return gb.URL, nil
		}
		// Never sooner than the IDENTIFY spacing, should Discord say 0.
		wait := max(time.Duration(limit.ResetAfter)*time.Millisecond, p.identifyEvery())
		if err := s.c.Trouble(ctx, domain.ConnConnecting, startLimitReason(limit, wait)); err != nil {
			return "", err
		}
		if !connect.Sleep(ctx, wait) {
			return "", ctx.Err()
		}
	}
}

func startLimitReason(limit discordgo.SessionInformation, wait time.Duration) string {
	return fmt.Sprintf("Discord's daily session start limit for this bot is nearly used up (%d of %d left; "+
		"running out makes Discord reset the token): waiting for it to reset in %s, at %s, before connecting",
		limit.Remaining, limit.Total, wait.Round(time.Second), time.Now().Add(wait).UTC().Format(time.RFC3339))
}

// gatewayConn is one gateway connection. Run's goroutine alone writes to
// it and acts on what it reads; a reader goroutine hands it the frames.
type gatewayConn struct {
	s      *session
	ws     *websocket.Conn
	addr   string     // as dialed, without the query
	frames chan frame // from the reader
	ended  chan error // the reader's error; buffered
	stop   chan struct{}
	done   chan struct{} // closed when the reader has returned

	every  time.Duration // the heartbeat interval, from HELLO
	beat   *time.Timer   // the next heartbeat
	ackDue *time.Timer   // the watchdog: no HELLO, then no heartbeat ACK, for too long
}

// ending is why a connection ends, and how to close it.
type ending struct {
	err  error // nil when ctx ended
	code int   // of the close frame to send; 0 when the connection is gone
}

func dial(ctx context.Context, s *session, addr string) (*gatewayConn, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("discord: gateway address: %w", err)
	}
	u.RawQuery = url.Values{"v": {discordgo.APIVersion}, "encoding": {"json"}}.Encode()
	ws, _, err := gatewayDialer.DialContext(ctx, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("discord: dial gateway: %w", err)
	}
	g := &gatewayConn{s: s, ws: ws, addr: addr, frames: make(chan frame), ended: make(chan error, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
		beat: time.NewTimer(time.Hour), ackDue: time.NewTimer(handshakeTimeout)}
	g.beat.Stop() // it starts with HELLO
	go g.read()
	return g, nil
}

// serve serves the connection until ctx ends (nil) or the connection
// ends (an error); the reader has returned when it does.
func (g *gatewayConn) serve(ctx context.Context) error {
	end := g.loop(ctx)
	g.beat.Stop()
	g.ackDue.Stop()
	g.hangUp(end.code)
	return end.err
}

// loop serves the connection until it must end, and says how.
func (g *gatewayConn) loop(ctx context.Context) ending {
	for {
		var end *ending
		select {
		case <-ctx.Done():
			// The lease is over: nobody will resume, and a normal close
			// ends the session at Discord at once.
			g.s.resume = resumeState{}
			return ending{code: websocket.CloseNormalClosure}
		case err := <-g.ended:
			return ending{err: gatewayError(err)}
		case <-g.beat.C:
			g.beat.Reset(g.every)
			end = g.heartbeat()
		case <-g.ackDue.C:
			// A connection that stopped answering (a "zombie") loses every
			// event until noticed: Discord replays them on RESUME.
			return ending{err: errors.New("discord: the gateway went silent (no HELLO or heartbeat ACK in time)"), code: closeToResume}
		case f := <-g.frames:
			end = g.handle(ctx, f)
		}
		if end != nil {
			return *end
		}
	}
}

// ackTimeout is how long the watchdog waits for a heartbeat ACK: one ACK
// may be late, not two.
func ackTimeout(every time.Duration) time.Duration { return 2*every + every/4 }

// handle acts on a frame read; it returns the connection's ending, nil to
// go on.
func (g *gatewayConn) handle(ctx context.Context, f frame) *ending {
	switch f.Op {
	case opHello:
		return g.hello(f.D)
	case opHeartbeatACK:
		g.ackDue.Reset(ackTimeout(g.every))
	case opHeartbeat: // Discord asks for one at once
		return g.heartbeat()
	case opReconnect:
		return &ending{err: errors.New("discord: the gateway asked to reconnect"), code: closeToResume}
	case opInvalidSession:
		return g.invalidSession(f.D)
	case opDispatch:
		g.s.resume.seq = f.S
		if err := g.s.dispatch(ctx, f.T, f.D, g.addr); err != nil {
			return &ending{err: err, code: closeToResume}
		}
	}
	return nil
}

// hello starts the heartbeat at HELLO's interval (the first beat after a
// random part of it, as Discord asks) and the watchdog, and IDENTIFYs or
// RESUMEs.
func (g *gatewayConn) hello(d json.RawMessage) *ending {
	var h struct {
		Interval int64 `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(d, &h); err != nil || h.Interval <= 0 {
		return &ending{err: fmt.Errorf("discord: gateway HELLO without a heartbeat interval: %s", d), code: closeToResume}
	}
	g.every = time.Duration(h.Interval) * time.Millisecond
	g.beat.Reset(rand.N(g.every))
	g.ackDue.Reset(ackTimeout(g.every))
	if g.s.resume.id == "" {
		return g.send(opIdentify, g.s.dg.Identify)
	}
	return g.send(opResume, map[string]any{"token": g.s.dg.Identify.Token, "session_id": g.s.resume.id, "seq": g.s.resume.seq})
}

// invalidSession ends a connection whose session Discord invalidated: the
// next one RESUMEs when d says it may, else it IDENTIFYs a new session.
func (g *gatewayConn) invalidSession(d json.RawMessage) *ending {
	var resumable bool
	_ = json.Unmarshal(d, &resumable) // anything but true starts a new session
	if !resumable {
		g.s.resume = resumeState{}
	}
	return &ending{err: fmt.Errorf("discord: the gateway invalidated the session (resumable: %t)", resumable), code: closeToResume}
}

// heartbeat sends the sequence number of the last dispatch received (null
// before the first).
func (g *gatewayConn) heartbeat() *ending {
	var seq *int64
	if g.s.resume.seq > 0 {
		seq = &g.s.resume.seq
	}
	return g.send(opHeartbeat, seq)
}

func (g *gatewayConn) send(op int, d any) *ending {
	_ = g.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := g.ws.WriteJSON(payload{Op: op, D: d}); err != nil {
		return &ending{err: fmt.Errorf("discord: write to gateway: %w", err)}
	}
	return nil
}

// read hands the frames read to the connection's goroutine until reading
// fails or the connection is being closed.
func (g *gatewayConn) read() {
	defer close(g.done)
	for {
		var f frame
		if err := g.ws.ReadJSON(&f); err != nil {
			g.ended <- err
			return
		}
		select {
		case g.frames <- f:
		case <-g.stop:
			return
		}
	}
}

// hangUp closes the connection, first with a close frame carrying code
// unless it is 0 (the connection is gone), and waits for the reader.
func (g *gatewayConn) hangUp(code int) {
	close(g.stop)
	if code != 0 {
		_ = g.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(writeTimeout))
		select { // Discord's answer ends the reader
		case <-g.done:
		case <-time.After(closeWait):
		}
	}
	_ = g.ws.Close()
	<-g.done
}

// dispatch acts on an event: READY and RESUMED say the bot is connected,
// MESSAGE_CREATE may be answered, INTERACTION_CREATE may press an
// approval button (Discord sends it whatever the intents), and guild,
// channel and thread events keep the channel cache current. addr is where
// the connection was dialed, where a READY without resume_gateway_url
// resumes.
func (s *session) dispatch(ctx context.Context, event string, d json.RawMessage, addr string) error {
	switch event {
	case "READY":
		return s.ready(ctx, d, addr)
	case "RESUMED":
		return s.connected(ctx)
	case "MESSAGE_CREATE":
		var m discordgo.MessageCreate
		if s.decode(event, d, &m) {
			s.handle(m.Message)
		}
	case "INTERACTION_CREATE":
		var i discordgo.Interaction
		if s.decode(event, d, &i) {
			s.pressed(&i, d)
		}
	default:
		if newEvent := stateEvents[event]; newEvent != nil {
			if e := newEvent(); s.decode(event, d, e) {
				_ = s.dg.State.OnInterface(s.dg, e) // fails only for what is not cached
			}
		}
	}
	return nil
}

// ready starts the session: who the bot is, and where and how to resume.
func (s *session) ready(ctx context.Context, d json.RawMessage, addr string) error {
	var r struct {
		discordgo.Ready
		ResumeURL string `json:"resume_gateway_url"` // unknown to discordgo v0.29
	}
	if err := json.Unmarshal(d, &r); err != nil {
		return fmt.Errorf("discord: read READY: %w", err)
	}
	if r.User == nil {
		return errors.New("discord: READY without the bot's user")
	}
	s.resume.id, s.resume.url = r.SessionID, addr
	if r.ResumeURL != "" {
		s.resume.url = r.ResumeURL
	}
	s.me.Store(r.User)
	_ = s.dg.State.OnInterface(s.dg, &r.Ready) // never fails for READY
	return s.connected(ctx)
}

// connected says the bot is connected (again: a RESUME claims the bot too,
// in case the READY's claim failed), and queues what the inbox holds.
func (s *session) connected(ctx context.Context) error {
	me := s.me.Load()
	if err := s.c.Connected(ctx, me.ID, me.Username); err != nil {
		return err
	}
	s.c.Chats(s.chatReply)
	return s.c.Resume(ctx, s.answer)
}

// decode reads the event d into v; an event that does not decode is
// logged and skipped.
func (s *session) decode(event string, d json.RawMessage, v any) bool {
	if err := json.Unmarshal(d, v); err != nil {
		s.c.Logger.Warn("discord event not read", "event", event, "error", err)
		return false
	}
	return true
}
