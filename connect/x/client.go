package x

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/dghubble/oauth1"
)

// maxRateLimitTries bounds the attempts of one call that X keeps answering
// with 429, each after waiting for the limit's reset.
const maxRateLimitTries = 3

// apiError is an X API failure: its HTTP status and problem document.
type apiError struct {
	Op     string
	Status int
	Title  string
	Detail string
	Type   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("x: %s: %d %s: %s", e.Op, e.Status, e.Title, e.Detail)
}

// errorKind sorts X's failures by what the connection does about them.
type errorKind int

const (
	kindTransient errorKind = iota // retried later
	kindAuth                       // the credentials are rejected: state error
	kindDuplicate                  // a duplicate post: skipped and logged
	kindForbidden                  // the access tier does not allow it
)

// kindOf classifies err. X answers 401 to bad credentials, and 403 to
// duplicate content, to an access tier without the endpoint or an app
// outside a Project (type client-forbidden, whose detail speaks of
// "authenticating" with "keys and tokens": the type decides), and to an
// app without the permission (oauth1-permissions,
// unsupported-authentication: a credentials problem).
func kindOf(err error) errorKind {
	var ae *apiError
	if !errors.As(err, &ae) {
		return kindTransient
	}
	text := strings.ToLower(ae.Detail + " " + ae.Title)
	switch {
	case ae.Status == http.StatusUnauthorized:
		return kindAuth
	case ae.Status != http.StatusForbidden:
		return kindTransient
	case strings.Contains(text, "duplicate"):
		return kindDuplicate
	case strings.Contains(ae.Type, "client-forbidden"):
		return kindForbidden
	case strings.Contains(ae.Type, "oauth1-permissions"), strings.Contains(ae.Type, "unsupported-authentication"),
		strings.Contains(text, "authenticat"), strings.Contains(text, "token"):
		return kindAuth
	}
	return kindForbidden
}

// client calls the X API v2 as one user. It waits out rate limits: a call
// whose endpoint has no requests left waits for x-rate-limit-reset first,
// and a 429 waits for its reset before the call is tried again.
type client struct {
	http *http.Client
	base string
	now  func() time.Time // wall clock: X's resets are Unix times

	mu      sync.Mutex
	blocked map[string]time.Time // endpoint → when its limit resets
}

func newClient(base string, hc *http.Client, consumerKey, consumerSecret, token, tokenSecret string) *client {
	ctx := context.WithValue(context.Background(), oauth1.HTTPClient, hc)
	signed := oauth1.NewConfig(consumerKey, consumerSecret).Client(ctx, oauth1.NewToken(token, tokenSecret))
	return &client{http: signed, base: strings.TrimSuffix(base, "/"), now: time.Now, blocked: map[string]time.Time{}}
}

// call sends method path (endpoint names its rate limit, e.g. "mentions")
// with body as JSON when not nil and decodes the answer into out.
func (c *client) call(ctx context.Context, endpoint, method, path string, query url.Values, body, out any) error {
	var payload []byte
	if body != nil {
		payload, _ = json.Marshal(body)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	for try := 1; ; try++ {
		if err := c.waitLimit(ctx, endpoint); err != nil {
			return err
		}
		err := c.once(ctx, endpoint, method, u, payload, out)
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests || try == maxRateLimitTries {
			return err
		}
	}
}

// once makes one request, within connect.CallTimeout, and records its
// rate limit.
func (c *client) once(ctx context.Context, endpoint, method, u string, payload []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, connect.CallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("x: %s: %w", endpoint, err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("x: %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	c.noteLimit(endpoint, resp)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("x: %s: read: %w", endpoint, err)
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Title, Detail, Type string
		}
		_ = json.Unmarshal(raw, &p) // a body that is no problem document leaves them empty
		return &apiError{Op: endpoint, Status: resp.StatusCode, Title: p.Title, Detail: p.Detail, Type: p.Type}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("x: %s: decode: %w", endpoint, err)
	}
	return nil
}

// noteLimit blocks endpoint until its reset when no request is left (or
// the answer is 429); without a reset header a 429 waits a minute.
func (c *client) noteLimit(endpoint string, resp *http.Response) {
	remaining, errR := strconv.Atoi(resp.Header.Get("x-rate-limit-remaining"))
	reset, errT := strconv.ParseInt(resp.Header.Get("x-rate-limit-reset"), 10, 64)
	exhausted := resp.StatusCode == http.StatusTooManyRequests || (errR == nil && remaining <= 0)
	if !exhausted {
		return
	}
	until := c.now().Add(time.Minute)
	if errT == nil {
		until = time.Unix(reset, 0)
	}
	c.mu.Lock()
	c.blocked[endpoint] = until
	c.mu.Unlock()
}

// waitLimit waits until endpoint's limit has reset.
func (c *client) waitLimit(ctx context.Context, endpoint string) error {
	c.mu.Lock()
	until := c.blocked[endpoint]
	c.mu.Unlock()
	d := until.Sub(c.now())
	if d <= 0 {
		return nil
	}
	if !connect.Sleep(ctx, d) {
		return fmt.Errorf("x: %s: waiting for the rate limit: %w", endpoint, ctx.Err())
	}
	return nil
}

// user is an X account.
type user struct {
	ID       string `json:"id"`
	Username string `json:"username"`
}

// tweet is a post as the mentions timeline returns it.
type tweet struct {
	ID             string `json:"id"`
	Text           string `json:"text"`
	AuthorID       string `json:"author_id"`
	ConversationID string `json:"conversation_id"`
}

// dmEvent is one direct-message event.
type dmEvent struct {
	ID        string `json:"id"`
	EventType string `json:"event_type"`
	Text      string `json:"text"`
	SenderID  string `json:"sender_id"`
}

func (c *client) me(ctx context.Context) (user, error) {
	var r struct{ Data user }
	err := c.call(ctx, "users/me", http.MethodGet, "/2/users/me", nil, nil, &r)
	return r.Data, err
}

// mentionReach is how far back the mentions timeline reaches: X serves
// only the 800 newest mentions, however they are paged.
const mentionReach = 800

// maxPages bounds the pages of one listing (the mentions timeline's reach
// is 8 pages of 100), in case X keeps handing out next tokens.
const maxPages = 10

// pageMeta is the meta of a page of a listing: next_token is set while
// older results remain.
type pageMeta struct {
	NextToken string `json:"next_token"`
}

// newestMentions returns a few of the newest posts mentioning userID,
// newest first.
func (c *client) newestMentions(ctx context.Context, userID string) ([]tweet, error) {
	q := url.Values{"max_results": {"5"}, "tweet.fields": {"author_id,conversation_id"}}
	var r struct{ Data []tweet }
	err := c.call(ctx, "mentions", http.MethodGet, "/2/users/"+url.PathEscape(userID)+"/mentions", q, nil, &r)
	return r.Data, err
}

// mentions returns every post mentioning userID after sinceID, newest
// first: X lists them newest first, a page at a time, and its next_token
// (sent back as pagination_token) leads down to since_id. complete is
// false when there may be more than it reached: X's timeline ends after
// mentionReach mentions, even when since_id is older.
func (c *client) mentions(ctx context.Context, userID, sinceID string) (tweets []tweet, complete bool, err error) {
	q := url.Values{"max_results": {"100"}, "tweet.fields": {"author_id,conversation_id"}, "since_id": {sinceID}}
	for range maxPages {
		var r struct {
			Data []tweet
			Meta pageMeta
		}
		if err := c.call(ctx, "mentions", http.MethodGet, "/2/users/"+url.PathEscape(userID)+"/mentions", q, nil, &r); err != nil {
			return nil, false, err
		}
		tweets = append(tweets, r.Data...)
		if r.Meta.NextToken == "" {
			return tweets, len(tweets) < mentionReach, nil
		}
		q.Set("pagination_token", r.Meta.NextToken)
	}
	return tweets, false, nil
}

// post creates a post, replying to replyTo unless it is "".
func (c *client) post(ctx context.Context, text, replyTo string) error {
	body := map[string]any{"text": text}
	if replyTo != "" {
		body["reply"] = map[string]string{"in_reply_to_tweet_id": replyTo}
	}
	return c.call(ctx, "tweets", http.MethodPost, "/2/tweets", nil, body, nil)
}

func (c *client) like(ctx context.Context, userID, tweetID string) error {
	return c.call(ctx, "likes", http.MethodPost, "/2/users/"+url.PathEscape(userID)+"/likes", nil, map[string]string{"tweet_id": tweetID}, nil)
}

func (c *client) repost(ctx context.Context, userID, tweetID string) error {
	return c.call(ctx, "retweets", http.MethodPost, "/2/users/"+url.PathEscape(userID)+"/retweets", nil, map[string]string{"tweet_id": tweetID}, nil)
}

// dmEvents returns the direct-message events after sinceID, newest
// first, paging (X lists them newest first, a page at a time) until a
// page reaches sinceID; with sinceID "" only the newest page. complete is
// false when it stopped after maxPages with newer events left unread.
func (c *client) dmEvents(ctx context.Context, sinceID string) (events []dmEvent, complete bool, err error) {
	q := url.Values{"event_types": {"MessageCreate"}, "dm_event.fields": {"id,event_type,text,sender_id"}, "max_results": {"100"}}
	for range maxPages {
		var r struct {
			Data []dmEvent
			Meta pageMeta
		}
		if err := c.call(ctx, "dm_events", http.MethodGet, "/2/dm_events", q, nil, &r); err != nil {
			return nil, false, err
		}
		events = append(events, r.Data...)
		reached := sinceID == "" || (len(r.Data) > 0 && !newer(r.Data[len(r.Data)-1].ID, sinceID))
		if reached || r.Meta.NextToken == "" {
			return events, true, nil
		}
		q.Set("pagination_token", r.Meta.NextToken)
	}
	return events, false, nil
}

// sendDM sends text to the one-to-one conversation with participantID.
func (c *client) sendDM(ctx context.Context, participantID, text string) error {
	return c.call(ctx, "dm_send", http.MethodPost, "/2/dm_conversations/with/"+url.PathEscape(participantID)+"/messages", nil,
		map[string]string{"text": text}, nil)
}
