// Package discordtest is a Discord server for tests, speaking the wire
// format of the REST API (v9, Authorization "Bot <token>") and of the
// gateway (a JSON WebSocket): GET /api/v*/gateway and /gateway/bot name the
// gateway's ws:// address; the gateway sends HELLO (op 10), takes IDENTIFY
// (op 2), dispatches READY, a GUILD_CREATE per guild and then MESSAGE_CREATE
// on demand, acks heartbeats (op 11) and can close with a chosen code. It
// records what bots send: identifies, typing and messages.
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

// Sent is one message a bot posted.
type Sent struct {
	ChannelID string
	Content   string
	ReplyTo   string // message_reference.message_id, "" for none
}

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server
	// HeartbeatInterval is announced in HELLO (1s unless set before the
	// first connection).
	HeartbeatInterval time.Duration

	mu       sync.Mutex
	bots     map[string]*bot // by token, without "Bot "
	guilds   map[string][]*discordgo.Channel
	channels map[string]*discordgo.Channel
	nextID   int64
	conns    map[*gatewayConn]bool
}

type bot struct {
	user       discordgo.User
	privileged bool // Message Content intent allowed
	identifies []Identify
	typing     []string
	sent       []Sent
	rejectWith int // close code answering every IDENTIFY, 0 for none
}

// gatewayConn is one gateway connection; writes are serialized by mu.
type gatewayConn struct {
	ws    *websocket.Conn
	mu    sync.Mutex
	token string // "" until identified
	seq   int64
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{HeartbeatInterval: time.Second, bots: map[string]*bot{}, guilds: map[string][]*discordgo.Channel{},
		channels: map[string]*discordgo.Channel{}, nextID: 900000, conns: map[*gatewayConn]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /gateway/", s.gateway)
	mux.HandleFunc("GET /api/{version}/gateway", s.gatewayURL)
	mux.HandleFunc("GET /api/{version}/gateway/bot", s.gatewayURL)
	mux.HandleFunc("GET /api/{version}/channels/{id}", s.channel)
	mux.HandleFunc("POST /api/{version}/channels/{id}/messages", s.message)
	mux.HandleFunc("POST /api/{version}/channels/{id}/typing", s.typing)
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
	s.bots[token] = &bot{user: discordgo.User{ID: id, Username: username, Bot: true}, privileged: messageContent}
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

// Dispatch sends MESSAGE_CREATE with m to every identified connection of
// the bot and returns how many got it; a message without id gets one.
func (s *Server) Dispatch(token string, m *discordgo.Message) int {
	s.mu.Lock()
	if m.ID == "" {
		s.nextID++
		m.ID = strconv.FormatInt(s.nextID, 10)
	}
	conns := s.connsOf(token)
	s.mu.Unlock()
	for _, c := range conns {
		c.dispatch("MESSAGE_CREATE", m)
	}
	return len(conns)
}

// Connected returns how many identified gateway connections the bot has.
func (s *Server) Connected(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.connsOf(token))
}

// Drop closes the bot's gateway connections ("" for every connection)
// without a close frame, as a network failure does.
func (s *Server) Drop(token string) {
	s.mu.Lock()
	conns := s.connsOf(token)
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}

// CloseWith closes the bot's gateway connections with a close frame
// carrying code.
func (s *Server) CloseWith(token string, code int) {
	s.mu.Lock()
	conns := s.connsOf(token)
	s.mu.Unlock()
	for _, c := range conns {
		c.close(code)
	}
}

// Identifies returns the bot's IDENTIFY payloads, oldest first.
func (s *Server) Identifies(token string) []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.bots[token].identifies...)
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

// connsOf returns the identified connections of token, every connection
// for ""; s.mu is held.
func (s *Server) connsOf(token string) []*gatewayConn {
	var out []*gatewayConn
	for c := range s.conns {
		if token == "" || c.token == token {
			out = append(out, c)
		}
	}
	return out
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

func (s *Server) gatewayURL(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"url": "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway", "shards": 1,
		"session_start_limit": map[string]int{"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}})
}

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

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	var body discordgo.MessageSend
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
	if n := len([]rune(body.Content)); n == 0 || n > 2000 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": 50035})
		return
	}
	sent := Sent{ChannelID: r.PathValue("id"), Content: body.Content}
	if body.Reference != nil {
		sent.ReplyTo = body.Reference.MessageID
	}
	b.sent = append(b.sent, sent)
	s.nextID++
	user := b.user
	writeJSON(w, http.StatusOK, discordgo.Message{ID: strconv.FormatInt(s.nextID, 10), ChannelID: sent.ChannelID,
		Content: sent.Content, Author: &user, MessageReference: body.Reference})
}

var upgrader = websocket.Upgrader{}

// frame is a gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// gateway serves one gateway connection until either side closes it.
func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gatewayConn{ws: ws}
	s.mu.Lock()
	s.conns[c] = true
	interval := s.HeartbeatInterval
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = ws.Close()
	}()
	c.send(10, map[string]any{"heartbeat_interval": interval.Milliseconds()})
	for {
		var f frame
		if err := ws.ReadJSON(&f); err != nil {
			return
		}
		switch f.Op {
		case 1:
			c.send(11, nil)
		case 2:
			if !s.identify(c, f.D) {
				return
			}
		}
	}
}

// identify answers an IDENTIFY: READY and the guilds, or a close code.
func (s *Server) identify(c *gatewayConn, d json.RawMessage) bool {
	var id struct {
		Token   string           `json:"token"`
		Intents discordgo.Intent `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	token := strings.TrimPrefix(id.Token, "Bot ")
	s.mu.Lock()
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
	}
	if code != 0 {
		s.mu.Unlock()
		c.close(code)
		return false
	}
	c.token = token
	user := b.user
	var guilds []map[string]any
	var creates []map[string]any
	for gid, chans := range s.guilds {
		guilds = append(guilds, map[string]any{"id": gid, "unavailable": true})
		creates = append(creates, map[string]any{"id": gid, "name": "guild " + gid, "channels": chans})
	}
	s.mu.Unlock()
	c.dispatch("READY", map[string]any{"v": 9, "user": user, "session_id": "session-" + user.ID, "guilds": guilds,
		"resume_gateway_url": "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway"})
	for _, g := range creates {
		c.dispatch("GUILD_CREATE", g)
	}
	return true
}

func (c *gatewayConn) send(op int, d any) {
	raw, _ := json.Marshal(d)
	c.write(frame{Op: op, D: raw})
}

func (c *gatewayConn) dispatch(event string, d any) {
	raw, _ := json.Marshal(d)
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	c.write(frame{Op: 0, D: raw, S: &seq, T: event})
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
