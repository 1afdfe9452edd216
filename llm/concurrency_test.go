package llm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// TestConcurrentCalls shares one Client between goroutines calling every
// provider with different options; run with -race.
func TestConcurrentCalls(t *testing.T) {
	cfg := llm.Config{HTTPClient: &http.Client{Transport: newTransport(t)}}
	servers := map[string]*llmtest.Server{}
	for _, pc := range providerCases {
		srv := pc.newServer(t)
		servers[pc.provider] = srv
		setProvider(&cfg, pc.provider, srv.URL)
	}
	c := llm.New(cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		pc := providerCases[i%len(providerCases)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := request(pc)
			req.Options.Temperature = ptr(float64(i) / 100)
			req.Text = fmt.Sprintf("question %d", i)
			var reply llm.Reply
			var err error
			if i%2 == 0 {
				reply, err = c.Generate(context.Background(), req)
			} else {
				reply, err = c.Stream(context.Background(), req, func(string) error { return nil })
			}
			if err == nil && reply.Text != "Hello from the test server." {
				err = fmt.Errorf("call %d: reply %q", i, reply.Text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for provider, srv := range servers {
		for _, rec := range srv.Requests() {
			_, msgs := rec.Conversation()
			var i int
			fmt.Sscanf(msgs[len(msgs)-1].Content, "question %d", &i)
			if got := rec.Options()["temperature"]; got != float64(i)/100 {
				t.Errorf("%s: request %q carried temperature %v", provider, msgs[len(msgs)-1].Content, got)
			}
		}
	}
}

// TestUnusableReply: a 200 reply that is not the provider's format is a
// provider error about this request (not retried).
func TestUnusableReply(t *testing.T) {
	count := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count++
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>captive portal</html>")
	}))
	defer ts.Close()
	for _, provider := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		count = 0
		c := newClient(t, provider, ts.URL, 0)
		_, err := c.Generate(context.Background(), llm.Request{Provider: provider, Model: "m", Text: "hi"})
		if e := asError(t, err); e.Kind != llm.KindRequest || e.Reason != "The model provider rejected the request." || count != 1 {
			t.Errorf("%s: got %v after %d requests, want KindRequest after 1", provider, e, count)
		}
	}
}

// TestConnectionReuse: under concurrent load the provider calls reuse their
// connections instead of dialling anew for most messages (the default
// transport keeps only 2 idle connections per host).
func TestConnectionReuse(t *testing.T) {
	const messages, concurrency = 200, 16
	srv := llmtest.NewOpenAI(t)
	cfg := llm.Config{}
	setProvider(&cfg, llm.ProviderOpenAI, srv.URL)
	c := llm.New(cfg)
	t.Cleanup(c.CloseIdleConnections)
	pc := providerCases[0]
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i := range messages {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			var err error
			if i%2 == 0 {
				_, err = c.Generate(context.Background(), request(pc))
			} else {
				_, err = c.Stream(context.Background(), request(pc), nil)
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// A call may end a moment before its connection is back in the idle
	// pool, so the next one dials; a few more than concurrency is fine.
	if n := srv.Connections(); n > concurrency+concurrency/2 {
		t.Errorf("%d messages at %d concurrent opened %d connections", messages, concurrency, n)
	}
}
