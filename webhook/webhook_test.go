package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/internal/testutil"
	"github.com/agentd/agentd/netguard"
	"github.com/agentd/agentd/signature"
	"github.com/agentd/agentd/store"
	"github.com/agentd/agentd/store/storetest"
	"github.com/agentd/agentd/webhook"
	"github.com/getkin/kin-openapi/openapi3"
)

// received is one request the receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a webhook endpoint on loopback that answers with the scripted
// statuses (then 200) and keeps every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body})
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// run starts a dispatcher on st with a fast schedule; retries nil is one
// retry after 10ms per failure, three times.
func run(t *testing.T, st *store.Store, retries []time.Duration) {
	t.Helper()
	if retries == nil {
		retries = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	d := webhook.New(st.Webhooks(), webhook.Config{Retries: retries, Timeout: 2 * time.Second, AllowPrivate: true,
		Poll: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// setup makes an account and a webhook of it on url with events.
func setup(t *testing.T, st *store.Store, url string, events ...string) (domain.Account, domain.Webhook) {
	t.Helper()
	ctx := context.Background()
	acct, err := st.Accounts().CreateAccount(ctx, domain.Account{Name: "acme", Tier: domain.TierStandard, AgentQuota: 10})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: url, Events: events, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	return acct, w
}

// deliveries lists a webhook's deliveries, newest first.
func deliveries(t *testing.T, st *store.Store, w domain.Webhook) []domain.Delivery {
	t.Helper()
	ds, _, err := st.Webhooks().ListDeliveries(context.Background(), w.AccountID, w.ID, domain.DeliveryQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// deliveredAs is a check that the newest delivery of w has status.
func deliveredAs(t *testing.T, st *store.Store, w domain.Webhook, status domain.DeliveryStatus) func() error {
	return func() error {
		d := deliveries(t, st, w)[0]
		if d.Status != status {
			return fmt.Errorf("status %q after %d attempts (last %d)", d.Status, d.Attempts, d.LastStatusCode)
		}
		return nil
	}
}

// verify checks a received delivery's signature with secret.
func verify(t *testing.T, secret string, r received) {
	t.Helper()
	if err := signature.Verify(secret, r.header, r.body, time.Now(), 5*time.Minute); err != nil {
		t.Errorf("signature of %s does not verify: %v (%s)", r.header.Get(signature.HeaderID), err, r.header.Get(signature.HeaderSignature))
	}
}

func TestRetriedDeliveryKeepsItsIDAndSignature(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		st := storetest.Open(t, dsn)
		rcv := newReceiver(t, 500, 500, 200)
		acct, w := setup(t, st, rcv.URL, "webhook.test")
		run(t, st, nil)
		if err := st.Webhooks().TestWebhook(context.Background(), acct.ID, w.ID); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the delivery to succeed", deliveredAs(t, st, w, domain.DeliverySucceeded))
		d := deliveries(t, st, w)[0]
		got := rcv.requests()
		if d.Attempts != 3 || len(got) != 3 || d.LastStatusCode != 200 {
			t.Fatalf("attempts %d, requests %d, last status %d; want 3, 3, 200", d.Attempts, len(got), d.LastStatusCode)
		}
		for _, r := range got {
			if id := r.header.Get(signature.HeaderID); id != d.EventID {
				t.Errorf("webhook-id %q, want the event id %q on every attempt", id, d.EventID)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			verify(t, w.Secret, r)
		}
		// A signature made with another secret does not verify.
		other := got[0]
		if err := signature.Verify("whsec_"+strings.Repeat("A", 43)+"=", other.header, other.body, time.Now(), time.Minute); !errors.Is(err, signature.ErrInvalid) {
			t.Errorf("a wrong secret verified: %v", err)
		}
	})
}

// eventSchemas names the component schema of each event type's body.
var eventSchemas = map[domain.EventType]string{
	domain.EventAgentCreated:       "AgentCreatedEvent",
	domain.EventAgentUpdated:       "AgentUpdatedEvent",
	domain.EventAgentDeleted:       "AgentDeletedEvent",
	domain.EventAgentStatusChanged: "AgentStatusChangedEvent",
	domain.EventMessageCompleted:   "MessageCompletedEvent",
	domain.EventConnectionChanged:  "ConnectionChangedEvent",
	domain.EventWebhookTest:        "WebhookTestEvent",
	domain.EventRunCompleted:       "RunEvent",
	domain.EventRunFailed:          "RunEvent",
	domain.EventRunCancelled:       "RunEvent",
	domain.EventBudgetThreshold:    "BudgetEvent",
	domain.EventBudgetExceeded:     "BudgetEvent",
	// run.requires_action comes with approvals.
}

// TestEveryEventMatchesTheContract makes every kind of event through the
// store and validates each delivered body against its schema in
// openapi.yaml, and the schemas against x-webhooks.
func TestEveryEventMatchesTheContract(t *testing.T) {
	spec, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hooks, _ := spec.Extensions["x-webhooks"].(map[string]any)
	for typ, name := range eventSchemas {
		if spec.Components.Schemas[name] == nil {
			t.Fatalf("openapi.yaml has no schema %s", name)
		}
		if !strings.Contains(fmt.Sprint(hooks[string(typ)]), "#/components/schemas/"+name) {
			t.Errorf("x-webhooks does not list %s with %s", typ, name)
		}
	}
	storetest.Backends(t, func(t *testing.T, dsn string) {
		st := storetest.Open(t, dsn)
		ctx := context.Background()
		rcv := newReceiver(t)
		acct, w := setup(t, st, rcv.URL, "*")
		run(t, st, nil)
		agent, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: map[string]json.RawMessage{
			"name": json.RawMessage(`"walker"`), "modelProvider": json.RawMessage(`"openai"`),
			"model": json.RawMessage(`"gpt-4o-mini"`), "clients": json.RawMessage(`["telegram"]`)}}, 10)
		if err != nil {
			t.Fatal(err)
		}
		inactive := domain.StatusInactive
		if _, _, err := st.Agents().UpdateAgent(ctx, acct.ID, agent.ID, map[string]json.RawMessage{"name": json.RawMessage(`"runner"`)}, &inactive, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		active := domain.StatusActive
		if _, _, err := st.Agents().UpdateAgent(ctx, acct.ID, agent.ID, nil, &active, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Agents().MarkAgentError(ctx, acct.ID, agent.ID, "Model provider rate limit exceeded", time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := st.Agents().MarkAgentRecovered(ctx, acct.ID, agent.ID); err != nil {
			t.Fatal(err)
		}
		_, _, err = st.Conversations().SaveExchange(ctx, acct.ID, agent.ID, domain.ConversationRef{RoomID: "room-1", UserID: "u1", Platform: "api"},
			domain.Message{UserID: "u1", Text: "hi"}, domain.Message{UserID: "u1", Text: "hello", Model: "gpt-4o-mini", TokensUsed: 12, ResponseMillis: 3.5})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Webhooks().Emit(ctx, domain.Event{AccountID: acct.ID, AgentID: agent.ID, Type: domain.EventConnectionChanged,
			Data: map[string]string{"agentId": agent.ID, "platform": "telegram", "state": "connected", "reason": ""}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Webhooks().TestWebhook(ctx, acct.ID, w.ID); err != nil {
			t.Fatal(err)
		}
		endRuns(t, st, agent)
		spendPast(t, st, agent)
		// created, updated twice, status changed four times, message,
		// connection, test, runs, a priced message with both budget alerts;
		// then deleted. Deleting the agent drops the
		// message events still pending (they quote its messages), so the
		// delete waits for them to be sent.
		received := func(want int) func() error {
			return func() error {
				if n := len(rcv.requests()); n < want {
					return fmt.Errorf("%d requests, want %d", n, want)
				}
				return nil
			}
		}
		testutil.Eventually(t, "the events before the delete", received(16))
		if _, err := st.Agents().DeleteAgent(ctx, acct.ID, agent.ID, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		const want = 17
		testutil.Eventually(t, "every event", received(want))
		seen := map[domain.EventType]int{}
		for _, r := range rcv.requests() {
			verify(t, w.Secret, r)
			var body map[string]any
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			typ := domain.EventType(fmt.Sprint(body["type"]))
			seen[typ]++
			schema := spec.Components.Schemas[eventSchemas[typ]]
			if schema == nil {
				t.Errorf("unknown event type %q", typ)
				continue
			}
			if err := schema.Value.VisitJSON(body); err != nil {
				t.Errorf("%s does not match %s: %v\n%s", typ, eventSchemas[typ], err, r.body)
			}
		}
		for typ := range eventSchemas {
			if seen[typ] == 0 {
				t.Errorf("no %s event was delivered (seen %v)", typ, seen)
			}
		}
		if seen[domain.EventAgentStatusChanged] != 4 {
			t.Errorf("%d status changes, want 4 (to inactive, to active, into error, out of error)", seen[domain.EventAgentStatusChanged])
		}
	})
}

func TestFiltersAndRollback(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		st := storetest.Open(t, dsn)
		ctx := context.Background()
		acct, created := setup(t, st, "https://hooks.example.com/created", "agent.created")
		name := func(n string) map[string]json.RawMessage {
			return map[string]json.RawMessage{"name": json.RawMessage(`"` + n + `"`)}
		}
		x, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: name("x")}, 2)
		if err != nil {
			t.Fatal(err)
		}
		onX, err := st.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: "https://hooks.example.com/x", Events: []string{"*"}, AgentID: x.ID, Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: name("y")}, 2); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Agents().UpdateAgent(ctx, acct.ID, x.ID, name("x2"), nil, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		// Over quota: rolled back, so no event.
		var qe *domain.Error
		if _, err := st.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: name("z")}, 2); !errors.Is(err, domain.ErrQuotaExceeded) || !errors.As(err, &qe) {
			t.Fatalf("third agent: %v, want a quota error", err)
		}
		types := func(w domain.Webhook) []string {
			var out []string
			for _, d := range deliveries(t, st, w) {
				out = append(out, string(d.Type))
			}
			return out
		}
		if got := strings.Join(types(created), ","); got != "agent.created,agent.created" {
			t.Errorf("agent.created webhook got %s, want two agent.created (x and y, not the rolled-back z)", got)
		}
		if got := strings.Join(types(onX), ","); got != "agent.updated" {
			t.Errorf("webhook of agent x got %s, want only x's update", got)
		}
	})
}

func TestRotationSignsWithBothSecrets(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		st := storetest.Open(t, dsn)
		ctx := context.Background()
		rcv := newReceiver(t)
		acct, w := setup(t, st, rcv.URL, "*")
		rotated, err := st.Webhooks().RotateWebhookSecret(ctx, acct.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rotated.Secret == w.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
			t.Fatalf("rotated secret %q", rotated.Secret)
		}
		run(t, st, nil)
		if err := st.Webhooks().TestWebhook(ctx, acct.ID, w.ID); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the delivery", func() error { return testutil.Equal("requests", len(rcv.requests()), 1) })
		r := rcv.requests()[0]
		if sigs := strings.Fields(r.header.Get(signature.HeaderSignature)); len(sigs) != 2 {
			t.Fatalf("signatures %q, want two while the old secret is valid", sigs)
		}
		verify(t, w.Secret, r)
		verify(t, rotated.Secret, r)
	})
}

func TestRetryDisableAndDelete(t *testing.T) {
	storetest.Backends(t, func(t *testing.T, dsn string) {
		st := storetest.Open(t, dsn)
		ctx := context.Background()
		rcv := newReceiver(t, 500)
		acct, w := setup(t, st, rcv.URL, "*")
		run(t, st, []time.Duration{})
		if err := st.Webhooks().TestWebhook(ctx, acct.ID, w.ID); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the delivery to fail", deliveredAs(t, st, w, domain.DeliveryFailed))
		d := deliveries(t, st, w)[0]
		if err := st.Webhooks().RetryDelivery(ctx, acct.ID, w.ID, d.ID); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "the retry to succeed", deliveredAs(t, st, w, domain.DeliverySucceeded))
		if got := rcv.requests(); len(got) != 2 || got[0].header.Get(signature.HeaderID) != got[1].header.Get(signature.HeaderID) {
			t.Fatalf("%d requests; want 2 with one webhook-id", len(got))
		}
		if err := st.Webhooks().RetryDelivery(ctx, acct.ID, w.ID, "whd_missing"); !errors.Is(err, domain.ErrDeliveryNotFound) {
			t.Errorf("retry of a missing delivery: %v", err)
		}

		// 50 failures in a row disable the webhook.
		failing, err := st.Webhooks().CreateWebhook(ctx, domain.Webhook{AccountID: acct.ID, URL: rcv.URL + "/fail", Events: []string{"*"}, Enabled: true})
		if err != nil {
			t.Fatal(err)
		}
		rcv.mu.Lock()
		for range store.DisableAfter {
			rcv.statuses = append(rcv.statuses, 500)
		}
		rcv.mu.Unlock()
		for range store.DisableAfter {
			if err := st.Webhooks().TestWebhook(ctx, acct.ID, failing.ID); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, "the webhook to be disabled", func() error {
			got, err := st.Webhooks().GetWebhook(ctx, acct.ID, failing.ID)
			if err != nil {
				return err
			}
			if got.Enabled {
				failed := 0
				for _, d := range deliveries(t, st, failing) {
					if d.Status == domain.DeliveryFailed {
						failed++
					}
				}
				return fmt.Errorf("still enabled after %d failed deliveries", failed)
			}
			return nil
		})
		if got, _ := st.Webhooks().GetWebhook(ctx, acct.ID, failing.ID); got.DisabledReason == "" {
			t.Error("disabled without a reason")
		}

		// A disabled webhook cannot be tested: its delivery would wait,
		// unsent, until it is enabled.
		if err := st.Webhooks().TestWebhook(ctx, acct.ID, failing.ID); !errors.Is(err, domain.ErrWebhookDisabled) {
			t.Errorf("test of a disabled webhook: %v, want ErrWebhookDisabled", err)
		}
		// Deleting a webhook drops its pending deliveries: the one a retry
		// queued while it is disabled is never sent.
		before := len(rcv.requests())
		if err := st.Webhooks().RetryDelivery(ctx, acct.ID, failing.ID, deliveries(t, st, failing)[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := st.Webhooks().DeleteWebhook(ctx, acct.ID, failing.ID, domain.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Webhooks().ListDeliveries(ctx, acct.ID, failing.ID, domain.DeliveryQuery{}); !errors.Is(err, domain.ErrWebhookNotFound) {
			t.Errorf("deliveries of a deleted webhook: %v", err)
		}
		jobs, err := st.Webhooks().ClaimDeliveries(ctx, 10, time.Minute)
		if err != nil || len(jobs) != 0 {
			t.Errorf("claimed %d deliveries after the delete (%v), want none", len(jobs), err)
		}
		if got := len(rcv.requests()); got != before {
			t.Errorf("%d requests after the delete, want none", got-before)
		}
	})
}

// TestGuardRefusesLoopbackAtDialTime: a host name that resolves to
// 127.0.0.1 passes any check of the URL's text, so the dialer must refuse
// the address it is about to connect to.
func TestGuardRefusesLoopbackAtDialTime(t *testing.T) {
	rcv := newReceiver(t)
	u, err := url.Parse(rcv.URL)
	if err != nil {
		t.Fatal(err)
	}
	named := "http://localhost:" + u.Port()
	_, err = netguard.NewClient(2*time.Second, false).Post(named, "application/json", strings.NewReader("{}"))
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("POST %s with the guard: %v, want netguard.ErrBlocked", named, err)
	}
	if len(rcv.requests()) != 0 {
		t.Fatal("the receiver was reached")
	}
	res, err := netguard.NewClient(2*time.Second, true).Post(named, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST %s without the guard: %v", named, err)
	}
	_ = res.Body.Close()
}

// TestNoRedirectFollowed: a 3xx is the answer, a failure, not a new target.
func TestNoRedirectFollowed(t *testing.T) {
	target := newReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	res, err := netguard.NewClient(2*time.Second, true).Post(redirect.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusTemporaryRedirect || len(target.requests()) != 0 {
		t.Fatalf("status %d, target reached %d times", res.StatusCode, len(target.requests()))
	}
}

// endRuns ends three runs of agent's, one completed, one failed and one
// cancelled: one of each run event.
// spendPast stores a priced reply of agent that spends all of a daily
// budget of USD 0.01, and reports it: budget.threshold and
// budget.exceeded.
func spendPast(t *testing.T, st *store.Store, agent domain.Agent) {
	t.Helper()
	ctx := context.Background()
	_, _, err := st.Conversations().SaveExchange(ctx, agent.AccountID, agent.ID, domain.ConversationRef{UserID: "u1", Platform: "api"},
		domain.Message{UserID: "u1", Text: "spend"}, domain.Message{UserID: "u1", Text: "spent", Model: "gpt-4o-mini", CostMicros: 12_000})
	if err != nil {
		t.Fatal(err)
	}
	q := domain.SpendQuery{AccountID: agent.AccountID, AgentID: agent.ID, UserID: "u1", Limits: domain.BudgetLimits{AgentDaily: 10_000}}
	if err := st.Analytics().AlertSpend(ctx, q); err != nil {
		t.Fatal(err)
	}
}

func endRuns(t *testing.T, st *store.Store, agent domain.Agent) {
	t.Helper()
	ctx := context.Background()
	accept := func(text string) domain.Run {
		conv, err := st.Conversations().OpenConversation(ctx, agent.AccountID, agent.ID, domain.ConversationRef{UserID: "u-" + text, Platform: "api"})
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := st.Runs().AcceptRun(ctx, domain.Run{AccountID: agent.AccountID, AgentID: agent.ID, ConversationID: conv,
			UserID: "u-" + text, Source: domain.SourceAPI, Text: text, MessageID: "msg_" + text, Strategy: domain.StrategyEnqueue})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	done := accept("done")
	reply := &domain.Reply{MessageID: done.MessageID, Text: "finished", AgentID: agent.ID, UserID: "u-done", CreatedAt: time.Now(),
		Metadata: domain.ReplyMetadata{TokensUsed: 9, Model: "gpt-4o-mini"}}
	for _, end := range []struct {
		run    domain.Run
		status domain.RunStatus
		reply  *domain.Reply
		code   string
	}{{done, domain.RunCompleted, reply, ""}, {accept("broken"), domain.RunFailed, nil, "MODEL_ERROR"}} {
		if _, _, err := st.Runs().StartRun(ctx, end.run.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Runs().FinishRun(ctx, end.run.ID, end.status, end.reply, end.code, "why"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Runs().CancelRun(ctx, agent.AccountID, agent.ID, accept("dropped").ID); err != nil {
		t.Fatal(err)
	}
}
