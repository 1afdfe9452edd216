package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// retryBackoff are the pauses before the quick retries of an unavailable
// provider; its length is the number of retries.
var retryBackoff = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond}

// Client talks to every provider. It is safe for concurrent use: each call
// builds its own langchaingo client (a cheap struct) around a per-call
// transport, so no state is shared between calls.
type Client struct {
	cfg     Config
	base    *http.Client
	backoff []time.Duration
}

// New returns a Client for cfg. Missing API keys are not an error here; calls
// to such a provider fail with KindNotConfigured.
func New(cfg Config) *Client {
	base := cfg.HTTPClient
	if base == nil {
		base = &http.Client{Transport: newTransport(cfg.maxIdleConnsPerHost())}
	}
	return &Client{cfg: cfg, base: base, backoff: retryBackoff}
}

// newTransport is http.DefaultTransport with an idle pool of maxIdle
// connections per provider host. The default pool of 2 made every call
// beyond the second concurrent one dial anew (and repeat the TLS handshake).
func newTransport(maxIdle int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = maxIdle
	// The per-host bound is the one that matters: a handful of providers.
	tr.MaxIdleConns = 0
	return tr
}

// CloseIdleConnections closes the idle keep-alive connections to the
// providers, for a clean shutdown.
func (c *Client) CloseIdleConnections() { c.base.CloseIdleConnections() }

// Generate asks the model and returns the whole reply, cut to
// req.MaxReplyChars. A failure is an *Error, except cancellation by the
// caller: then the error wraps ctx.Err().
func (c *Client) Generate(ctx context.Context, req Request) (Reply, error) {
	return c.run(ctx, req, nil)
}

// Stream asks the model and calls onToken with each fragment of the reply in
// order, from one goroutine at a time. It returns the reply whose text is the
// concatenation of the fragments that onToken accepted, also the partial
// text when it fails. Once req.MaxReplyChars is reached the last fragment is
// cut, the provider call is cancelled and the capped reply is returned
// without error. An error from onToken aborts the call and is returned
// wrapped; other failures are as for Generate.
func (c *Client) Stream(ctx context.Context, req Request, onToken func(string) error) (Reply, error) {
	if onToken == nil {
		onToken = func(string) error { return nil }
	}
	return c.run(ctx, req, onToken)
}

// run validates req and makes up to 1+len(backoff) attempts: a retry only
// follows an unavailable provider, and only when nothing has been streamed.
func (c *Client) run(ctx context.Context, req Request, onToken func(string) error) (Reply, error) {
	ad, conf, err := c.target(req)
	if err != nil {
		return Reply{}, err
	}
	for try := 0; ; try++ {
		a := &attempt{provider: req.Provider, adapter: ad, conf: conf, req: req, timeout: c.cfg.timeout()}
		a.sink = newSink(onToken, req.MaxReplyChars, a.kick)
		reply, err := a.run(ctx, c.base)
		redactKey(err, conf.apiKey)
		if err == nil || !retryable(err) || a.sink.wasDelivered() || try >= len(c.backoff) {
			return reply, err
		}
		if err := sleep(ctx, c.backoff[try]); err != nil {
			return reply, fmt.Errorf("llm: %s call: %w", req.Provider, err)
		}
	}
}

// Configured returns a *Error of KindNotConfigured (or KindRequest for an
// unknown provider) when provider cannot be called as configured, else nil.
// apiKey is the caller's own key as in Request.APIKey: when not empty the
// provider needs no configured key. It calls nothing, so callers can refuse
// before they start answering.
func (c *Client) Configured(provider, apiKey string) error {
	_, _, err := c.provider(provider, apiKey)
	return err
}

// provider returns the adapter and configuration of a provider that can be
// called; apiKey, when not empty, replaces the configured key.
func (c *Client) provider(name, apiKey string) (adapter, resolved, error) {
	fail := func(kind Kind, format string, args ...any) (adapter, resolved, error) {
		return adapter{}, resolved{}, &Error{Kind: kind, Provider: name, Reason: fmt.Sprintf(format, args...)}
	}
	ad, ok := adapters[name]
	pc, _ := c.cfg.provider(name)
	if apiKey != "" {
		pc.APIKey = apiKey
	}
	switch {
	case !ok:
		return fail(KindRequest, "unknown model provider %q (supported: %s)", name, strings.Join(Providers, ", "))
	case ad.needsKey && pc.APIKey == "":
		return fail(KindNotConfigured, "%s is not set: set it in the server environment or in the agent's settings.secrets", APIKeyVar(name))
	}
	base, err := baseURL(name, pc)
	if err != nil {
		return fail(KindNotConfigured, "%s", err)
	}
	return ad, resolved{apiKey: pc.APIKey, baseURL: base}, nil
}

// target checks req and returns the provider's adapter and configuration.
func (c *Client) target(req Request) (adapter, resolved, error) {
	ad, conf, err := c.provider(req.Provider, req.APIKey)
	if err != nil {
		return adapter{}, resolved{}, err
	}
	fail := func(format string, args ...any) (adapter, resolved, error) {
		return adapter{}, resolved{}, &Error{Kind: KindRequest, Provider: req.Provider, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(req.Model) == "":
		return fail("no model given for provider %s", req.Provider)
	case strings.TrimSpace(req.Text) == "":
		return fail("the message text is empty")
	}
	for _, m := range req.History {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return fail("history message has unknown role %q", m.Role)
		}
	}
	return ad, conf, nil
}

// attempt is one call to a provider.
type attempt struct {
	provider string
	adapter  adapter
	conf     resolved
	req      Request
	timeout  time.Duration
	sink     *sink // nil for Generate
	ex       *exchange

	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

// run makes the call through a transport wrapping base's.
func (a *attempt) run(parent context.Context, base *http.Client) (Reply, error) {
	ctx := a.start(parent)
	defer a.end()
	model, err := a.adapter.newModel(a.conf, a.req.Model, a.httpClient(base, a.adapter.format))
	if err != nil {
		return Reply{}, &Error{Kind: KindNotConfigured, Provider: a.provider, Reason: "the provider client could not be built", Err: err}
	}
	resp, err := model.GenerateContent(ctx, a.messages(), a.callOptions()...)
	a.timer.Stop() // a timeout firing from now on must not fail a finished call
	return a.finish(parent, resp, err)
}

// httpClient returns a copy of base that sends through the attempt's
// exchange, which speaks format.
func (a *attempt) httpClient(base *http.Client, format wireFormat) *http.Client {
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	a.ex = &exchange{next: next, format: format, req: &a.req}
	hc := *base
	hc.Transport = a.ex
	return &hc
}

// start derives the call's context; the Timeout cancels it with
// errTimedOut. Ending the call cancels it too, which closes any response
// body langchaingo left open.
func (a *attempt) start(parent context.Context) context.Context {
	a.ctx, a.cancel = context.WithCancelCause(parent)
	a.timer = time.AfterFunc(a.timeout, func() { a.cancel(errTimedOut) })
	return a.ctx
}

// kick restarts the timeout: in Stream it bounds the wait between fragments.
func (a *attempt) kick() { a.timer.Reset(a.timeout) }

// end stops the timer and cancels the call's context.
func (a *attempt) end() {
	a.timer.Stop()
	a.cancel(errCallEnded)
}

// errCallEnded is the cancel cause of a call that has returned.
var errCallEnded = errors.New("provider call ended")

// timedOut reports whether the call's Timeout elapsed.
func (a *attempt) timedOut() bool {
	return errors.Is(context.Cause(a.ctx), errTimedOut)
}

// callOptions are the langchaingo call options of the attempt.
func (a *attempt) callOptions() []llms.CallOption {
	opts := []llms.CallOption{llms.WithModel(a.req.Model)}
	opts = append(opts, a.adapter.callOptions(a.req.Options)...)
	opts = append(opts, toolOptions(&a.req, a.adapter)...)
	if a.sink.streaming() {
		opts = append(opts, llms.WithStreamingFunc(a.sink.write))
	}
	return opts
}

// finish turns langchaingo's result into the reply and the error to return.
// langchaingo hides some failures (ollama ignores a broken connection,
// openai an error chunk or a cancelled read), so a nil err is checked
// against what the exchange recorded.
func (a *attempt) finish(parent context.Context, resp *llms.ContentResponse, err error) (Reply, error) {
	if err == nil && parent.Err() == nil && !a.failedSilently() {
		a.sink.flush() // the stream ended whole: the word held back is the last
	}
	reply := a.reply(resp)
	switch {
	case a.sink.wasCapped():
		return reply, nil
	case a.sink.abortErr() != nil:
		return reply, fmt.Errorf("llm: %s stream aborted: %w", a.provider, a.sink.abortErr())
	case parent.Err() != nil:
		return reply, fmt.Errorf("llm: %s call: %w", a.provider, parent.Err())
	case err != nil || a.failedSilently():
		return reply, a.classify(err)
	}
	return reply, nil
}

// failedSilently reports a failure that langchaingo returned no error for.
// A timeout shows here as a read error or an incomplete stream.
func (a *attempt) failedSilently() bool {
	rec := a.ex.snapshot()
	return rec.status >= http.StatusBadRequest || rec.provErr != nil ||
		rec.readErr != nil || (rec.streaming && !rec.complete)
}

// reply assembles the Reply: the streamed text in Stream, else the text of
// the response's choices, cut to MaxReplyChars at a word boundary.
func (a *attempt) reply(resp *llms.ContentResponse) Reply {
	rec := a.ex.snapshot()
	r := Reply{Model: rec.model, Usage: rec.usage, ToolCalls: rec.toolCalls.result(), Cut: rec.cut}
	if r.Model == "" {
		r.Model = a.req.Model
	}
	if resp != nil {
		text, usage, ok := fromChoices(resp.Choices)
		r.Text = text
		if ok {
			r.Usage = usage
		}
	}
	if a.sink.streaming() {
		r.Text, r.Cut = a.sink.text(), r.Cut || a.sink.wasCapped()
	}
	if a.req.MaxReplyChars > 0 {
		cut := CutAtWord(r.Text, a.req.MaxReplyChars)
		r.Text, r.Cut = cut, r.Cut || len(cut) < len(r.Text)
	}
	return r
}

// fromChoices joins the text of the choices and reads the usage. Anthropic
// returns each content block as its own choice (a thinking block has empty
// content); the other providers return one choice.
func fromChoices(choices []*llms.ContentChoice) (text string, usage Usage, ok bool) {
	var b strings.Builder
	for _, c := range choices {
		if c == nil {
			continue
		}
		b.WriteString(c.Content)
		if !ok {
			usage, ok = usageFrom(c.GenerationInfo)
		}
	}
	return b.String(), usage, ok
}

// usageFrom normalizes langchaingo's GenerationInfo usage keys: OpenAI and
// ollama report PromptTokens/CompletionTokens/TotalTokens, Anthropic
// InputTokens/OutputTokens.
func usageFrom(info map[string]any) (Usage, bool) {
	prompt, okP := intValue(info, "PromptTokens", "InputTokens")
	completion, okC := intValue(info, "CompletionTokens", "OutputTokens")
	total, okT := intValue(info, "TotalTokens")
	if !okT || total == 0 {
		total = prompt + completion
	}
	u := Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: total}
	return u, (okP || okC || okT) && u != Usage{}
}

// intValue returns the first of keys present in info as an int.
func intValue(info map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		switch n := info[k].(type) {
		case int:
			return n, true
		case int32:
			return int(n), true
		case int64:
			return int(n), true
		case float64:
			return int(n), true
		case float32:
			return int(n), true
		}
	}
	return 0, false
}

// messages builds the conversation: system prompt, history, new text and
// the turn's tool steps (which ollama's wire format writes itself).
func (a *attempt) messages() []llms.MessageContent {
	msgs := messages(a.req)
	if a.adapter.wireTools {
		return msgs
	}
	return append(msgs, stepMessages(a.req.Steps)...)
}

// messages builds the conversation: system prompt, history, new text.
// Empty history messages are skipped: Anthropic rejects empty text blocks.
func messages(req Request) []llms.MessageContent {
	msgs := make([]llms.MessageContent, 0, len(req.History)+2)
	if strings.TrimSpace(req.System) != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, req.System))
	}
	for _, m := range req.History {
		if strings.TrimSpace(m.Content) == "" {
			continue
		}
		role := llms.ChatMessageTypeHuman
		if m.Role == RoleAssistant {
			role = llms.ChatMessageTypeAI
		}
		msgs = append(msgs, llms.TextParts(role, m.Content))
	}
	return append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, req.Text))
}

// redactKey removes key from the Detail of a provider failure: some
// providers quote the key they rejected, and a Detail reaches the logs. The
// pattern masking of Detail does not catch keys of unusual shapes.
func redactKey(err error, key string) {
	var e *Error
	if key != "" && errors.As(err, &e) {
		e.Detail = strings.ReplaceAll(e.Detail, key, "[redacted]")
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
