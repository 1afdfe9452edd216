package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/agentd/agentd/streamlog"
	"github.com/labstack/echo/v4"
)

// cancelWait bounds how long a cancel waits for the reply to stop and be
// stored: longer than a follower takes to end the stream of a dead replica
// (ReplicaLostAfter and a check), so such a cancel answers the ended
// stream, not a timeout.
const cancelWait = 30 * time.Second

// cancelWaitFor is cancelWait, or longer when replicas are given longer
// than the default to be taken for dead.
func cancelWaitFor(lostAfter time.Duration) time.Duration { return max(cancelWait, lostAfter*3/2) }

// ResumeStream follows a streamed reply from the event after Last-Event-ID
// (from its start without one), on whichever replica runs it.
func (s *Server) ResumeStream(ctx context.Context, req gen.ResumeStreamRequestObject) (gen.ResumeStreamResponseObject, error) {
	key, err := s.streamKey(ctx, req.AgentId, req.MessageId)
	if err != nil {
		return nil, err
	}
	after := 0
	if id := req.Params.LastEventID; id != nil {
		after, _ = strconv.Atoi(*id) // the spec allows digits alone
	}
	f, err := s.streams.Follow(ctx, key, after)
	if err != nil {
		return nil, err
	}
	return &resumedStream{s: s, ctx: ctx, follower: f}, nil
}

// CancelMessage stops a streamed reply wherever it runs and answers the
// stored reply's partial flag; a reply that ended is left as it is.
func (s *Server) CancelMessage(ctx context.Context, req gen.CancelMessageRequestObject) (gen.CancelMessageResponseObject, error) {
	key, err := s.streamKey(ctx, req.AgentId, req.MessageId)
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, cancelWaitFor(s.cfg.ReplicaLostAfter))
	defer cancel()
	st, err := s.streams.Cancel(wait, key)
	partial := st.Partial
	if errors.Is(err, streamlog.ErrNotFound) {
		// Its stream is no longer kept, or it was never streamed: its run
		// is cancelled if it has not ended, else the stored reply says.
		partial, err = s.cancelRunOfMessage(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return gen.CancelMessage200JSONResponse{Body: gen.CancelledMessageEnvelope{Success: true,
		Data: gen.CancelledMessage{MessageId: req.MessageId, Partial: partial}}}, nil
}

// streamKey is the key of the agent's reply messageID in the caller's
// account, once the agent is found there.
func (s *Server) streamKey(ctx context.Context, agentID, messageID string) (streamlog.Key, error) {
	accountID := principalFrom(ctx).Account.ID
	if _, err := s.cfg.Store.Agents.GetAgent(ctx, accountID, agentID); err != nil {
		return streamlog.Key{}, err
	}
	return streamlog.Key{AccountID: accountID, AgentID: agentID, MessageID: messageID}, nil
}

// streamClaim hands a streamed request's Idempotency-Key from the gate to
// the stream, which settles it when the reply ends rather than when the
// client goes.
type streamClaim struct {
	s                     *Server
	requestID             string
	accountID, key, token string
	taken                 bool
	// unhold stops the renewal of the key's lease (Server.holdKey).
	unhold func()
}

type streamClaimKey struct{}

// withStreamClaim puts a claim where detach finds it (a streamed reply's request only).
func withStreamClaim(req *http.Request, c *streamClaim) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), streamClaimKey{}, c))
}

// takeStreamClaim takes the request's claim, nil when it has none.
func takeStreamClaim(ctx context.Context) *streamClaim {
	c, _ := ctx.Value(streamClaimKey{}).(*streamClaim)
	if c != nil {
		c.taken = true
	}
	return c
}

// settle stores the stream's events, its last included, as the key's
// answer when it ended well (done), and frees the key otherwise, so a
// retry runs afresh.
func (c *streamClaim) settle(ctx context.Context, events []streamlog.Event, ok bool) {
	if c == nil {
		return
	}
	c.unhold()
	// The request's context, for its trace: the client may have gone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if !ok {
		if err := c.s.cfg.Store.Idempotency.ReleaseIdempotencyKey(ctx, c.accountID, c.key, c.token); err != nil {
			c.s.cfg.Logger.WarnContext(ctx, "release idempotency key", "request_id", c.requestID, "error", err)
		}
		return
	}
	var body strings.Builder
	for _, e := range events {
		body.WriteString(sseFrame(e))
	}
	answer := domain.IdempotentAnswer{Status: http.StatusOK, Header: map[string]string{echo.HeaderContentType: "text/event-stream"},
		Body: []byte(body.String())}
	if err := c.s.cfg.Store.Idempotency.CompleteIdempotencyKey(ctx, c.accountID, c.key, c.token, answer); err != nil {
		c.s.cfg.Logger.WarnContext(ctx, "store idempotent answer", "request_id", c.requestID, "error", err)
	}
}

// cancelRunOfMessage cancels the run behind a reply that was not streamed,
// unless it ended: its reply is then partial (what it had said is kept
// so). A run that ended answers its stored reply's partial flag.
func (s *Server) cancelRunOfMessage(ctx context.Context, key streamlog.Key) (bool, error) {
	run, err := s.cfg.Store.Runs.RunOfMessage(ctx, key.AccountID, key.AgentID, key.MessageID)
	if err == nil && !run.Status.Final() {
		_, err = s.cfg.Turns.Cancel(ctx, key.AccountID, key.AgentID, run.ID)
		if err == nil || errors.Is(err, domain.ErrRunFinished) {
			return true, nil
		}
	}
	if err != nil && !errors.Is(err, domain.ErrRunNotFound) {
		return false, err
	}
	return s.cfg.Store.Conversations.ReplyPartial(ctx, key.AccountID, key.AgentID, key.MessageID)
}
