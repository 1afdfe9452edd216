// Package telegramtest is a Telegram Bot API server for tests, speaking the
// wire format: POST /bot{token}/{method} with JSON, form or multipart
// parameters, answered with {ok, result} or {ok: false, error_code, ...}.
// getUpdates holds the request until an update is queued or its timeout
// passes, like Telegram, so clients never spin; it forgets the updates
// below the offset it is asked for, and those of kinds its
// allowed_updates leaves out, and a second concurrent poller of one bot
// evicts the first with 409. Approvals: sendMessage takes an inline
// keyboard of callback buttons in reply_markup (refused with 400 as
// Telegram refuses a malformed one); Press queues a callback_query, which
// answerCallbackQuery answers once; editMessageText changes a sent
// message, its keyboard removed unless given again.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
)

// Call is one request the server received.
type Call struct {
	Method string
	Params map[string]string // objects and arrays as JSON text
}

// Sent is one message a bot sent, as it reads now: an editMessageText
// changes its text and buttons, and sets Edited.
type Sent struct {
	ChatID    string
	Text      string
	ReplyTo   int // reply_parameters.message_id, 0 for none
	MessageID int
	// Buttons are its inline keyboard's, row after row.
	Buttons []Button
	Edited  bool
}

// Button is a callback button of an inline keyboard.
type Button struct {
	Text, Data string // Data is the button's callback_data
}

// Answer is one answerCallbackQuery a bot made.
type Answer struct {
	QueryID, Text string
}

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	bots     map[string]*botState // by token
	changed  chan struct{}        // closed and replaced on every change
	nextMsg  int
	failures map[string][]failure // by token + "/" + method
}

type botState struct {
	user    models.User
	nextID  int64
	pending []models.Update
	calls   []Call
	sent    []Sent
	answers []Answer
	queries map[string]bool // callback query ids queued, true once answered
	// allowed is the last allowed_updates asked for (nil: every kind);
	// updates of other kinds are dropped, as Telegram never sends them.
	allowed []string
	polls   int // getUpdates requests in flight
	evict   chan struct{}
	webhook string // the URL of a webhook set on the bot, "" for none
}

type failure struct {
	status     int
	retryAfter int
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{bots: map[string]*botState{}, changed: make(chan struct{}), nextMsg: 1000, failures: map[string][]failure{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// AddBot registers a bot: its token, numeric id and username. Other tokens
// get 401.
func (s *Server) AddBot(token string, id int64, username string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token] = &botState{user: models.User{ID: id, IsBot: true, FirstName: username, Username: username}, nextID: 1,
		evict: make(chan struct{}), queries: map[string]bool{}}
}

// Queue adds an update for the bot, numbering it, and returns its id.
func (s *Server) Queue(token string, u models.Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bots[token]
	u.ID = b.nextID
	b.nextID++
	b.pending = append(b.pending, u)
	s.notify()
	return u.ID
}

// Press queues the callback query of from pressing the button of sent (a
// message of the bot's) that carries data, as Telegram does, and returns
// the query's id, which answerCallbackQuery must name.
func (s *Server) Press(token string, from models.User, sent Sent, data string) string {
	s.mu.Lock()
	b := s.bots[token]
	s.nextMsg++
	id := "cbq-" + strconv.Itoa(s.nextMsg)
	b.queries[id] = false
	chatID, _ := strconv.ParseInt(sent.ChatID, 10, 64)
	msg := &models.Message{ID: sent.MessageID, From: &b.user, Chat: models.Chat{ID: chatID, Type: models.ChatTypePrivate},
		Text: sent.Text, Date: int(time.Now().Unix())}
	s.mu.Unlock()
	s.Queue(token, models.Update{CallbackQuery: &models.CallbackQuery{ID: id, From: from, ChatInstance: "ci-" + sent.ChatID,
		Message: models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeMessage, Message: msg}, Data: data}})
	return id
}

// Answers returns the bot's answers to callback queries, oldest first.
func (s *Server) Answers(token string) []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Answer(nil), s.bots[token].answers...)
}

// QueueAgain queues update u again with its own id, as Telegram does when
// a poller did not confirm it.
func (s *Server) QueueAgain(token string, u models.Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token].pending = append(s.bots[token].pending, u)
	s.notify()
}

// Fail makes the next call of method by token fail with status (401, 409,
// 429 with retryAfter seconds, ...), once per call of Fail.
func (s *Server) Fail(token, method string, status, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := token + "/" + method
	s.failures[k] = append(s.failures[k], failure{status, retryAfter})
}

// Calls returns the requests of the bot, oldest first.
func (s *Server) Calls(token string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.bots[token].calls...)
}

// Sent returns the messages the bot sent, oldest first.
func (s *Server) Sent(token string) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.bots[token].sent...)
}

// Polling returns how many getUpdates requests of the bot are in flight.
func (s *Server) Polling(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bots[token].polls
}

// notify wakes the held requests; s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	token, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	if r.Method != http.MethodPost || !ok {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	params, err := readParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return
	}
	s.mu.Lock()
	b := s.bots[token]
	if b == nil {
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	b.calls = append(b.calls, Call{Method: method, Params: params})
	if f, ok := s.takeFailure(token, method); ok {
		s.mu.Unlock()
		writeError(w, f.status, http.StatusText(f.status), f.retryAfter)
		return
	}
	if method == "getUpdates" && b.webhook != "" {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", 0)
		return
	}
	switch method {
	case "getWebhookInfo":
		info := map[string]any{"url": b.webhook, "has_custom_certificate": false, "pending_update_count": len(b.pending)}
		s.mu.Unlock()
		writeResult(w, info)
	case "getMe":
		user := b.user
		s.mu.Unlock()
		writeResult(w, user)
	case "sendMessage":
		res, refused := s.send(b, params)
		s.mu.Unlock()
		writeOutcome(w, res, refused)
	case "editMessageText":
		res, refused := s.edit(b, params)
		s.mu.Unlock()
		writeOutcome(w, res, refused)
	case "answerCallbackQuery":
		refused := answer(b, params)
		s.mu.Unlock()
		writeOutcome(w, true, refused)
	case "getUpdates":
		s.mu.Unlock()
		s.getUpdates(w, r, token, params)
	case "sendChatAction":
		s.mu.Unlock()
		writeResult(w, true) // Calls keeps it
	default:
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "Not Found: method not found", 0)
	}
}

// SetWebhook sets (url) or removes ("") a webhook on the bot of token, as
// another host would: while one is set, getUpdates answers 409, as
// Telegram does.
func (s *Server) SetWebhook(token, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[token].webhook = url
}

// takeFailure pops an injected failure; s.mu is held.
func (s *Server) takeFailure(token, method string) (failure, bool) {
	k := token + "/" + method
	q := s.failures[k]
	if len(q) == 0 {
		return failure{}, false
	}
	s.failures[k] = q[1:]
	return q[0], true
}

// send records a sendMessage, or returns why Telegram refuses it (400);
// s.mu is held.
func (s *Server) send(b *botState, p map[string]string) (models.Message, string) {
	buttons, refused := inlineKeyboard(p["reply_markup"])
	if refused != "" {
		return models.Message{}, refused
	}
	s.nextMsg++
	m := Sent{ChatID: p["chat_id"], Text: p["text"], MessageID: s.nextMsg, Buttons: buttons}
	if rp := p["reply_parameters"]; rp != "" {
		var r models.ReplyParameters
		_ = json.Unmarshal([]byte(rp), &r)
		m.ReplyTo = r.MessageID
	}
	b.sent = append(b.sent, m)
	return message(b, m), ""
}

// edit applies an editMessageText to a message the bot sent: its text,
// and its keyboard (none without reply_markup), or returns why Telegram
// refuses it; s.mu is held.
func (s *Server) edit(b *botState, p map[string]string) (models.Message, string) {
	buttons, refused := inlineKeyboard(p["reply_markup"])
	if refused != "" {
		return models.Message{}, refused
	}
	id, _ := strconv.Atoi(p["message_id"])
	for i, m := range b.sent {
		if m.ChatID != p["chat_id"] || m.MessageID != id {
			continue
		}
		if m.Text == p["text"] && len(m.Buttons) == len(buttons) {
			return models.Message{}, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
		}
		m.Text, m.Buttons, m.Edited = p["text"], buttons, true
		b.sent[i] = m
		return message(b, m), ""
	}
	return models.Message{}, "Bad Request: message to edit not found"
}

// answer records an answerCallbackQuery, or returns why Telegram refuses
// it: a query it never sent, or one answered already; s.mu is held.
func answer(b *botState, p map[string]string) string {
	id := p["callback_query_id"]
	if answered, ok := b.queries[id]; !ok || answered {
		return "Bad Request: query is too old and response timeout expired or query ID is invalid"
	}
	b.queries[id] = true
	b.answers = append(b.answers, Answer{QueryID: id, Text: p["text"]})
	return ""
}

// message is m as the Bot API returns a message the bot sent.
func message(b *botState, m Sent) models.Message {
	chatID, _ := strconv.ParseInt(m.ChatID, 10, 64)
	return models.Message{ID: m.MessageID, From: &b.user, Chat: models.Chat{ID: chatID}, Text: m.Text, Date: int(time.Now().Unix())}
}

// inlineKeyboard reads reply_markup ("" for none) as an inline keyboard
// of callback buttons, refusing what Telegram refuses: a button without
// text, with callback_data outside 1-64 bytes, or with copy_text that has
// no text (what models.InlineKeyboardButton sends when it is not set).
func inlineKeyboard(markup string) ([]Button, string) {
	if markup == "" {
		return nil, ""
	}
	var k struct {
		InlineKeyboard [][]struct {
			Text         string  `json:"text"`
			CallbackData *string `json:"callback_data"`
			CopyText     *struct {
				Text string `json:"text"`
			} `json:"copy_text"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(markup), &k); err != nil {
		return nil, "Bad Request: can't parse reply keyboard markup JSON object"
	}
	var out []Button
	for _, row := range k.InlineKeyboard {
		for _, b := range row {
			switch {
			case b.CopyText != nil && b.CopyText.Text == "":
				return nil, "Bad Request: BUTTON_COPY_TEXT_INVALID"
			case b.Text == "":
				return nil, "Bad Request: can't parse inline keyboard button: Text must be non-empty"
			case b.CallbackData == nil || len(*b.CallbackData) < 1 || len(*b.CallbackData) > 64:
				return nil, "Bad Request: BUTTON_DATA_INVALID"
			}
			out = append(out, Button{Text: b.Text, Data: *b.CallbackData})
		}
	}
	return out, ""
}

// getUpdates answers the updates at or above offset, waiting up to timeout
// seconds for one. A newer poller of the bot evicts this one with 409.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, token string, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	s.mu.Lock()
	b := s.bots[token]
	if allowed, ok := p["allowed_updates"]; ok { // kept until another poll says otherwise, as on Telegram
		b.allowed = nil
		_ = json.Unmarshal([]byte(allowed), &b.allowed)
	}
	close(b.evict) // one poller at a time, as on Telegram
	b.evict = make(chan struct{})
	evicted := b.evict
	b.polls++
	defer func() {
		s.mu.Lock()
		b.polls--
		s.mu.Unlock()
	}()
	for {
		ups := confirm(b, offset)
		changed := s.changed
		s.mu.Unlock()
		if len(ups) > 0 || timeout == 0 {
			writeResult(w, ups)
			return
		}
		select {
		case <-changed:
		case <-evicted:
			writeError(w, http.StatusConflict, "Conflict: terminated by other getUpdates request", 0)
			return
		case <-deadline.C:
			writeResult(w, []models.Update{})
			return
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
	}
}

// confirm forgets the bot's updates below offset (a negative offset keeps
// only the last -offset), and those of kinds not allowed, and returns the
// rest; s.mu is held.
func confirm(b *botState, offset int64) []models.Update {
	if b.allowed != nil {
		b.pending = slices.DeleteFunc(b.pending, func(u models.Update) bool { return !slices.Contains(b.allowed, kind(u)) })
	}
	if offset < 0 {
		if n := int(-offset); len(b.pending) > n {
			b.pending = b.pending[len(b.pending)-n:]
		}
		return append([]models.Update{}, b.pending...)
	}
	kept := b.pending[:0]
	for _, u := range b.pending {
		if u.ID >= offset {
			kept = append(kept, u)
		}
	}
	b.pending = kept
	return append([]models.Update{}, kept...)
}

// kind is the kind of u as allowed_updates names it, for the kinds tests
// queue.
func kind(u models.Update) string {
	if u.CallbackQuery != nil {
		return "callback_query"
	}
	return "message"
}

// readParams reads JSON, URL-encoded and multipart parameters alike.
func readParams(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	body, err := io.ReadAll(r.Body)
	if err != nil || len(body) == 0 { // the library sends an empty multipart body for no parameters
		return out, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var raw map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
			return nil, fmt.Errorf("decode json: %w", err)
		}
		for k, v := range raw {
			var str string
			if json.Unmarshal(v, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(v)
			}
		}
		return out, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, fmt.Errorf("parse multipart: %w", err)
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, fmt.Errorf("parse form: %w", err)
		}
	}
	for k, v := range r.Form {
		out[k] = v[0]
	}
	return out, nil
}

// writeOutcome writes result, or the 400 refused says when it is not "".
func writeOutcome(w http.ResponseWriter, result any, refused string) {
	if refused != "" {
		writeError(w, http.StatusBadRequest, refused, 0)
		return
	}
	writeResult(w, result)
}

func writeResult(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeError(w http.ResponseWriter, status int, description string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": status, "description": description}
	if retryAfter > 0 {
		body["parameters"] = map[string]int{"retry_after": retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
