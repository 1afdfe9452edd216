package llm

import (
	"bytes"
	"encoding/json"
)

// openaiFormat is the OpenAI chat-completions wire format (openai, groq and
// google's OpenAI-compatible endpoint).
type openaiFormat struct{}

// patch replaces langchaingo's sampling fields: it always sends temperature
// (0 when unset), never sends top_p, and omits zero penalties.
func (openaiFormat) patch(body map[string]json.RawMessage, o Options) error {
	return setAll(body, map[string]*float64{
		"temperature":       o.Temperature,
		"top_p":             o.TopP,
		"frequency_penalty": o.FrequencyPenalty,
		"presence_penalty":  o.PresencePenalty,
	})
}

// observe reads a chat completion, a stream chunk or an error body.
func (openaiFormat) observe(doc []byte, rec *record) bool {
	if bytes.Equal(doc, []byte("[DONE]")) {
		rec.complete = true
		return false
	}
	var v struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
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
		return false
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
		}
	}
	return false
}

// anthropicFormat is the Anthropic Messages wire format.
type anthropicFormat struct{}

// patch replaces langchaingo's temperature (always sent, 0 when unset) and
// top_p. Anthropic has no frequency or presence penalty, so those are not
// sent; max_tokens is set by langchaingo (mandatory there, 2048 unless set).
func (anthropicFormat) patch(body map[string]json.RawMessage, o Options) error {
	return setAll(body, map[string]*float64{
		"temperature": o.Temperature,
		"top_p":       o.TopP,
	})
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
		Error *struct {
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
	case "message":
		rec.model = v.Model
	}
	addAnthropicUsage(rec, v.Usage)
	return false
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
func (ollamaFormat) patch(body map[string]json.RawMessage, o Options) error {
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
		PromptEvalCount int    `json:"prompt_eval_count"`
		EvalCount       int    `json:"eval_count"`
		Error           string `json:"error"`
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
	if v.Done {
		rec.complete = true
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
