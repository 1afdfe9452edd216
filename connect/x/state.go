package x

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/agentd/agentd/domain"
)

// failingAfter is how many polls of a loop must fail in a row before the
// connection's reason says so: one failure that the next poll gets over
// is no news.
const failingAfter = 2

// health is what the loops' troubles show in the connection's state. The
// connection stays connected throughout (posting, and the other loop, may
// well work): its reason names each loop in trouble, and is cleared when
// none is.
type health struct {
	mu       sync.Mutex        // orders the loops' writes, so the last stored is the last decided
	troubles map[string]string // loop ("mentions") → its trouble
	shown    string            // the reason stored, "" for none
}

// report shows trouble, what is wrong with loop, in the connection's
// reason (connected but degraded), when that changes the reason.
func (s *session) report(ctx context.Context, loop, trouble string) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.troubles == nil {
		s.health.troubles = map[string]string{}
	}
	s.health.troubles[loop] = trouble
	s.show(ctx)
}

// recovered clears loop's trouble, showing the connection connected
// without a reason once no loop is in trouble.
func (s *session) recovered(ctx context.Context, loop string) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if _, ok := s.health.troubles[loop]; !ok {
		return
	}
	delete(s.health.troubles, loop)
	s.show(ctx)
}

// show stores the loops' troubles as the reason when it changed; a failed
// write is logged, and tried again at the next report. s.health.mu is
// held.
func (s *session) show(ctx context.Context) {
	loops := make([]string, 0, len(s.health.troubles))
	for loop := range s.health.troubles {
		loops = append(loops, loop)
	}
	sort.Strings(loops)
	troubles := make([]string, len(loops))
	for i, loop := range loops {
		troubles[i] = s.health.troubles[loop]
	}
	reason := strings.Join(troubles, " ")
	if reason == s.health.shown {
		return
	}
	var err error
	if reason == "" {
		err = s.c.MarkConnected(ctx)
	} else {
		err = s.c.Trouble(ctx, domain.ConnConnected, reason)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.c.Logger.Warn("X connection state not stored", "error", err)
		}
		return
	}
	s.health.shown = reason
}

// unavailable is the trouble of a loop whose endpoint X refuses to the
// access tier: what is not answered, and the two ways out.
func unavailable(what, setting string, err error) string {
	return fmt.Sprintf("%s are not available on this X API access tier (X answered %s), so they are not answered: "+
		"they need a paid tier (Basic or above), or switch settings.twitter.%s off.", capitalized(what), describe(err), setting)
}

// failing is the trouble of a loop whose polls keep failing for err.
func failing(what string, err error) string {
	return fmt.Sprintf("Polling X for %s keeps failing (%s); retrying.", what, describe(err))
}

// describe is err in a few words that stay the same while the failure
// does: an X refusal's status and title, or a failed request's cause
// without its URL (which changes with the cursor).
func describe(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		title := ae.Title
		if title == "" {
			title = http.StatusText(ae.Status)
		}
		return strings.TrimSpace(fmt.Sprintf("%d %s", ae.Status, title))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
