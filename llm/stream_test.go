package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

// leakCase runs f for every provider with its own server, transport and
// client, then checks that nothing leaked.
func leakCase(t *testing.T, timeout time.Duration, f func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client)) {
	for _, pc := range providerCases {
		t.Run(pc.provider, func(t *testing.T) {
			srv := pc.newServer(t)
			tr := newTransport(t)
			c := llm.New(configFor(pc.provider, srv.URL, timeout, &http.Client{Transport: tr}))
			f(t, pc, srv, c)
			verifyNoLeaks(t, srv, tr)
		})
	}
}

// collect returns an onToken that appends to *frags.
func collect(frags *[]string) func(string) error {
	return func(s string) error {
		*frags = append(*frags, s)
		return nil
	}
}

var fourFragments = []string{"One", " two", " three", " four"}

// TestMidStreamError covers a provider error event after two fragments:
// the partial text is returned with KindUnavailable, nothing is retried
// (something was streamed), and no goroutine is left behind, which for
// anthropic is the guard against langchaingo's v0.1.14 reader leak.
func TestMidStreamError(t *testing.T) {
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, FailMidStream: true, FailAfter: 2})
		var frags []string
		reply, err := c.Stream(context.Background(), request(pc), collect(&frags))
		e := asError(t, err)
		if e.Kind != llm.KindUnavailable || !strings.Contains(e.Reason, "broke off the reply") {
			t.Errorf("got %v, want KindUnavailable for the broken-off reply", e)
		}
		if reply.Text != "One two" || strings.Join(frags, "") != "One two" {
			t.Errorf("partial text %q, fragments %q, want %q", reply.Text, frags, "One two")
		}
		if srv.Count() != 1 {
			t.Errorf("server got %d requests, want 1: nothing is retried after streaming began", srv.Count())
		}
	})
}

func TestMidStreamErrorBeforeFirstFragmentIsRetried(t *testing.T) {
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, FailMidStream: true, FailAfter: -1})
		reply, err := c.Stream(context.Background(), request(pc), nil)
		if e := asError(t, err); e.Kind != llm.KindUnavailable || reply.Text != "" {
			t.Errorf("got %q, %v; want no text and KindUnavailable", reply.Text, e)
		}
		if srv.Count() != 3 {
			t.Errorf("server got %d requests, want 3", srv.Count())
		}
	})
}

// TestConnectionDropped covers a connection that breaks mid-stream without
// an error event; langchaingo's ollama client would report success.
func TestConnectionDropped(t *testing.T) {
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, DropMidStream: true, FailAfter: 2})
		reply, err := c.Stream(context.Background(), request(pc), nil)
		if e := asError(t, err); e.Kind != llm.KindUnavailable || reply.Text != "One two" {
			t.Errorf("got %q, %v; want %q and KindUnavailable", reply.Text, e, "One two")
		}
	})
}

// TestCallerCancel cancels the caller's context during a slow stream.
func TestCallerCancel(t *testing.T) {
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, FragmentDelay: 30 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var frags []string
		reply, err := c.Stream(ctx, request(pc), func(s string) error {
			frags = append(frags, s)
			if len(frags) == 2 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		var e *llm.Error
		if errors.As(err, &e) {
			t.Errorf("cancellation by the caller is not an *llm.Error: %v", e)
		}
		if reply.Text != "One two" {
			t.Errorf("partial text = %q, want %q", reply.Text, "One two")
		}
		if srv.Count() != 1 {
			t.Errorf("server got %d requests, want 1", srv.Count())
		}
	})
}

func TestCallerCancelGenerate(t *testing.T) {
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Hang: true})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.Generate(ctx, request(pc))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's context.DeadlineExceeded", err)
		}
		if srv.Count() != 1 {
			t.Errorf("server got %d requests, want 1: the caller's deadline is not retried", srv.Count())
		}
	})
}

func TestOnTokenErrorAborts(t *testing.T) {
	errGone := errors.New("client went away")
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, FragmentDelay: 5 * time.Millisecond})
		calls := 0
		reply, err := c.Stream(context.Background(), request(pc), func(s string) error {
			calls++
			if calls == 2 {
				return errGone
			}
			return nil
		})
		if !errors.Is(err, errGone) || calls != 2 {
			t.Fatalf("err = %v after %d calls, want errGone after 2", err, calls)
		}
		if reply.Text != "One" {
			t.Errorf("text = %q, want the accepted fragment %q", reply.Text, "One")
		}
	})
}

func TestMaxReplyCharsGenerate(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Text: "Héllo wörld, how are you?"})
		req := request(pc)
		req.MaxReplyChars = 15 // ends inside "how": cut before it, appending nothing
		reply, err := c.Generate(context.Background(), req)
		if err != nil || reply.Text != "Héllo wörld," {
			t.Errorf("got %q, %v; want %q", reply.Text, err, "Héllo wörld,")
		}
	})
}

// TestMaxReplyCharsStream checks that the stream stops at the cap at a word
// boundary: the word in progress is held back until it is known whole, so
// the client never gets half a word, the provider call is cancelled long
// before the slow stream would end, and the capped text (what the client
// got) comes back without error.
func TestMaxReplyCharsStream(t *testing.T) {
	leakCase(t, 0, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		frags := []string{"Héllo", " wörld", ",", " how", " are", " you", " today", "?"}
		srv.Respond(llmtest.Reply{Fragments: frags, FragmentDelay: 20 * time.Millisecond})
		req := request(pc)
		req.MaxReplyChars = 15
		var got []string
		start := time.Now()
		reply, err := c.Stream(context.Background(), req, collect(&got))
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		want := []string{"Héllo", " ", "wörld,"} // the first word as it came, then whole words
		if strings.Join(got, "|") != strings.Join(want, "|") || reply.Text != "Héllo wörld," {
			t.Errorf("fragments %q, text %q; want %q, %q", got, reply.Text, want, "Héllo wörld,")
		}
		if d := time.Since(start); d > 200*time.Millisecond {
			t.Errorf("took %v: the provider call was not cancelled at the cap", d)
		}
	})
}

func TestMaxReplyCharsExactFit(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: []string{"abc", "def"}})
		req := request(pc)
		req.MaxReplyChars = 6
		reply, err := c.Stream(context.Background(), req, nil)
		if err != nil || reply.Text != "abcdef" {
			t.Errorf("got %q, %v; want %q", reply.Text, err, "abcdef")
		}
	})
}

// TestStreamTimeoutIsIdle checks that in Stream the Timeout bounds the gaps
// between fragments, not the whole reply.
func TestStreamTimeoutIsIdle(t *testing.T) {
	for _, pc := range providerCases {
		t.Run(pc.provider, func(t *testing.T) {
			srv := pc.newServer(t)
			srv.Respond(llmtest.Reply{Fragments: fourFragments, FragmentDelay: 60 * time.Millisecond})
			c := newClient(t, pc.provider, srv.URL, 150*time.Millisecond)
			reply, err := c.Stream(context.Background(), request(pc), nil)
			if err != nil || reply.Text != "One two three four" {
				t.Errorf("got %q, %v; want the whole slow reply", reply.Text, err)
			}
		})
	}
}

// TestStreamTimeoutBeforeFirstFragment: a provider too slow to start is
// unavailable and retried.
func TestStreamTimeoutBeforeFirstFragment(t *testing.T) {
	leakCase(t, 100*time.Millisecond, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, FragmentDelay: 300 * time.Millisecond})
		reply, err := c.Stream(context.Background(), request(pc), nil)
		if e := asError(t, err); e.Kind != llm.KindUnavailable || !strings.Contains(e.Reason, "did not answer") {
			t.Errorf("got %v, want a timeout", e)
		}
		if reply.Text != "" || srv.Count() != 3 {
			t.Errorf("text %q after %d requests, want nothing after 3", reply.Text, srv.Count())
		}
	})
}

// TestStreamTimeoutMidStream: a stream that stalls is cut after Timeout,
// keeps its partial text and is not retried.
func TestStreamTimeoutMidStream(t *testing.T) {
	leakCase(t, 100*time.Millisecond, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: fourFragments, StallMidStream: true, FailAfter: 2})
		reply, err := c.Stream(context.Background(), request(pc), nil)
		if e := asError(t, err); e.Kind != llm.KindUnavailable || !strings.Contains(e.Reason, "did not answer") {
			t.Errorf("got %v, want a timeout", e)
		}
		if reply.Text != "One two" || srv.Count() != 1 {
			t.Errorf("text %q after %d requests, want %q after 1", reply.Text, srv.Count(), "One two")
		}
	})
}

// TestAnthropicThinkingBlock checks that only text blocks form the reply.
func TestAnthropicThinkingBlock(t *testing.T) {
	srv := llmtest.NewAnthropic(t)
	c := newClient(t, llm.ProviderAnthropic, srv.URL, 0)
	srv.Respond(llmtest.Reply{Thinking: "Let me consider the butler's duties.", Text: "Very good, sir.", PromptTokens: 5, CompletionTokens: 7})
	req := request(providerCases[1])
	reply, err := c.Generate(context.Background(), req)
	if err != nil || reply.Text != "Very good, sir." || reply.Usage.TotalTokens != 12 {
		t.Errorf("Generate = %+v, %v", reply, err)
	}
	reply, err = c.Stream(context.Background(), req, nil)
	if err != nil || reply.Text != "Very good, sir." || reply.Usage.TotalTokens != 12 {
		t.Errorf("Stream = %+v, %v", reply, err)
	}
}

func TestRetryBackoff(t *testing.T) {
	restore := llm.SetRetryBackoff(100*time.Millisecond, 300*time.Millisecond)
	defer restore()
	srv := llmtest.NewOpenAI(t)
	srv.Respond(llmtest.Reply{Status: 500})
	c := newClient(t, llm.ProviderOpenAI, srv.URL, 0)
	start := time.Now()
	_, err := c.Generate(context.Background(), request(providerCases[0]))
	if e := asError(t, err); e.Kind != llm.KindUnavailable || srv.Count() != 3 {
		t.Fatalf("got %v after %d requests", e, srv.Count())
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 2*time.Second {
		t.Errorf("three attempts took %v, want the 100ms and 300ms pauses", d)
	}
}

// TestMaxReplyCharsStreamUnderTheCap: a reply shorter than its cap arrives
// whole, the word held back at the end included.
func TestMaxReplyCharsStreamUnderTheCap(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: []string{"Héllo", " wörld", ", how", " are you?"}})
		req := request(pc)
		req.MaxReplyChars = 100
		var got []string
		reply, err := c.Stream(context.Background(), req, collect(&got))
		if err != nil || strings.Join(got, "") != "Héllo wörld, how are you?" || reply.Text != "Héllo wörld, how are you?" {
			t.Errorf("fragments %q, text %q, %v; want the whole reply", got, reply.Text, err)
		}
	})
}

// TestMaxReplyCharsStreamWithoutSpaces: text without spaces (Chinese,
// Japanese) streams as it comes under a cap: no cut can fall inside the
// first word before the cap.
func TestMaxReplyCharsStreamWithoutSpaces(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Fragments: []string{"你好", "世界", "。"}})
		req := request(pc)
		req.MaxReplyChars = 100
		var got []string
		reply, err := c.Stream(context.Background(), req, collect(&got))
		if err != nil || len(got) != 3 || reply.Text != "你好世界。" {
			t.Errorf("fragments %q, text %q, %v; want each fragment as it came", got, reply.Text, err)
		}
	})
}
