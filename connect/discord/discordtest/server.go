// Package discordtest is a Discord server for tests, speaking the wire
// format of the REST API (v9, Authorization "Bot <token>") and of the
// gateway (a JSON WebSocket) as Discord does. GET /api/v*/gateway/bot
// names the gateway's ws:// address and the bot's daily session start
// limit, which each IDENTIFY spends. The gateway sends HELLO (op 10) and
// acks heartbeats (op 11); it answers IDENTIFY (op 2) with READY (its
// session_id and resume_gateway_url) and a GUILD_CREATE per guild, and
// RESUME (op 6) with the dispatches the session missed and RESUMED, or
// with op 9 (d=false) for a session it does not know. A session outlives
// its connection and keeps the dispatches sent meanwhile, unless the
// client closed it with 1000 or 1001. Tests dispatch MESSAGE_CREATE, drop
// connections, close them with a code, ask for a reconnect (op 7),
// invalidate sessions (op 9) or stop a connection carrying anything. It
// records what bots send: identifies, resumes, typing and messages.
// Approvals: POST /users/@me/channels opens a DM; a message may carry
// action rows of buttons (refused with 400 as Discord refuses malformed
// ones); Press dispatches INTERACTION_CREATE (a MESSAGE_COMPONENT
// interaction), which POST /interactions/{id}/{token}/callback answers
// once, an UPDATE_MESSAGE changing the message pressed.
package discordtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// Close codes of the gateway that tests use.
const (
	CloseAuthenticationFailed = 4004
	CloseDisallowedIntents    = 4014
)

// Identify is one IDENTIFY a bot sent.
type Identify struct {
	Token   string // as sent, "Bot <token>"
	Intents discordgo.Intent
}

// Resume is one RESUME a bot sent.
type Resume struct {
	SessionID   string
	Seq         int64 // the last sequence number the bot had
	AtResumeURL bool  // sent to READY's resume_gateway_url
	Refused     bool  // the session was unknown: answered with op 9 (d=false)
	Replayed    int   // how many dispatches the bot had missed
}

// startsPerDay is a bot's daily session start limit.
const startsPerDay = 1000

// Sent is one message a bot posted, as it reads now: an interaction's
// UPDATE_MESSAGE changes its content and buttons, and sets Updated.
type Sent struct {
	ID        string
	ChannelID string
	Content   string
	ReplyTo   string // message_reference.message_id, "" for none
	// Buttons are those of its action rows, row after row.
	Buttons []Button
	Updated bool
}

// Button is a button of a message's components.
type Button struct {
	Label, CustomID string
	Style           discordgo.ButtonStyle
}

// Response is one answer of a bot to an interaction (POST
// /interactions/{id}/{token}/callback).
type Response struct {
	InteractionID string
	Type          discordgo.InteractionResponseType
	Content       string
	Ephemeral     bool
}

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	// HeartbeatInterval is announced in HELLO (1s unless set before the
	// first connection).
	HeartbeatInterval time.Duration

	mu           sync.Mutex
	bots         map[string]*bot // by token, without "Bot "
	guilds       map[string][]*discordgo.Channel
	channels     map[string]*discordgo.Channel
	nextID       int64
	conns        map[*gatewayConn]bool
	sessions     map[string]*session // by id
	nextSession  int
	interactions map[string]*interaction // by id
}

type bot struct {
	user       discordgo.User
	privileged bool // Message Content intent allowed
	identifies []Identify
	typing     []string
	sent       []Sent
	rejectWith int // close code answering every IDENTIFY, 0 for none
	resumes    []Resume
	startsLeft int       // of the daily session start limit
	resetsAt   time.Time // when startsLeft goes back to startsPerDay
	// lostAnswers is how many of the next messages are posted but answered
	// 502, as when Discord's edge loses the answer of a post it made.
	lostAnswers int
	dms         map[string]string // DM channel ids by user id
	responses   []Response
}

// interaction is a press the server dispatched: answered once, within
// its token.
type interaction struct {
	token    string
	bot      string // the token of the bot it went to
	message  string // the id of the message pressed
	answered bool
}

// update makes the bot's message id read content with buttons bs, as an
// UPDATE_MESSAGE answer does; s.mu is held.
func (b *bot) update(id, content string, bs []Button) {
	for i, m := range b.sent {
		if m.ID == id {
			b.sent[i].Content, b.sent[i].Buttons, b.sent[i].Updated = content, bs, true
		}
	}
}

// session is a gateway session. It outlives its connection and keeps
// every dispatch, for a RESUME to replay those the bot missed.
type session struct {
	id     string
	token  string
	conn   *gatewayConn // nil while no connection serves it
	events []frame      // every dispatch: events[i] has sequence number i+1
}

// gatewayConn is one gateway connection; writes are serialized by mu,
// session and zombie are guarded by Server.mu.
type gatewayConn struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	session *session // nil until identified or resumed
	zombie  bool     // carries nothing: no ACK, no dispatch
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{HeartbeatInterval: time.Second, bots: map[string]*bot{}, guilds: map[string][]*discordgo.Channel{},
		channels: map[string]*discordgo.Channel{}, nextID: 900000, conns: map[*gatewayConn]bool{}, sessions: map[string]*session{},
		interactions: map[string]*interaction{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /gateway/", s.gateway(false))
	mux.HandleFunc("GET /resume", s.gateway(true))
	mux.HandleFunc("GET /api/{version}/gateway/bot", s.gatewayBot)
	mux.HandleFunc("GET /api/{version}/channels/{id}", s.channel)
	mux.HandleFunc("POST /api/{version}/channels/{id}/messages", s.message)
	mux.HandleFunc("POST /api/{version}/channels/{id}/typing", s.typing)
	mux.HandleFunc("POST /api/{version}/users/@me/channels", s.openDM)
	mux.HandleFunc("POST /api/{version}/interactions/{id}/{token}/callback", s.respond)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.Drop("") // hijacked connections outlive httptest's Close
		s.Close()
	})
	return s
}

// AddBot registers a bot: its token, id and username. messageContent says
// whether the privileged Message Content intent is enabled for it (else
// an IDENTIFY asking for it is closed with 4014). Other tokens get 401 and
// 4004.
func (s *Server) AddBot(token, id, username string, messageContent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token] = &bot{user: discordgo.User{ID: id, Username: username, Bot: true}, privileged: messageContent,
		startsLeft: startsPerDay, resetsAt: time.Now().Add(24 * time.Hour), dms: map[string]string{}}
}

// SessionStartLimit sets what is left of the bot's daily session start
// limit, and when it goes back to 1,000.
func (s *Server) SessionStartLimit(token string, remaining int, resetAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	b.startsLeft, b.resetsAt = remaining, time.Now().Add(resetAfter)
}

// AddChannel adds a text channel to a guild; READY's GUILD_CREATE lists it.
func (s *Server) AddChannel(guildID, id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &discordgo.Channel{ID: id, GuildID: guildID, Name: name, Type: discordgo.ChannelTypeGuildText}
	s.guilds[guildID] = append(s.guilds[guildID], c)
	s.channels[id] = c
}

// RejectIdentify makes every IDENTIFY of the bot answered by closing with
// code (0 to accept again).
func (s *Server) RejectIdentify(token string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token].rejectWith = code
}

// Dispatch sends MESSAGE_CREATE with m to every session of the bot, and
// returns how many there are: a session without a connection keeps it for
// a RESUME. A message without id gets one.
func (s *Server) Dispatch(token string, m *discordgo.Message) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ID == "" {
		s.nextID++
		m.ID = strconv.FormatInt(s.nextID, 10)
	}
	n := 0
	for _, sess := range s.sessions {
		if sess.token == token {
			s.emit(sess, "MESSAGE_CREATE", m)
			n++
		}
	}
	return n
}

// Press dispatches INTERACTION_CREATE to every session of the bot: user
// pressing the button of sent (a message of the bot's, in a DM) whose
// custom_id is customID, a MESSAGE_COMPONENT interaction as Discord sends
// it. It returns the interaction's id.
func (s *Server) Press(token string, user discordgo.User, sent Sent, customID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	s.nextID++
	id := strconv.FormatInt(s.nextID, 10)
	s.interactions[id] = &interaction{token: "itoken-" + id, bot: token, message: sent.ID}
	author := b.user
	d := map[string]any{"id": id, "application_id": b.user.ID, "type": discordgo.InteractionMessageComponent,
		"token": s.interactions[id].token, "version": 1, "channel_id": sent.ChannelID, "user": user, "context": 1,
		"data": map[string]any{"custom_id": customID, "component_type": discordgo.ButtonComponent},
		"message": map[string]any{"id": sent.ID, "channel_id": sent.ChannelID, "content": sent.Content, "author": author,
			"type": discordgo.MessageTypeDefault, "components": rowsOf(sent.Buttons)}}
	for _, sess := range s.sessions {
		if sess.token == token {
			s.emit(sess, "INTERACTION_CREATE", d)
		}
	}
	return id
}

// Responses returns the bot's answers to interactions, oldest first.
func (s *Server) Responses(token string) []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Response(nil), s.bots[token].responses...)
}

// Connected returns how many gateway connections serve a session of the
// bot.
func (s *Server) Connected(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.connsOf(token))
}

// Drop closes the bot's gateway connections ("" for every connection)
// without a close frame, as a network failure does; their sessions wait
// for a RESUME.
func (s *Server) Drop(token string) {
	s.each(token, func(c *gatewayConn) {
		s.detach(c)
		_ = c.ws.Close()
	})
}

// CloseWith closes the bot's gateway connections with a close frame
// carrying code; their sessions wait for a RESUME.
func (s *Server) CloseWith(token string, code int) {
	s.each(token, func(c *gatewayConn) {
		s.detach(c)
		c.close(code)
	})
}

// Reconnect asks the bot's gateway connections to reconnect and resume
// (op 7).
func (s *Server) Reconnect(token string) {
	s.each(token, func(c *gatewayConn) { c.send(7, nil) })
}

// InvalidSession tells the bot's gateway connections that their session
// is invalid (op 9) and whether it may be resumed; one that may not is
// ended.
func (s *Server) InvalidSession(token string, resumable bool) {
	s.each(token, func(c *gatewayConn) { c.send(9, resumable) })
	if !resumable {
		s.EndSessions(token)
	}
}

// EndSessions ends the bot's sessions, as Discord does some time after
// their connection dropped: a RESUME gets op 9 (d=false).
func (s *Server) EndSessions(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sess := range s.sessions {
		if sess.token == token {
			if sess.conn != nil {
				s.detach(sess.conn)
			}
			delete(s.sessions, id)
		}
	}
}

// Zombie makes the bot's gateway connections carry nothing from now on,
// as a network path that failed silently: they ack no heartbeat and
// deliver no dispatch (their sessions keep them for a RESUME).
func (s *Server) Zombie(token string) {
	s.each(token, func(c *gatewayConn) { c.zombie = true })
}

// Identifies returns the bot's IDENTIFY payloads, oldest first.
func (s *Server) Identifies(token string) []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.bots[token].identifies...)
}

// Resumes returns the bot's RESUMEs, oldest first.
func (s *Server) Resumes(token string) []Resume {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Resume(nil), s.bots[token].resumes...)
}

// Typing returns the channels in which the bot triggered typing, in order.
func (s *Server) Typing(token string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bots[token].typing...)
}

// Sent returns the messages the bot posted, oldest first.
func (s *Server) Sent(token string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.bots[token].sent...)
}

// connsOf returns the connections serving a session of token, every
// connection for ""; s.mu is held.
func (s *Server) connsOf(token string) []*gatewayConn {
	var out []*gatewayConn
	for c := range s.conns {
		if token == "" || c.session != nil && c.session.token == token {
			out = append(out, c)
		}
	}
	return out
}

// each calls fn, with s.mu held, on the connections serving a session of
// token (every connection for "").
func (s *Server) each(token string, fn func(c *gatewayConn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.connsOf(token) {
		fn(c)
	}
}

// detach parts c from its session, which waits for a RESUME; s.mu is held.
func (s *Server) detach(c *gatewayConn) {
	if c.session != nil && c.session.conn == c {
		c.session.conn = nil
	}
	c.session = nil
}

// emit dispatches event to sess, keeping it for a RESUME, and sends it
// when a connection serves the session; s.mu is held.
func (s *Server) emit(sess *session, event string, d any) {
	raw, _ := json.Marshal(d)
	seq := int64(len(sess.events) + 1)
	f := frame{Op: 0, D: raw, S: &seq, T: event}
	sess.events = append(sess.events, f)
	if c := sess.conn; c != nil && !c.zombie {
		c.write(f)
	}
}

// authorized returns the bot of the request's "Bot <token>", or answers
// 401; s.mu is held.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) *bot {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bot ")
	if b := s.bots[token]; ok && b != nil {
		return b
	}
	writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
	return nil
}

func (s *Server) gatewayBot(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.authorized(w, r)
	if b == nil {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": s.wsURL("/gateway"), "shards": 1, "session_start_limit": b.startLimit()})
}

// startLimit returns the bot's daily session start limit; s.mu is held.
func (b *bot) startLimit() discordgo.SessionInformation {
	if now := time.Now(); now.After(b.resetsAt) {
		b.startsLeft, b.resetsAt = startsPerDay, now.Add(24*time.Hour)
	}
	return discordgo.SessionInformation{Total: startsPerDay, Remaining: b.startsLeft,
		ResetAfter: int(time.Until(b.resetsAt).Milliseconds()), MaxConcurrency: 1}
}

// wsURL is the WebSocket address of path on the server.
func (s *Server) wsURL(path string) string { return "ws" + strings.TrimPrefix(s.URL, "http") + path }

func (s *Server) channel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.authorized(w, r) == nil {
		return
	}
	c := s.channels[r.PathValue("id")]
	if c == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Channel", "code": 10003})
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) typing(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.authorized(w, r); b != nil {
		b.typing = append(b.typing, r.PathValue("id"))
		w.WriteHeader(http.StatusNoContent)
	}
}

// LoseAnswers makes the bot's next n messages be posted but answered with
// 502 Bad Gateway: a client that retries them posts them twice.
func (s *Server) LoseAnswers(token string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token].lostAnswers = n
}

// messageBody is a message a bot posts, or an interaction's message data.
type messageBody struct {
	Content    string                      `json:"content"`
	Reference  *discordgo.MessageReference `json:"message_reference"`
	Components []component                 `json:"components"`
	Flags      discordgo.MessageFlags      `json:"flags"`
}

// component is a message component as sent: an action row (type 1) of
// buttons (type 2).
type component struct {
	Type       discordgo.ComponentType `json:"type"`
	Style      discordgo.ButtonStyle   `json:"style,omitempty"`
	Label      string                  `json:"label,omitempty"`
	CustomID   string                  `json:"custom_id,omitempty"`
	URL        string                  `json:"url,omitempty"`
	Components []component             `json:"components,omitempty"`
}

// buttons reads the components of a message, refusing what Discord
// refuses (false): anything but action rows of one to five buttons, a
// button without a label or with one over 80 characters, a link button
// without a url, another without a custom_id of 1-100 characters.
func buttons(rows []component) ([]Button, bool) {
	var out []Button
	for _, row := range rows {
		if row.Type != discordgo.ActionsRowComponent || len(row.Components) == 0 || len(row.Components) > 5 {
			return nil, false
		}
		for _, c := range row.Components {
			ok := c.Type == discordgo.ButtonComponent && c.Label != "" && len([]rune(c.Label)) <= 80
			if c.Style == discordgo.LinkButton {
				ok = ok && c.URL != "" && c.CustomID == ""
			} else {
				ok = ok && c.Style >= discordgo.PrimaryButton && c.Style <= discordgo.DangerButton && c.CustomID != "" && len(c.CustomID) <= 100
			}
			if !ok {
				return nil, false
			}
			out = append(out, Button{Label: c.Label, CustomID: c.CustomID, Style: c.Style})
		}
	}
	return out, true
}

// rowsOf is the components of a message with buttons bs, in one row.
func rowsOf(bs []Button) []component {
	if len(bs) == 0 {
		return []component{}
	}
	row := component{Type: discordgo.ActionsRowComponent}
	for _, b := range bs {
		row.Components = append(row.Components, component{Type: discordgo.ButtonComponent, Style: b.Style, Label: b.Label, CustomID: b.CustomID})
	}
	return []component{row}
}

// invalidForm answers a body Discord refuses.
func invalidForm(w http.ResponseWriter) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var body messageBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "400: Bad Request", "code": 50109})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.authorized(w, r)
	if b == nil {
		return
	}
	bs, ok := buttons(body.Components)
	if n := len([]rune(body.Content)); n == 0 || n > 2000 || !ok {
		invalidForm(w)
		return
	}
	s.nextID++
	sent := Sent{ID: strconv.FormatInt(s.nextID, 10), ChannelID: r.PathValue("id"), Content: body.Content, Buttons: bs}
	if body.Reference != nil {
		sent.ReplyTo = body.Reference.MessageID
	}
	b.sent = append(b.sent, sent)
	if b.lostAnswers > 0 {
		b.lostAnswers--
		writeJSON(w, http.StatusBadGateway, map[string]any{"message": "502: Bad Gateway", "code": 0})
		return
	}
	user := b.user
	writeJSON(w, http.StatusOK, map[string]any{"id": sent.ID, "channel_id": sent.ChannelID, "content": sent.Content,
		"author": user, "message_reference": body.Reference, "components": body.Components, "type": discordgo.MessageTypeDefault})
}

// openDM answers POST /users/@me/channels: the DM channel of the bot with
// recipient_id, the same one each time.
func (s *Server) openDM(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.RecipientID == "" {
		invalidForm(w)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.authorized(w, r)
	if b == nil {
		return
	}
	id, ok := b.dms[body.RecipientID]
	if !ok {
		s.nextID++
		id = strconv.FormatInt(s.nextID, 10)
		b.dms[body.RecipientID] = id
		s.channels[id] = &discordgo.Channel{ID: id, Type: discordgo.ChannelTypeDM,
			Recipients: []*discordgo.User{{ID: body.RecipientID}}}
	}
	writeJSON(w, http.StatusOK, s.channels[id])
}

// DM returns the id of the DM channel the bot opened with user, "" when
// it opened none.
func (s *Server) DM(token, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bots[token].dms[user]
}

// respond answers an interaction's callback: once per interaction, with
// its token, within the types agentd uses (4, a message; 7, an update of
// the message pressed).
func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data *messageBody                      `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		invalidForm(w)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	in := s.interactions[id]
	switch {
	case in == nil || in.token != r.PathValue("token"):
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Unknown interaction", "code": 10062})
		return
	case in.answered:
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
		return
	case body.Data == nil || body.Type != discordgo.InteractionResponseChannelMessageWithSource && body.Type != discordgo.InteractionResponseUpdateMessage:
		invalidForm(w)
		return
	}
	bs, ok := buttons(body.Data.Components)
	n := len([]rune(body.Data.Content))
	if !ok || n > 2000 || n == 0 && body.Type == discordgo.InteractionResponseChannelMessageWithSource {
		invalidForm(w)
		return
	}
	in.answered = true
	b := s.bots[in.bot]
	b.responses = append(b.responses, Response{InteractionID: id, Type: body.Type, Content: body.Data.Content,
		Ephemeral: body.Data.Flags&discordgo.MessageFlagsEphemeral != 0})
	if body.Type == discordgo.InteractionResponseUpdateMessage {
		b.update(in.message, body.Data.Content, bs)
	}
	w.WriteHeader(http.StatusNoContent)
}

var upgrader = websocket.Upgrader{}

// frame is a gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// gateway serves gateway connections, at READY's resume_gateway_url when
// atResumeURL, each until either side closes it.
func (s *Server) gateway(atResumeURL bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := &gatewayConn{ws: ws}
		s.mu.Lock()
		s.conns[c] = true
		interval := s.HeartbeatInterval
		s.mu.Unlock()
		c.send(10, map[string]any{"heartbeat_interval": interval.Milliseconds()})
		for {
			var f frame
			if err := ws.ReadJSON(&f); err != nil {
				s.hungUp(c, err)
				return
			}
			switch f.Op {
			case 1:
				s.heartbeat(c)
			case 2:
				if !s.identify(c, f.D) {
					s.hungUp(c, nil)
					return
				}
			case 6:
				s.resume(c, f.D, atResumeURL)
			}
		}
	}
}

// hungUp forgets c, which ended with err: its session waits for a RESUME,
// unless the client closed it normally (1000 or 1001), which ends it.
func (s *Server) hungUp(c *gatewayConn, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if sess := c.session; sess != nil && websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
		delete(s.sessions, sess.id)
	}
	s.detach(c)
	_ = c.ws.Close()
}

// heartbeat acks a heartbeat, unless c is a zombie.
func (s *Server) heartbeat(c *gatewayConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.zombie {
		c.send(11, nil)
	}
}

// identify answers an IDENTIFY: a new session, READY and the guilds, or a
// close code.
func (s *Server) identify(c *gatewayConn, d json.RawMessage) bool {
	var id struct {
		Token   string           `json:"token"`
		Intents discordgo.Intent `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	token := strings.TrimPrefix(id.Token, "Bot ")
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	code := 0
	switch {
	case b == nil:
		code = CloseAuthenticationFailed
	case b.rejectWith != 0:
		code = b.rejectWith
	case id.Intents&discordgo.IntentMessageContent != 0 && !b.privileged:
		code = CloseDisallowedIntents
	}
	if b != nil {
		b.identifies = append(b.identifies, Identify{Token: id.Token, Intents: id.Intents})
		b.startLimit()
		b.startsLeft--
	}
	if code != 0 {
		c.close(code)
		return false
	}
	s.nextSession++
	sess := &session{id: "session-" + strconv.Itoa(s.nextSession), token: token, conn: c}
	s.sessions[sess.id], c.session = sess, sess
	var guilds []map[string]any
	for gid := range s.guilds {
		guilds = append(guilds, map[string]any{"id": gid, "unavailable": true})
	}
	s.emit(sess, "READY", map[string]any{"v": 9, "user": b.user, "session_id": sess.id, "guilds": guilds,
		"resume_gateway_url": s.wsURL("/resume")})
	for gid, chans := range s.guilds {
		s.emit(sess, "GUILD_CREATE", map[string]any{"id": gid, "name": "guild " + gid, "channels": chans})
	}
	return true
}

// resume answers a RESUME: the dispatches the session missed and RESUMED
// on c, or op 9 (not resumable) for a session it does not know.
func (s *Server) resume(c *gatewayConn, d json.RawMessage, atResumeURL bool) {
	var r struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &r)
	token := strings.TrimPrefix(r.Token, "Bot ")
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[r.SessionID]
	known := sess != nil && sess.token == token && r.Seq >= 0 && r.Seq <= int64(len(sess.events))
	var missed []frame
	if known {
		missed = sess.events[r.Seq:]
	}
	if b := s.bots[token]; b != nil {
		b.resumes = append(b.resumes, Resume{SessionID: r.SessionID, Seq: r.Seq, AtResumeURL: atResumeURL, Refused: !known, Replayed: len(missed)})
	}
	if !known {
		c.send(9, false)
		return
	}
	if sess.conn != nil {
		s.detach(sess.conn)
	}
	sess.conn, c.session = c, sess
	for _, f := range missed {
		c.write(f)
	}
	s.emit(sess, "RESUMED", map[string]any{})
}

func (c *gatewayConn) send(op int, d any) {
	raw, _ := json.Marshal(d)
	c.write(frame{Op: op, D: raw})
}

func (c *gatewayConn) write(f frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.WriteJSON(f)
}

// close sends a close frame with code and closes the connection.
func (c *gatewayConn) close(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, closeText[code]), time.Now().Add(time.Second))
	_ = c.ws.Close()
}

var closeText = map[int]string{CloseAuthenticationFailed: "Authentication failed.", CloseDisallowedIntents: "Disallowed intent(s)."}

// mentionPattern finds <@id> and <@!id> in content, as Discord does when
// it fills a message's mentions.
var mentionPattern = regexp.MustCompile(`<@!?(\d+)>`)

// Mentions returns the users of the registered bots that content mentions,
// for building a MESSAGE_CREATE like Discord's.
func (s *Server) Mentions(content string) []*discordgo.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*discordgo.User
	for _, m := range mentionPattern.FindAllStringSubmatch(content, -1) {
		for _, b := range s.bots {
			if b.user.ID == m[1] {
				u := b.user
				out = append(out, &u)
			}
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
