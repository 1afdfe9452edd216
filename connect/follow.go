package connect

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
)

// The looks at a run that waits for decisions. A decision may come from
// any replica (a button, the API, the console, the expiry) and a run may
// wait for days, so the looks thin out from followFirst to followMax;
// once the run goes on, Wait wakes as soon as it ends.
const (
	followFirst = time.Second
	followMax   = 15 * time.Second
	// followMargin is how long past its last wait's expiry a run is
	// followed: the expiry acts within seconds, and the rest of the run
	// (its tools, the model) has the remainder to end.
	followMargin = 30 * time.Minute
)

// followers run the goroutines that follow the runs waiting for
// decisions. They belong to the replica, not to a lease: a run may wait
// for days, while its connection's lease moves or its runner restarts
// with a new configuration. They end with the supervisor.
type followers struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // orders spawn before stop's Wait
	wg     sync.WaitGroup
}

func newFollowers() *followers {
	ctx, cancel := context.WithCancel(context.Background())
	return &followers{ctx: ctx, cancel: cancel}
}

// spawn runs fn with the followers' context, unless they were stopped:
// false then.
func (f *followers) spawn(fn func(ctx context.Context)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return false
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn(f.ctx)
	}()
	return true
}

// stop ends the followers and waits for them.
func (f *followers) stop() {
	f.mu.Lock()
	f.cancel()
	f.mu.Unlock()
	f.wg.Wait()
}

// await answers in, whose run waits for decisions, once the run has
// ended. in is finished now, under the lease, as an answer would be: its
// run is stored, and answering in again would make another. Then one of
// the replica's followers asks the admins and, whichever process decided
// and went on with the run, sends its reply as the answer. A replica that
// stops meanwhile loses that delivery: the reply stays in the run and the
// conversation's history, and the chat misses it.
func (c *Conn) await(ctx context.Context, in Inbound, run domain.Run, r Reply) {
	if !c.finish(ctx, in) {
		return
	}
	c.follows.spawn(func(ctx context.Context) { _ = c.follow(ctx, in, run, r) }) // logged as it went; a stopped replica loses it
}

// follow asks the admins about the calls run waits for, each time it
// waits again, and sends its reply as the answer to in once it has ended.
// It gives up followMargin past the last wait's expiry, or past its start
// for a run that has not waited (a schedule's, followed from its accept).
// It returns why the reply was not sent, nil once it was.
func (c *Conn) follow(ctx context.Context, in Inbound, run domain.Run, r Reply) error {
	asked := map[string]bool{}
	every := followFirst
	until := time.Now().Add(followMargin)
	for {
		switch {
		case run.Status.Final():
			return c.delivered(ctx, in, run, r)
		case run.Status == domain.RunRequiresAction:
			c.askAdmins(ctx, run, asked, r)
			until = run.ExpiresAt.Add(followMargin)
			if !Sleep(ctx, every) {
				return errFollowStopped
			}
			every = min(2*every, followMax)
		default:
			every = followFirst // going on: a next wait is looked at soon
		}
		if time.Now().After(until) {
			c.Logger.WarnContext(ctx, "platform message not answered: its run outlasted its following", "chat", in.Chat, "run", run.ID)
			return errOutlasted
		}
		next, err := c.turner.Wait(ctx, c.Agent.AccountID, c.Agent.ID, run.ID, followMax)
		switch {
		case ctx.Err() != nil:
			return errFollowStopped
		case errors.Is(err, domain.ErrNotFound): // the run went with its agent or conversation
			return errRunGone
		case err != nil:
			c.Logger.WarnContext(ctx, "follow a waiting run", "run", run.ID, "error", err)
			if !Sleep(ctx, every) {
				return errFollowStopped
			}
		default:
			run = next
		}
	}
}

// Why follow sent no reply, in words a schedule's lastError may show.
var (
	errFollowStopped = errors.New("the replica following the run stopped before the run ended")
	errOutlasted     = errors.New("the run outlasted its following")
	errRunGone       = errors.New("the run was deleted with its agent or conversation")
)

// delivered sends the reply of run, which has ended, as the answer to in;
// a run that did not complete leaves in unanswered, and says so.
func (c *Conn) delivered(ctx context.Context, in Inbound, run domain.Run, r Reply) error {
	if run.Status != domain.RunCompleted || run.Reply == nil {
		c.Logger.WarnContext(ctx, "platform message not answered: its run did not complete", "chat", in.Chat,
			"run", run.ID, "status", run.Status, "code", run.ErrorCode)
		ended := "the run ended " + string(run.Status)
		if run.ErrorCode != "" {
			ended += " (" + run.ErrorCode + "): " + run.ErrorMessage
		}
		return errors.New(ended)
	}
	send, done := context.WithTimeout(ctx, sendTimeout)
	defer done()
	return c.deliver(send, in, run.Reply.Text, r)
}
