package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// openaiFormat is the OpenAI chat-completions wire format (openai, groq and
// google's OpenAI-compatible endpoint).
type openaiFormat struct{}

// patch replaces langchaingo's sampling fields: it always sends temperature
// (0 when unset), never sends top_p, and omits zero penalties. OpenAI's
// reasoning models refuse every one of them with a 400, so none is sent to
// them; their token bound is max_completion_tokens, which OpenAI gets
// already (openaiAdapter).
func (openaiFormat) patch(body map[string]json.RawMessage, req *Request) error {
	o := req.Options
	if req.Provider == ProviderOpenAI && reasoningModel(req.Model) {
		o = Options{MaxTokens: o.MaxTokens}
	}
	return setAll(body, map[string]*float64{
		"temperature":       o.Temperature,
		"top_p":             o.TopP,
		"frequency_penalty": o.FrequencyPenalty,
		"presence_penalty":  o.PresencePenalty,
	})
}

// reasoningModel reports whether an OpenAI model is a reasoning model: the
// o series (o1, o3, o4-mini, ...) and GPT-5 and later, fine-tuned ones
// ("ft:o4-mini:...") included.
func reasoningModel(model string) bool {
	model = strings.ToLower(strings.TrimPrefix(model, "ft:"))
	if len(model) >= 2 && model[0] == 'o' && model[1] >= '0' && model[1] <= '9' {
		return true
	}
	rest, ok := strings.CutPrefix(model, "gpt-")
	return ok && rest != "" && rest[0] >= '5' && rest[0] <= '9'
}

// observe reads a chat completion, a stream chunk or an error body.
func (openaiFormat) observe(doc []byte, rec *record) bool {
	if bytes.Equal(doc, []byte("[DONE]")) {
		rec.complete = true
		return false
	}
	if rec.model != "" && plainDelta(doc) {
		return false
	}
	var v struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason *string          `json:"finish_reason"`
			Message      *openaiToolCalls `json:"message"`
			Delta        *openaiToolCalls `json:"delta"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
		Error *struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(doc, &v) != nil {
		return observeGoogleError(doc, rec)
	}
	if v.Error != nil {
		typ := v.Error.Type
		var code string
		if json.Unmarshal(v.Error.Code, &code) == nil && code != "" {
			typ = code
		}
		rec.provErr = &providerError{Type: typ, Message: v.Error.Message}
		return true
	}
	if v.Model != "" {
		rec.model = v.Model
	}
	if v.Usage != nil {
		rec.usage = Usage{v.Usage.PromptTokens, v.Usage.CompletionTokens, v.Usage.TotalTokens}
	}
	for _, c := range v.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			rec.complete = true
			rec.cut = rec.cut || *c.FinishReason == "length" || *c.FinishReason == "MAX_TOKENS"
		}
		c.Message.addTo(&rec.toolCalls)
		c.Delta.addTo(&rec.toolCalls)
	}
	return false
}

// observeGoogleError reads the error body Google's OpenAI-compatible
// endpoint sends, a list holding one error in Google's own shape:
// [{"error": {"code": 404, "message": "...", "status": "NOT_FOUND"}}].
func observeGoogleError(doc []byte, rec *record) bool {
	var list []struct {
		Error *struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(doc, &list) != nil || len(list) == 0 || list[0].Error == nil {
		return false
	}
	rec.provErr = &providerError{Type: list[0].Error.Status, Message: list[0].Error.Message}
	return true
}

// plainDelta reports whether a chunk can hold nothing observe keeps but
// the model: no usage, error or tool calls, and no finish reason. Most
// chunks of a stream are such content deltas, which langchaingo decodes
// anyway; skipping them spares a second decoding of every token. A chunk
// that might hold more is decoded. The keys are looked for as the decoder
// matches them (any case), and a chunk whose keys could be spelled
// otherwise (a \u escape, or a rune encoding/json folds onto an ASCII
// letter) is decoded.
func plainDelta(doc []byte) bool {
	for _, unsure := range []string{`\u`, "\u017f", "\u212a"} {
		if bytes.Contains(doc, []byte(unsure)) {
			return false
		}
	}
	for _, key := range []string{`"usage"`, `"error"`, `"tool_calls"`} {
		if _, found := afterKey(doc, key); found {
			return false
		}
	}
	for rest := doc; ; {
		var found bool
		if rest, found = afterKey(rest, `"finish_reason"`); !found {
			return true
		}
		value, ok := bytes.CutPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte(":"))
		if !ok || !bytes.HasPrefix(bytes.TrimLeft(value, " \t\r\n"), []byte("null")) {
			return false
		}
	}
}

// afterKey returns what follows the first key (quoted, ASCII) in doc,
// matched in any case.
func afterKey(doc []byte, key string) ([]byte, bool) {
	for i := 0; i+len(key) <= len(doc); i++ {
		j := bytes.IndexByte(doc[i:], '"')
		if j < 0 || i+j+len(key) > len(doc) {
			return nil, false
		}
		i += j
		if bytes.EqualFold(doc[i:i+len(key)], []byte(key)) {
			return doc[i+len(key):], true
		}
	}
	return nil, false
}

// openaiToolCalls is the tool_calls member of a message or a stream delta.
type openaiToolCalls struct {
	ToolCalls []struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// addTo records the calls, whole or in pieces; nil adds nothing.
func (m *openaiToolCalls) addTo(b *toolCallBuilder) {
	if m == nil {
		return
	}
	for _, c := range m.ToolCalls {
		b.piece(c.Index, c.ID, c.Function.Name, c.Function.Arguments)
	}
}

// rewrite takes tool_calls out of stream deltas: langchaingo v0.1.14 hands
// them to the streaming func as JSON text, as if the model had written it,
// and appends the arguments of parallel calls to the last call whatever
// their index. The calls are read from the wire instead (observe).
func (openaiFormat) rewrite(doc []byte) []byte {
	if !bytes.Contains(doc, []byte(`"tool_calls"`)) {
		return nil
	}
	var v map[string]json.RawMessage
	var choices []map[string]json.RawMessage
	if json.Unmarshal(doc, &v) != nil || json.Unmarshal(v["choices"], &choices) != nil {
		return nil
	}
	for _, c := range choices {
		var delta map[string]json.RawMessage
		if json.Unmarshal(c["delta"], &delta) != nil || delta == nil {
			continue
		}
		delete(delta, "tool_calls")
		c["delta"], _ = json.Marshal(delta)
	}
	v["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// anthropicFormat is the Anthropic Messages wire format.
type anthropicFormat struct{}

// patch replaces langchaingo's temperature (always sent, 0 when unset) and
// top_p, sending top_p only without a temperature. Anthropic has no
// frequency or presence penalty, so those are not sent; max_tokens is set by
// langchaingo (mandatory there, 2048 unless set).
// A last call after tool steps still defines the tools (Anthropic refuses
// tool_use blocks otherwise) and forbids their use.
func (anthropicFormat) patch(body map[string]json.RawMessage, req *Request) error {
	topP := req.Options.TopP
	if req.Options.Temperature != nil {
		// Anthropic's current models (Claude 4.5 and later) refuse
		// temperature and top_p together with a 400; temperature is the
		// one Anthropic suggests tuning.
		topP = nil
	}
	err := setAll(body, map[string]*float64{
		"temperature": req.Options.Temperature,
		"top_p":       topP,
	})
	if err == nil && req.ToolsDone && len(req.Steps) > 0 {
		err = setJSON(body, "tool_choice", map[string]string{"type": "none"})
	}
	return err
}

// anthropicUsage is the usage member of Anthropic messages and events.
type anthropicUsage struct {
	InputTokens  *int `json:"input_tokens"`
	OutputTokens *int `json:"output_tokens"`
}

// observe reads a message, a stream event or an error body.
func (anthropicFormat) observe(doc []byte, rec *record) bool {
	var v struct {
		Type    string          `json:"type"`
		Model   string          `json:"model"`
		Usage   *anthropicUsage `json:"usage"`
		Message *struct {
			Model string          `json:"model"`
			Usage *anthropicUsage `json:"usage"`
		} `json:"message"`
		Index        *int             `json:"index"`
		Content      []anthropicBlock `json:"content"`
		ContentBlock *anthropicBlock  `json:"content_block"`
		Delta        *struct {
			Type        string `json:"type"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		StopReason string `json:"stop_reason"`
		Error      *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(doc, &v) != nil {
		return false
	}
	switch v.Type {
	case "error":
		rec.provErr = &providerError{Type: "api_error"}
		if v.Error != nil {
			rec.provErr = &providerError{Type: v.Error.Type, Message: v.Error.Message}
		}
		return true
	case "message_start":
		if v.Message != nil {
			rec.model = v.Message.Model
			addAnthropicUsage(rec, v.Message.Usage)
		}
	case "message_stop":
		rec.complete = true
	case "message_delta":
		rec.cut = rec.cut || v.Delta != nil && v.Delta.StopReason == "max_tokens"
	case "message":
		rec.model = v.Model
		rec.cut = v.StopReason == "max_tokens"
		for _, b := range v.Content {
			if b.Type == "tool_use" {
				rec.toolCalls.add(ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			}
		}
	case "content_block_start":
		if b := v.ContentBlock; b != nil && b.Type == "tool_use" {
			rec.toolCalls.piece(v.Index, b.ID, b.Name, "")
		}
	case "content_block_delta":
		if v.Delta != nil && v.Delta.Type == "input_json_delta" && v.Index != nil {
			if _, ok := rec.toolCalls.pos[*v.Index]; ok {
				rec.toolCalls.piece(v.Index, "", "", v.Delta.PartialJSON)
			}
		}
	}
	addAnthropicUsage(rec, v.Usage)
	return false
}

// anthropicBlock is a content block of a message.
type anthropicBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// addAnthropicUsage records the counts present in u.
func addAnthropicUsage(rec *record, u *anthropicUsage) {
	if u == nil {
		return
	}
	if u.InputTokens != nil {
		rec.usage.PromptTokens = *u.InputTokens
	}
	if u.OutputTokens != nil {
		rec.usage.CompletionTokens = *u.OutputTokens
	}
	rec.usage.TotalTokens = rec.usage.PromptTokens + rec.usage.CompletionTokens
}

// ollamaFormat is ollama's /api/chat wire format.
type ollamaFormat struct{}

// patch replaces langchaingo's options object, which always carries
// temperature (0 when unset, overriding the model's default) and cannot
// carry a zero top_p or penalty, with exactly the options that were set.
// langchaingo v0.1.14's ollama client knows no tools: they and the turn's
// steps are written here.
func (f ollamaFormat) patch(body map[string]json.RawMessage, req *Request) error {
	if err := f.patchOptions(body, req.Options); err != nil {
		return err
	}
	if err := ollamaTools(body, offered(req)); err != nil {
		return err
	}
	return ollamaSteps(body, req.Steps)
}

// patchOptions writes the sampling options.
func (ollamaFormat) patchOptions(body map[string]json.RawMessage, o Options) error {
	opts := map[string]any{}
	add := func(key string, v any, set bool) {
		if set {
			opts[key] = v
		}
	}
	add("temperature", deref(o.Temperature), o.Temperature != nil)
	add("top_p", deref(o.TopP), o.TopP != nil)
	add("frequency_penalty", deref(o.FrequencyPenalty), o.FrequencyPenalty != nil)
	add("presence_penalty", deref(o.PresencePenalty), o.PresencePenalty != nil)
	add("num_predict", deref(o.MaxTokens), o.MaxTokens != nil && *o.MaxTokens > 0)
	if len(opts) == 0 {
		delete(body, "options")
		return nil
	}
	return setJSON(body, "options", opts)
}

// observe reads a chat response, a stream line or an error body.
func (ollamaFormat) observe(doc []byte, rec *record) bool {
	var v struct {
		Model           string `json:"model"`
		Done            bool   `json:"done"`
		DoneReason      string `json:"done_reason"`
		PromptEvalCount int    `json:"prompt_eval_count"`
		EvalCount       int    `json:"eval_count"`
		Error           string `json:"error"`
		Message         *struct {
			ToolCalls []ollamaToolCall `json:"tool_calls"`
		} `json:"message"`
	}
	if json.Unmarshal(doc, &v) != nil {
		return false
	}
	if v.Error != "" {
		rec.provErr = &providerError{Message: v.Error}
		return true
	}
	if v.Model != "" {
		rec.model = v.Model
	}
	if v.Message != nil {
		for _, c := range v.Message.ToolCalls {
			rec.toolCalls.add(ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: string(c.Function.Arguments)})
		}
	}
	if v.Done {
		rec.complete = true
		rec.cut = v.DoneReason == "length"
		rec.usage = Usage{v.PromptEvalCount, v.EvalCount, v.PromptEvalCount + v.EvalCount}
	}
	return false
}

// setAll sets each key to its value when set and removes it otherwise.
func setAll(body map[string]json.RawMessage, fields map[string]*float64) error {
	for key, v := range fields {
		if err := setOptional(body, key, v); err != nil {
			return err
		}
	}
	return nil
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ollamaToolCall is a tool call of an ollama message; arguments are an
// object, not a string as in OpenAI's format.
type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaTools writes the tools offered, in OpenAI's function shape as
// ollama takes them.
func ollamaTools(body map[string]json.RawMessage, tools []Tool) error {
	delete(body, "tools")
	if len(tools) == 0 {
		return nil
	}
	defs := make([]map[string]any, len(tools))
	for i, t := range tools {
		defs[i] = map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": schema(t.Parameters)}}
	}
	return setJSON(body, "tools", defs)
}

// ollamaSteps appends the turn's tool steps to the messages: each call as
// an assistant message, then its result as a tool message naming the tool.
func ollamaSteps(body map[string]json.RawMessage, steps []ToolStep) error {
	if len(steps) == 0 {
		return nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body["messages"], &msgs); err != nil {
		return fmt.Errorf("decode messages: %w", err)
	}
	for _, s := range steps {
		call := ollamaToolCall{}
		call.Function.Name, call.Function.Arguments = s.Call.Name, json.RawMessage(s.Call.Arguments)
		for _, m := range []any{
			map[string]any{"role": "assistant", "content": "", "tool_calls": []ollamaToolCall{call}},
			map[string]any{"role": "tool", "content": s.Result, "tool_name": s.Call.Name},
		} {
			raw, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("encode tool step: %w", err)
			}
			msgs = append(msgs, raw)
		}
	}
	return setJSON(body, "messages", msgs)
}
