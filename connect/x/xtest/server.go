// Package xtest is an X API v2 server for tests, speaking the wire format
// of the calls connect/x makes: GET /2/users/me, POST /2/tweets, GET
// /2/users/:id/mentions, POST /2/users/:id/likes, POST
// /2/users/:id/retweets, GET /2/dm_events and POST
// /2/dm_conversations/with/:participant_id/messages. Every request must
// carry an OAuth 1.0a Authorization header with a registered account's
// consumer key and access token (the signature is not verified), else 401.
//
// The two listings page as X's do, newest first: max_results (mentions 5
// to 100, default 10; DM events 1 to 100, default 100; else a 400),
// meta.next_token when older results remain, and pagination_token to ask
// for them. The mentions timeline takes since_id and, like X's, reaches
// only the MentionReach newest mentions. An empty page has no data member.
//
// Like X it answers a post repeating an earlier one with a
// duplicate-content 403; it can inject failures (429 with
// x-rate-limit-reset, 401, 403, 5xx), once or until cleared, and it
// records what it got.
package xtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MentionReach is how many of an account's newest mentions its mentions
// timeline serves, however it is paged: X's limit.
const MentionReach = 800

// Account is a registered X account and the credentials that act as it.
type Account struct {
	ConsumerKey string
	Token       string
	ID          string
	Username    string
}

// Tweet is a post on the server.
type Tweet struct {
	ID             string `json:"id"`
	Text           string `json:"text"`
	AuthorID       string `json:"author_id"`
	ConversationID string `json:"conversation_id"`
	ReplyTo        string `json:"-"` // the post it answers, "" for none
}

// DM is a direct-message event; To is set on the ones the account sent.
type DM struct {
	ID       string `json:"id"`
	Text     string `json:"text"`
	SenderID string `json:"sender_id"`
	To       string `json:"-"`
}

// Call is one request the server received.
type Call struct {
	Endpoint string // users/me, tweets, mentions, likes, retweets, dm_events, dm_send
	Method   string
	Path     string
	Query    url.Values
	Body     map[string]any
	At       time.Time
	Failed   int // the status of an injected failure, 0 for none
}

// Failure is an injected answer: Status with an X problem document (its
// title the status text unless Title is set), and for 429 the
// x-rate-limit-reset header set to Reset.
type Failure struct {
	Status int
	Title  string
	Detail string
	Type   string
	Reset  time.Time
}

// Server is the test server. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	nextID   int64
	accounts map[string]*state // by access token
	failures map[string][]Failure
	always   map[string]Failure // token+" "+endpoint → the failure of every request
}

type state struct {
	Account
	mentions []Tweet
	posts    []Tweet
	likes    []string
	retweets []string
	dms      []DM // received and sent, oldest first
	calls    []Call
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{nextID: 1_000_000, accounts: map[string]*state{}, failures: map[string][]Failure{}, always: map[string]Failure{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// AddAccount registers an account.
func (s *Server) AddAccount(a Account) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accounts[a.Token] = &state{Account: a}
}

// id returns a new, larger id; s.mu is held.
func (s *Server) id() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// Mention adds a post mentioning the account of token and returns its id;
// an empty ConversationID makes it start its own thread.
func (s *Server) Mention(token string, t Tweet) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.ID = s.id()
	if t.ConversationID == "" {
		t.ConversationID = t.ID
	}
	s.accounts[token].mentions = append(s.accounts[token].mentions, t)
	return t.ID
}

// SendDM adds a direct message from senderID to the account of token and
// returns its event id.
func (s *Server) SendDM(token, senderID, text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := DM{ID: s.id(), Text: text, SenderID: senderID}
	s.accounts[token].dms = append(s.accounts[token].dms, d)
	return d.ID
}

// Fail makes the next request of token to endpoint fail with f, once per
// call of Fail.
func (s *Server) Fail(token, endpoint string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[token+" "+endpoint] = append(s.failures[token+" "+endpoint], f)
}

// FailEvery makes every request of token to endpoint fail with f until
// ClearFailures; failures queued by Fail come first.
func (s *Server) FailEvery(token, endpoint string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always[token+" "+endpoint] = f
}

// ClearFailures ends the failures of token's requests to endpoint, those
// of FailEvery and those queued by Fail.
func (s *Server) ClearFailures(token, endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.always, token+" "+endpoint)
	delete(s.failures, token+" "+endpoint)
}

// Calls returns the requests made with token, oldest first.
func (s *Server) Calls(token string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.accounts[token].calls...)
}

// Posts returns the posts the account created, oldest first.
func (s *Server) Posts(token string) []Tweet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Tweet(nil), s.accounts[token].posts...)
}

// Likes returns the ids of the posts the account liked.
func (s *Server) Likes(token string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accounts[token].likes...)
}

// Retweets returns the ids of the posts the account reposted.
func (s *Server) Retweets(token string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accounts[token].retweets...)
}

// SentDMs returns the direct messages the account sent, oldest first.
func (s *Server) SentDMs(token string) []DM {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []DM
	for _, d := range s.accounts[token].dms {
		if d.To != "" {
			out = append(out, d)
		}
	}
	return out
}

var (
	oauthParam = regexp.MustCompile(`(oauth_[a-z_]+)="([^"]*)"`)
	routes     = []struct {
		method, endpoint string
		path             *regexp.Regexp
	}{
		{http.MethodGet, "users/me", regexp.MustCompile(`^/2/users/me$`)},
		{http.MethodPost, "tweets", regexp.MustCompile(`^/2/tweets$`)},
		{http.MethodGet, "mentions", regexp.MustCompile(`^/2/users/([^/]+)/mentions$`)},
		{http.MethodPost, "likes", regexp.MustCompile(`^/2/users/([^/]+)/likes$`)},
		{http.MethodPost, "retweets", regexp.MustCompile(`^/2/users/([^/]+)/retweets$`)},
		{http.MethodGet, "dm_events", regexp.MustCompile(`^/2/dm_events$`)},
		{http.MethodPost, "dm_send", regexp.MustCompile(`^/2/dm_conversations/with/([^/]+)/messages$`)},
	}
)

// authorized returns the account whose consumer key and token the OAuth
// 1.0a Authorization header carries; s.mu is held.
func (s *Server) authorized(r *http.Request) *state {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "OAuth ") {
		return nil
	}
	params := map[string]string{}
	for _, m := range oauthParam.FindAllStringSubmatch(h, -1) {
		params[m[1]], _ = url.QueryUnescape(m[2])
	}
	a := s.accounts[params["oauth_token"]]
	if a == nil || a.ConsumerKey != params["oauth_consumer_key"] || params["oauth_signature"] == "" ||
		params["oauth_signature_method"] == "" || params["oauth_nonce"] == "" || params["oauth_timestamp"] == "" {
		return nil
	}
	return a
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var endpoint, pathID string
	for _, rt := range routes {
		if m := rt.path.FindStringSubmatch(r.URL.Path); m != nil && r.Method == rt.method {
			endpoint = rt.endpoint
			if len(m) > 1 {
				pathID = m[1]
			}
		}
	}
	if endpoint == "" {
		problem(w, http.StatusNotFound, "Not Found Error", "no such endpoint", "about:blank")
		return
	}
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	if len(raw) > 0 && json.Unmarshal(raw, &body) != nil {
		problem(w, http.StatusBadRequest, "Invalid Request", "the body is not JSON", "about:blank")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.authorized(r)
	if a == nil {
		problem(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized", "about:blank")
		return
	}
	a.calls = append(a.calls, Call{Endpoint: endpoint, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, At: time.Now()})
	if f, ok := s.failure(a.Token + " " + endpoint); ok {
		a.calls[len(a.calls)-1].Failed = f.Status
		if f.Status == http.StatusTooManyRequests {
			w.Header().Set("x-rate-limit-limit", "75")
			w.Header().Set("x-rate-limit-remaining", "0")
			w.Header().Set("x-rate-limit-reset", strconv.FormatInt(f.Reset.Unix(), 10))
		}
		title := f.Title
		if title == "" {
			title = http.StatusText(f.Status)
		}
		problem(w, f.Status, title, f.Detail, f.Type)
		return
	}
	if pathID != "" && endpoint != "dm_send" && pathID != a.ID {
		problem(w, http.StatusForbidden, "Forbidden", "You are not permitted to act as another user.", "about:blank")
		return
	}
	switch endpoint {
	case "users/me":
		result(w, http.StatusOK, map[string]any{"data": map[string]string{"id": a.ID, "name": a.Username, "username": a.Username}})
	case "tweets":
		s.createTweet(w, a, body)
	case "mentions":
		s.listMentions(w, a, r.URL.Query())
	case "likes":
		a.likes = append(a.likes, str(body["tweet_id"]))
		result(w, http.StatusOK, map[string]any{"data": map[string]bool{"liked": true}})
	case "retweets":
		a.retweets = append(a.retweets, str(body["tweet_id"]))
		result(w, http.StatusOK, map[string]any{"data": map[string]bool{"retweeted": true}})
	case "dm_events":
		s.listDMs(w, a, r.URL.Query())
	case "dm_send":
		d := DM{ID: s.id(), Text: str(body["text"]), SenderID: a.ID, To: pathID}
		a.dms = append(a.dms, d)
		result(w, http.StatusCreated, map[string]any{"data": map[string]string{"dm_conversation_id": a.ID + "-" + pathID, "dm_event_id": d.ID}})
	}
}

// createTweet records a post; a text already posted is a duplicate.
func (s *Server) createTweet(w http.ResponseWriter, a *state, body map[string]any) {
	text := str(body["text"])
	for _, p := range a.posts {
		if p.Text == text {
			problem(w, http.StatusForbidden, "Forbidden", "You are not allowed to create a Tweet with duplicate content.", "about:blank")
			return
		}
	}
	t := Tweet{ID: s.id(), Text: text, AuthorID: a.ID}
	if reply, ok := body["reply"].(map[string]any); ok {
		t.ReplyTo = str(reply["in_reply_to_tweet_id"])
	}
	a.posts = append(a.posts, t)
	result(w, http.StatusCreated, map[string]any{"data": map[string]string{"id": t.ID, "text": t.Text}})
}

// failure is the injected failure of the next request to key (token and
// endpoint), if any; s.mu is held.
func (s *Server) failure(key string) (Failure, bool) {
	if q := s.failures[key]; len(q) > 0 {
		s.failures[key] = q[1:]
		return q[0], true
	}
	f, ok := s.always[key]
	return f, ok
}

// listMentions answers a page of the mentions after since_id among the
// MentionReach newest, newest first.
func (s *Server) listMentions(w http.ResponseWriter, a *state, q url.Values) {
	all := append([]Tweet(nil), a.mentions...)
	sort.Slice(all, func(i, j int) bool { return idOf(all[i].ID) > idOf(all[j].ID) })
	if len(all) > MentionReach {
		all = all[:MentionReach]
	}
	since := idOf(q.Get("since_id"))
	var out []Tweet
	for _, t := range all {
		if idOf(t.ID) > since {
			out = append(out, t)
		}
	}
	out, meta, ok := page(w, q, 5, 10, out, func(t Tweet) string { return t.ID })
	if !ok {
		return
	}
	body := map[string]any{"meta": meta}
	if len(out) > 0 {
		meta["newest_id"], meta["oldest_id"] = out[0].ID, out[len(out)-1].ID
		body["data"] = out
	}
	result(w, http.StatusOK, body)
}

// listDMs answers a page of the account's direct-message events, newest
// first, its own included, as X does.
func (s *Server) listDMs(w http.ResponseWriter, a *state, q url.Values) {
	out := make([]map[string]string, 0, len(a.dms))
	for i := len(a.dms) - 1; i >= 0; i-- {
		d := a.dms[i]
		out = append(out, map[string]string{"id": d.ID, "event_type": "MessageCreate", "text": d.Text, "sender_id": d.SenderID})
	}
	out, meta, ok := page(w, q, 1, 100, out, func(e map[string]string) string { return e["id"] })
	if !ok {
		return
	}
	body := map[string]any{"meta": meta}
	if len(out) > 0 {
		body["data"] = out
	}
	result(w, http.StatusOK, body)
}

// maxPage is the largest max_results of a listing.
const maxPage = 100

// page returns the page of items (newest first) that q asks for, and its
// meta: from pagination_token (the id below which the page starts), at
// most max_results (minimum low, def when absent), with next_token when
// older items remain. A bad parameter is answered with a 400 and !ok.
func page[T any](w http.ResponseWriter, q url.Values, low, def int, items []T, id func(T) string) ([]T, map[string]any, bool) {
	limit := def
	if v := q.Get("max_results"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < low || n > maxPage {
			problem(w, http.StatusBadRequest, "Invalid Request", "The `max_results` query parameter value ["+v+"] is not between "+
				strconv.Itoa(low)+" and "+strconv.Itoa(maxPage), "https://api.twitter.com/2/problems/invalid-request")
			return nil, nil, false
		}
		limit = n
	}
	if tok := q.Get("pagination_token"); tok != "" {
		below, err := strconv.ParseInt(strings.TrimPrefix(tok, tokenPrefix), 36, 64)
		if err != nil || !strings.HasPrefix(tok, tokenPrefix) {
			problem(w, http.StatusBadRequest, "Invalid Request", "The `pagination_token` query parameter value ["+tok+"] is not valid",
				"https://api.twitter.com/2/problems/invalid-request")
			return nil, nil, false
		}
		i := 0
		for i < len(items) && idOf(id(items[i])) >= below {
			i++
		}
		items = items[i:]
	}
	meta := map[string]any{"result_count": min(len(items), limit)}
	if len(items) > limit {
		meta["next_token"] = tokenPrefix + strconv.FormatInt(idOf(id(items[limit-1])), 36)
		items = items[:limit]
	}
	return items, meta, true
}

// tokenPrefix starts a pagination token, opaque to clients as X's are.
const tokenPrefix = "7140dibdnow9c7btw"

// idOf is the number of an id, 0 for none.
func idOf(id string) int64 {
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func result(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-rate-limit-limit", "75")
	w.Header().Set("x-rate-limit-remaining", "74")
	w.Header().Set("x-rate-limit-reset", strconv.FormatInt(time.Now().Add(15*time.Minute).Unix(), 10))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func problem(w http.ResponseWriter, status int, title, detail, typ string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": title, "detail": detail, "type": typ, "status": status})
}
