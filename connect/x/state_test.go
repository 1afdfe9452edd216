package x_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentd/agentd/connect/x/xtest"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
)

// clientForbidden is X's answer to an endpoint outside the app's access
// tier; its detail speaks of keys and tokens, though the credentials are
// fine.
var clientForbidden = xtest.Failure{Status: http.StatusForbidden, Title: "Client Forbidden",
	Type: "https://api.twitter.com/2/problems/client-forbidden",
	Detail: "When authenticating requests to the Twitter API v2 endpoints, you must use keys and tokens from a " +
		"Twitter developer App that is attached to a Project. You can create a project via the developer portal."}

// Mentions refused to the access tier: the mention loop stops, and the
// connection stays connected with a reason naming what is unavailable,
// while direct messages go on.
func TestTierRefusalShownInReason(t *testing.T) {
	f := newFixture(t)
	f.srv.FailEvery(token, "mentions", clientForbidden)
	a := f.agent(map[string]any{"enableDMs": true})
	f.Start()
	testutil.Eventually(t, "connected, degraded", f.InState(a, domain.ConnConnected,
		"Mentions are not available on this X API access tier", "403 Client Forbidden", "enableMentions"))
	n := len(f.calls("mentions"))
	f.polled("dm_events", 3)
	if more := len(f.calls("mentions")) - n; more != 0 {
		t.Fatalf("mentions polled %d more times after the refusal", more)
	}
	f.srv.SendDM(token, "7", "still there?")
	testutil.Eventually(t, "the DM answered", func() error { return testutil.Equal("DMs sent", len(f.srv.SentDMs(token)), 1) })
}

// An app X refuses even users/me is in error, with a reason saying so
// rather than blaming the credentials.
func TestAppRefusedEverythingIsError(t *testing.T) {
	f := newFixture(t)
	f.srv.FailEvery(token, "users/me", clientForbidden)
	a := f.agent(nil)
	f.Start()
	testutil.Eventually(t, "error", f.InState(a, domain.ConnError, "refuses this app", "users/me"))
	if c := f.State(a); strings.Contains(c.Reason, "credentials") {
		t.Fatalf("reason %q blames the credentials", c.Reason)
	}
}

// Polls that keep failing show in the reason of the connection, still
// connected; it is cleared once a poll works again.
func TestFailingPollsShownInReason(t *testing.T) {
	f := newFixture(t)
	a := f.agent(nil)
	f.Start()
	f.WaitConnected(a)
	f.polled("mentions", 2)
	f.srv.FailEvery(token, "mentions", xtest.Failure{Status: http.StatusServiceUnavailable})
	testutil.Eventually(t, "connected, degraded", f.InState(a, domain.ConnConnected,
		"Polling X for mentions keeps failing", "503 Service Unavailable"))
	f.srv.ClearFailures(token, "mentions")
	testutil.Eventually(t, "the reason cleared", func() error {
		if c := f.State(a); c.State != domain.ConnConnected || c.Reason != "" {
			return fmt.Errorf("state %q (%s)", c.State, c.Reason)
		}
		return nil
	})
}
