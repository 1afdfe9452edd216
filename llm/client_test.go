package llm_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
	"github.com/agentd/agentd/llm/llmtest"
)

func TestGenerate(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		srv.Respond(llmtest.Reply{Text: "Certainly, sir.", PromptTokens: 31, CompletionTokens: 4, Model: pc.model + "-2024"})
		req := conversationRequest(pc)
		reply, err := c.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		want := llm.Reply{Text: "Certainly, sir.", Usage: llm.Usage{PromptTokens: 31, CompletionTokens: 4, TotalTokens: 35}, Model: pc.model + "-2024"}
		if !reflect.DeepEqual(reply, want) {
			t.Errorf("reply = %+v, want %+v", reply, want)
		}
		checkReceived(t, pc, srv.Last(t), req)
	})
}

func TestStream(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		text := "Of course, sir. The Batmobile is ready."
		srv.Respond(llmtest.Reply{Text: text, PromptTokens: 40, CompletionTokens: 9})
		req := conversationRequest(pc)
		var frags []string
		reply, err := c.Stream(context.Background(), req, func(s string) error {
			frags = append(frags, s)
			return nil
		})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if len(frags) < 3 {
			t.Errorf("got %d fragments %q, want several", len(frags), frags)
		}
		if got := strings.Join(frags, ""); got != text || reply.Text != text {
			t.Errorf("fragments join to %q, reply text %q, want %q", got, reply.Text, text)
		}
		if want := (llm.Usage{PromptTokens: 40, CompletionTokens: 9, TotalTokens: 49}); reply.Usage != want {
			t.Errorf("usage = %+v, want %+v", reply.Usage, want)
		}
		if reply.Model != pc.model {
			t.Errorf("model = %q, want %q", reply.Model, pc.model)
		}
		rec := srv.Last(t)
		checkReceived(t, pc, rec, req)
		if pc.provider != llm.ProviderOllama && rec.Body["stream"] != true {
			t.Errorf("stream = %v, want true", rec.Body["stream"])
		}
	})
}

// conversationRequest has a system prompt, history and sampling options.
func conversationRequest(pc providerCase) llm.Request {
	req := request(pc)
	req.System = llm.BuildSystemPrompt(llm.Character{Name: "Alfred", Bio: []string{"Loyal butler to Bruce Wayne"}}, llm.Context{}, llm.Recalled{})
	req.History = []llm.Message{
		{Role: llm.RoleUser, Content: "Alfred, are you there?"},
		{Role: llm.RoleAssistant, Content: "Always, Master Bruce."},
		{Role: llm.RoleUser, Content: "Prepare the car."},
		{Role: llm.RoleAssistant, Content: "Right away."},
	}
	req.Text = "I need the Batmobile ready in 5 minutes."
	req.Options = llm.Options{Temperature: ptr(0.7), MaxTokens: ptr(256), TopP: ptr(0.9)}
	if pc.provider != llm.ProviderAnthropic {
		req.Options.FrequencyPenalty = ptr(0.5)
		req.Options.PresencePenalty = ptr(0.0)
	}
	return req
}

// checkReceived checks what the provider received for req.
func checkReceived(t *testing.T, pc providerCase, rec llmtest.Recorded, req llm.Request) {
	t.Helper()
	if rec.Body["model"] != pc.model {
		t.Errorf("model = %v, want %q", rec.Body["model"], pc.model)
	}
	system, msgs := rec.Conversation()
	if system != req.System || !strings.Contains(system, "Alfred") {
		t.Errorf("system = %q, want %q", system, req.System)
	}
	want := []llmtest.Message{}
	for _, m := range req.History {
		want = append(want, llmtest.Message{Role: string(m.Role), Content: m.Content})
	}
	want = append(want, llmtest.Message{Role: "user", Content: req.Text})
	if len(msgs) != len(want) {
		t.Fatalf("messages = %q, want %q", msgs, want)
	}
	for i := range want {
		if msgs[i] != want[i] {
			t.Errorf("message %d = %q, want %q", i, msgs[i], want[i])
		}
	}
	checkOptions(t, pc.provider, rec, req.Options)
	checkAuth(t, pc.provider, rec)
}

// checkOptions checks that exactly the set options reached the wire, under
// each format's names.
func checkOptions(t *testing.T, provider string, rec llmtest.Recorded, o llm.Options) {
	t.Helper()
	opts := rec.Options()
	names := map[string]string{"temperature": "temperature", "top_p": "top_p", "frequency_penalty": "frequency_penalty", "presence_penalty": "presence_penalty"}
	want := map[string]any{}
	set := func(name string, v *float64) {
		if v != nil {
			want[names[name]] = *v
		}
	}
	set("temperature", o.Temperature)
	if provider != llm.ProviderAnthropic || o.Temperature == nil {
		set("top_p", o.TopP) // Anthropic's current models refuse both
	}
	if provider != llm.ProviderAnthropic {
		set("frequency_penalty", o.FrequencyPenalty)
		set("presence_penalty", o.PresencePenalty)
	}
	for name := range names {
		got, present := opts[name]
		w, wanted := want[name]
		if present != wanted || (wanted && got != w) {
			t.Errorf("%s = %v (present %v), want %v (present %v)", name, got, present, w, wanted)
		}
	}
	checkMaxTokens(t, provider, rec, o.MaxTokens)
}

// checkMaxTokens checks the max-tokens field each provider is given.
func checkMaxTokens(t *testing.T, provider string, rec llmtest.Recorded, maxTokens *int) {
	t.Helper()
	field := map[string]string{
		llm.ProviderOpenAI: "max_completion_tokens", llm.ProviderGroq: "max_tokens", llm.ProviderGoogle: "max_tokens",
		llm.ProviderAnthropic: "max_tokens", llm.ProviderOllama: "num_predict",
	}[provider]
	got, present := rec.Options()[field]
	switch {
	case maxTokens != nil && got != float64(*maxTokens):
		t.Errorf("%s = %v, want %d", field, got, *maxTokens)
	case maxTokens == nil && provider == llm.ProviderAnthropic && got != float64(2048):
		t.Errorf("max_tokens = %v, want the mandatory default 2048", got)
	case maxTokens == nil && provider != llm.ProviderAnthropic && present:
		t.Errorf("%s = %v, want absent", field, got)
	}
	for _, other := range []string{"max_tokens", "max_completion_tokens"} {
		if _, ok := rec.Body[other]; ok && other != field {
			t.Errorf("%s sent besides %s", other, field)
		}
	}
}

// checkAuth checks the credentials header of each format.
func checkAuth(t *testing.T, provider string, rec llmtest.Recorded) {
	t.Helper()
	key := "test-key-" + provider
	switch provider {
	case llm.ProviderAnthropic:
		if rec.Header.Get("X-Api-Key") != key || rec.Header.Get("Anthropic-Version") == "" {
			t.Errorf("x-api-key = %q, anthropic-version = %q", rec.Header.Get("X-Api-Key"), rec.Header.Get("Anthropic-Version"))
		}
	case llm.ProviderOllama:
		if rec.Header.Get("Authorization") != "" {
			t.Errorf("ollama got Authorization %q", rec.Header.Get("Authorization"))
		}
	default:
		if got := rec.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization = %q", got)
		}
	}
}

func TestUnsetOptionsAreNotSent(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		for _, stream := range []bool{false, true} {
			var err error
			if stream {
				_, err = c.Stream(context.Background(), request(pc), nil)
			} else {
				_, err = c.Generate(context.Background(), request(pc))
			}
			if err != nil {
				t.Fatalf("stream=%v: %v", stream, err)
			}
			checkOptions(t, pc.provider, srv.Last(t), llm.Options{})
		}
	})
}

func TestZeroOptionsAreSent(t *testing.T) {
	forEachProvider(t, func(t *testing.T, pc providerCase, srv *llmtest.Server, c *llm.Client) {
		req := request(pc)
		req.Options = llm.Options{Temperature: ptr(0.0), TopP: ptr(0.0), FrequencyPenalty: ptr(0.0), PresencePenalty: ptr(0.0)}
		if _, err := c.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		checkOptions(t, pc.provider, srv.Last(t), req.Options)
	})
}

// TestTodaysModelsAcceptTheRequest sends every option to the models the
// providers serve today, whose test servers refuse what the real APIs
// refuse: OpenAI's reasoning models get max_completion_tokens and no
// sampling member, other OpenAI models every option; Anthropic's current
// models get temperature without top_p, and the anthropic-version header.
func TestTodaysModelsAcceptTheRequest(t *testing.T) {
	all := llm.Options{Temperature: ptr(0.7), TopP: ptr(0.9), FrequencyPenalty: ptr(0.5), PresencePenalty: ptr(0.1), MaxTokens: ptr(300)}
	cases := []struct {
		provider, model string
		newServer       func(testing.TB) *llmtest.Server
		want            []string // option members sent
	}{
		{llm.ProviderOpenAI, "gpt-5.6-terra", llmtest.NewOpenAI, []string{"max_completion_tokens"}},
		{llm.ProviderOpenAI, "o4-mini", llmtest.NewOpenAI, []string{"max_completion_tokens"}},
		{llm.ProviderOpenAI, "gpt-4o-mini", llmtest.NewOpenAI,
			[]string{"max_completion_tokens", "temperature", "top_p", "frequency_penalty", "presence_penalty"}},
		{llm.ProviderAnthropic, "claude-haiku-4-5", llmtest.NewAnthropic, []string{"max_tokens", "temperature"}},
	}
	members := []string{"max_tokens", "max_completion_tokens", "temperature", "top_p", "frequency_penalty", "presence_penalty"}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			srv := tc.newServer(t)
			c := newClient(t, tc.provider, srv.URL, 0)
			req := request(providerCase{provider: tc.provider, model: tc.model})
			req.Options = all
			if _, err := c.Generate(context.Background(), req); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if _, err := c.Stream(context.Background(), req, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			for _, rec := range srv.Requests() {
				for _, m := range members {
					if rec.Has(m) != slices.Contains(tc.want, m) {
						t.Errorf("%s sent: %v, want %v (body %s)", m, rec.Has(m), !rec.Has(m), rec.Raw)
					}
				}
			}
		})
	}
}
