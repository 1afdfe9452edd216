package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/agentd/agentd/netguard"
	"github.com/agentd/agentd/signature"
)

// MaxResultBytes bounds what is read of a tool's answer; the turn cuts
// what the model sees further.
const MaxResultBytes = 64 << 10

// actionTool is the tool of an action handler.
func actionTool(a Action) Tool {
	params := a.Parameters
	if len(params) == 0 {
		params = DefaultParameters
	}
	return Tool{Name: a.Name, Description: a.Description, Parameters: params, Source: SourceAction}
}

// actionCall is the body of a call to an action handler.
type actionCall struct {
	Type      string     `json:"type"`
	Timestamp string     `json:"timestamp"`
	Data      actionData `json:"data"`
}

type actionData struct {
	CallID         string          `json:"callId"`
	AgentID        string          `json:"agentId"`
	Action         string          `json:"action"`
	Arguments      json.RawMessage `json:"arguments"`
	ConversationID string          `json:"conversationId"`
	UserID         *string         `json:"userId"`
	RoomID         *string         `json:"roomId"`
	Platform       string          `json:"platform"`
}

// callAction POSTs the call to the action's handler, signed with the
// agent's ACTION_SECRET when it has one. A 2xx answer is the result;
// anything else is a failed call whose reason says what happened.
func (s *Service) callAction(ctx context.Context, spec Spec, a Action, c Call) Result {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	now := s.cfg.Now()
	body, err := json.Marshal(actionCall{Type: "action.call", Timestamp: now.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Data: actionData{CallID: c.ID, AgentID: spec.AgentID, Action: a.Name, Arguments: c.Arguments,
			ConversationID: c.Turn.ConversationID, UserID: optional(c.Turn.UserID), RoomID: optional(c.Turn.RoomID),
			Platform: c.Turn.Platform}})
	if err != nil {
		return Failure("the call could not be encoded")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.Handler, bytes.NewReader(body))
	if err != nil {
		return Failure("the handler URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentd-actions/1")
	if spec.ActionSecret != "" {
		if err := signCall(req, spec.ActionSecret, c.ID, now.Unix(), body); err != nil {
			return Failure("ACTION_SECRET is not a whsec_ secret")
		}
	}
	res, err := s.client.Do(req)
	if err != nil {
		return Failure(transportReason(ctx, err))
	}
	defer res.Body.Close()
	return handlerResult(res)
}

// signCall adds the Standard Webhooks headers, as webhook deliveries carry.
func signCall(req *http.Request, secret, id string, ts int64, body []byte) error {
	sig, err := signature.Sign(secret, id, ts, body)
	if err != nil {
		return err
	}
	req.Header.Set(signature.HeaderID, id)
	req.Header.Set(signature.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(signature.HeaderSignature, sig)
	return nil
}

// handlerResult reads a handler's answer: the body of a 2xx (JSON
// compacted, text as is), else a failure naming the status.
func handlerResult(res *http.Response) Result {
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxResultBytes))
	switch {
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return Failure(fmt.Sprintf("the handler answered a redirect (%d), which is not followed", res.StatusCode))
	case res.StatusCode < 200 || res.StatusCode >= 300:
		return Failure(fmt.Sprintf("the handler answered %d", res.StatusCode))
	case err != nil:
		return Failure("the handler's answer could not be read")
	}
	return Result{Text: compactJSON(raw), OK: true}
}

// compactJSON compacts raw when it is JSON (key order kept), else returns
// it as text.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Valid(raw) && json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// transportReason says why a call got no answer, in words that name no
// address. A deadline shows in err as a timeout of the connection, which
// can come a moment before ctx says so.
func transportReason(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return "the handler did not answer in time"
	}
	return netguard.Reason(err, "the handler")
}

// optional is nil for "", so the JSON says null.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
