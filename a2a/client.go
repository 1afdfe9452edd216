package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/netguard"
	"github.com/agentd/agentd/turn"
)

// The bounds of the client.
const (
	// maxRemoteBody bounds a card or a JSON-RPC answer read from a remote.
	maxRemoteBody = 4 << 20
	// cardTTL is how long a remote's card is kept before it is read again.
	cardTTL = 5 * time.Minute
	// taskPoll is how often a task the remote answered unfinished is read
	// again.
	taskPoll = 500 * time.Millisecond
)

// Client asks remote A2A agents for ask_agent: it reads an agent's card
// (kept cardTTL), then sends SendMessage over JSON-RPC in A2A 1.0, or
// message/send in 0.3 when the card offers only that, and reads the task
// until it ends. Every request goes through the address guard and carries
// the remote's headers. It speaks the wire types the server side serves.
type Client struct {
	http *http.Client
	mu   sync.Mutex
	// cards are the endpoints read from the cards, by card URL.
	cards map[string]cachedEndpoint
}

var _ turn.Remotes = (*Client)(nil)

// NewClient is a Client whose requests each take at most timeout; unless
// allowPrivate, internal addresses are refused when dialled.
func NewClient(timeout time.Duration, allowPrivate bool) *Client {
	return &Client{http: netguard.NewClient(timeout, allowPrivate), cards: map[string]cachedEndpoint{}}
}

// endpoint is where a remote agent takes JSON-RPC, and in which version.
type endpoint struct {
	url string
	v   clientVersion
}

type cachedEndpoint struct {
	endpoint
	until time.Time
}

// Ask sends text to r and returns the text of the reply's artifacts (or
// of the reply message); its errors say why in the asking model's terms.
func (c *Client) Ask(ctx context.Context, r turn.RemoteAgent, text string, depth int) (string, error) {
	ep, err := c.endpoint(ctx, r)
	if err != nil {
		return "", err
	}
	var raw json.RawMessage
	if err := c.rpc(ctx, r, ep, ep.v.send, ep.v.sendParams(text, askMetadata(depth)), &raw); err != nil {
		return "", err
	}
	for {
		reply, err := ep.v.parse(raw)
		switch {
		case err != nil:
			return "", err
		case reply.state == "completed":
			return reply.text, nil
		case reply.state != "working" && reply.state != "submitted":
			return "", fmt.Errorf("the remote agent's task ended %s: %s", reply.state, reply.text)
		}
		select {
		case <-ctx.Done():
			return "", errors.New("timeout")
		case <-time.After(taskPoll):
		}
		if err := c.rpc(ctx, r, ep, ep.v.get, map[string]string{"id": reply.taskID}, &raw); err != nil {
			return "", err
		}
	}
}

// endpoint reads r's card, or takes it from the cache.
func (c *Client) endpoint(ctx context.Context, r turn.RemoteAgent) (endpoint, error) {
	c.mu.Lock()
	cached, ok := c.cards[r.URL]
	c.mu.Unlock()
	if ok && time.Now().Before(cached.until) {
		return cached.endpoint, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return endpoint{}, errors.New("the remote's card URL is not valid")
	}
	req.Header.Set("A2A-Version", version10)
	var card remoteCard
	if err := c.do(req, r, &card); err != nil {
		return endpoint{}, fmt.Errorf("the remote's card could not be read: %w", err)
	}
	ep, err := card.endpoint()
	if err != nil {
		return endpoint{}, err
	}
	c.mu.Lock()
	c.cards[r.URL] = cachedEndpoint{endpoint: ep, until: time.Now().Add(cardTTL)}
	c.mu.Unlock()
	return ep, nil
}

// remoteCard is what the client reads of a card, 1.0's or 0.3's.
type remoteCard struct {
	SupportedInterfaces []AgentInterface `json:"supportedInterfaces"`
	URL                 string           `json:"url"`
	PreferredTransport  string           `json:"preferredTransport"`
}

// endpoint picks the JSON-RPC interface of 1.0, else of 0.3 (the
// interfaces', else the 0.3 card's own url).
func (card remoteCard) endpoint() (endpoint, error) {
	var legacy string
	for _, in := range card.SupportedInterfaces {
		switch {
		case in.ProtocolBinding != bindingJSONRPC || netguard.CheckURL(in.URL, true) != "":
		case strings.HasPrefix(in.ProtocolVersion, "1."):
			return endpoint{url: in.URL, v: v1Client}, nil
		case strings.HasPrefix(in.ProtocolVersion, "0.3") && legacy == "":
			legacy = in.URL
		}
	}
	if legacy == "" && (card.PreferredTransport == "" || card.PreferredTransport == bindingJSONRPC) &&
		netguard.CheckURL(card.URL, true) == "" {
		legacy = card.URL
	}
	if legacy == "" {
		return endpoint{}, errors.New("the remote's card offers no JSON-RPC interface of A2A 1.0 or 0.3")
	}
	return endpoint{url: legacy, v: v03Client}, nil
}

// rpc calls method at ep with params and decodes the result into out.
func (c *Client) rpc(ctx context.Context, r turn.RemoteAgent, ep endpoint, method string, params any, out *json.RawMessage) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": jsonrpcVersion, "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(body))
	if err != nil {
		return errors.New("the remote's URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", ep.v.version)
	var res struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErrorBody   `json:"error"`
	}
	if err := c.do(req, r, &res); err != nil {
		return fmt.Errorf("the remote agent could not be asked: %w", err)
	}
	if res.Error != nil {
		return fmt.Errorf("the remote agent refused: %s (%d)", res.Error.Message, res.Error.Code)
	}
	*out = res.Result
	return nil
}

// do sends req with r's headers and decodes its JSON answer into out.
func (c *Client) do(req *http.Request, r turn.RemoteAgent, out any) error {
	req.Header.Set("Accept", "application/json")
	for name, value := range r.Headers {
		req.Header.Set(name, value)
	}
	res, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("timeout")
		}
		return errors.New(netguard.Reason(err, "the remote agent"))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxRemoteBody+1))
	switch {
	case err != nil:
		return errors.New("the answer could not be read")
	case len(raw) > maxRemoteBody:
		return fmt.Errorf("the answer is over %d bytes", maxRemoteBody)
	case res.StatusCode != http.StatusOK:
		return fmt.Errorf("HTTP %d", res.StatusCode)
	case json.Unmarshal(raw, out) != nil:
		return errors.New("the answer is not the JSON expected")
	}
	return nil
}

// remoteReply is a remote's answer in either version: a task's id and
// state (0.3's names: completed, working, failed, ...) and its text, or a
// message (state completed).
type remoteReply struct {
	taskID, state, text string
}

// clientVersion is how the client speaks one version of the protocol.
type clientVersion struct {
	version, send, get string
	sendParams         func(text string, metadata json.RawMessage) any
	parse              func(raw json.RawMessage) (remoteReply, error)
}

var (
	v1Client = clientVersion{version: version10, send: "SendMessage", get: "GetTask",
		sendParams: func(text string, metadata json.RawMessage) any {
			return sendParams{Message: &Message{MessageID: newID("msg_"), Role: RoleUser, Parts: []Part{textPart(text)},
				Metadata: metadata}}
		},
		parse: parseV1}
	v03Client = clientVersion{version: version03, send: "message/send", get: "tasks/get",
		sendParams: func(text string, metadata json.RawMessage) any {
			return legacySendParams{Message: &legacyMessage{Kind: "message", MessageID: newID("msg_"), Role: "user",
				Parts: []legacyPart{legacyText(text)}, Metadata: metadata}}
		},
		parse: parseV03}
)

// parseV1 reads SendMessage's or GetTask's result: a task, or a message.
func parseV1(raw json.RawMessage) (remoteReply, error) {
	var res struct {
		Task    *Task    `json:"task"`
		Message *Message `json:"message"`
	}
	var bare Task // GetTask answers the task itself
	if json.Unmarshal(raw, &res) != nil || json.Unmarshal(raw, &bare) != nil {
		return remoteReply{}, errors.New("the remote agent's answer is not an A2A 1.0 task or message")
	}
	switch {
	case res.Message != nil:
		return remoteReply{state: "completed", text: texts(res.Message.Parts, v1Text)}, nil
	case res.Task == nil && bare.ID != "":
		res.Task = &bare
	case res.Task == nil:
		return remoteReply{}, errors.New("the remote agent's answer is not an A2A 1.0 task or message")
	}
	t := res.Task
	state := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(t.Status.State, "TASK_STATE_")), "_", "-")
	var parts []Part
	for _, a := range t.Artifacts {
		parts = append(parts, a.Parts...)
	}
	if (len(parts) == 0 || state != "completed") && t.Status.Message != nil {
		parts = t.Status.Message.Parts
	}
	return remoteReply{taskID: t.ID, state: state, text: texts(parts, v1Text)}, nil
}

// parseV03 reads message/send's or tasks/get's result: a task, or a
// message, told apart by kind.
func parseV03(raw json.RawMessage) (remoteReply, error) {
	var res struct {
		Kind  string       `json:"kind"`
		Parts []legacyPart `json:"parts"`
		legacyTask
	}
	if json.Unmarshal(raw, &res) != nil || (res.Kind != "message" && res.Kind != "task") {
		return remoteReply{}, errors.New("the remote agent's answer is not an A2A 0.3 task or message")
	}
	if res.Kind == "message" {
		return remoteReply{state: "completed", text: texts(res.Parts, legacyPartText)}, nil
	}
	var parts []legacyPart
	for _, a := range res.Artifacts {
		parts = append(parts, a.Parts...)
	}
	if (len(parts) == 0 || res.Status.State != "completed") && res.Status.Message != nil {
		parts = res.Status.Message.Parts
	}
	return remoteReply{taskID: res.ID, state: res.Status.State, text: texts(parts, legacyPartText)}, nil
}

func v1Text(p Part) *string               { return p.Text }
func legacyPartText(p legacyPart) *string { return p.Text }

// texts joins the text parts of parts, a blank line apart.
func texts[P any](parts []P, text func(P) *string) string {
	var out []string
	for _, p := range parts {
		if t := text(p); t != nil {
			out = append(out, *t)
		}
	}
	return strings.Join(out, "\n\n")
}

// AskDepthKey is the member of a message's metadata that tells another
// agentd how many runs of a chain of asks led to it, so the chain's bound
// (turn.MaxAskDepth) holds across servers; other agents ignore it.
const AskDepthKey = "agentdAskDepth"

// askMetadata is the metadata of an ask sent depth runs down a chain.
func askMetadata(depth int) json.RawMessage {
	raw, _ := json.Marshal(map[string]int{AskDepthKey: depth}) // a map of ints
	return raw
}

// askDepthOf is the depth a message's metadata tells, 0 for none; a
// figure past turn.MaxAskDepth counts as that.
func askDepthOf(metadata json.RawMessage) int {
	var m map[string]json.RawMessage
	var depth int
	if json.Unmarshal(metadata, &m) != nil || json.Unmarshal(m[AskDepthKey], &depth) != nil {
		return 0
	}
	return min(max(depth, 0), turn.MaxAskDepth)
}
