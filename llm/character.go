package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// DefaultHistoryWindow is how many earlier messages are sent when a
// character's memory.shortTermContext is not set.
const DefaultHistoryWindow = 20

// Character is the part of an agent's document that shapes its answers.
// The json names are the agent document's member names, so the server can
// decode a stored agent document straight into it. Decoding is lenient: a
// member whose value does not have the expected shape is ignored rather
// than failing the rest (character files come from many tools); a list of
// strings may also be given as one string (ElizaOS "bio": "...").
type Character struct {
	Name               string             `json:"name,omitempty"`
	System             string             `json:"system,omitempty"`
	Bio                []string           `json:"bio,omitempty"`
	Lore               []string           `json:"lore,omitempty"`
	Knowledge          []string           `json:"knowledge,omitempty"`
	Goals              []string           `json:"goals,omitempty"`
	Topics             []string           `json:"topics,omitempty"`
	Adjectives         []string           `json:"adjectives,omitempty"`
	PostExamples       []string           `json:"postExamples,omitempty"`
	MessageExamples    [][]ExampleMessage `json:"messageExamples,omitempty"`
	Personality        Personality        `json:"personality"`
	Style              Style              `json:"style"`
	ResponseGuidelines ResponseGuidelines `json:"responseGuidelines"`
	MessageTemplates   MessageTemplates   `json:"messageTemplates"`
	Actions            []Action           `json:"actions,omitempty"`
	Memory             Memory             `json:"memory"`
	ModelSettings      ModelSettings      `json:"modelSettings"`
}

// Personality is the agent's personality member.
type Personality struct {
	Traits     []string `json:"traits,omitempty"`
	Style      string   `json:"style,omitempty"`
	Tone       string   `json:"tone,omitempty"`
	Adjectives []string `json:"adjectives,omitempty"`
}

// Style is the ElizaOS style member: how the character writes in general,
// in chat and in posts.
type Style struct {
	All  []string `json:"all,omitempty"`
	Chat []string `json:"chat,omitempty"`
	Post []string `json:"post,omitempty"`
}

// ResponseGuidelines is the character file's responseGuidelines member.
// Nil means not set.
type ResponseGuidelines struct {
	MaxLength       *int  `json:"maxLength,omitempty"`
	PreferredLength *int  `json:"preferredLength,omitempty"`
	UseEmojis       *bool `json:"useEmojis,omitempty"`
	UseHashtags     *bool `json:"useHashtags,omitempty"`
	MentionUsers    *bool `json:"mentionUsers,omitempty"`
	IncludeLinks    *bool `json:"includeLinks,omitempty"`
}

// MessageTemplates is the character file's messageTemplates member.
type MessageTemplates struct {
	Greeting    []string `json:"greeting,omitempty"`
	Farewell    []string `json:"farewell,omitempty"`
	Uncertainty []string `json:"uncertainty,omitempty"`
}

// Action is one entry of the character file's actions member.
type Action struct {
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Examples    []string `json:"examples,omitempty"`
	Handler     string   `json:"handler,omitempty"`
}

// ExampleMessage is one message of an ElizaOS example conversation
// (messageExamples): who says it (user, or name in newer files) and what.
type ExampleMessage struct {
	User string `json:"user,omitempty"`
	Text string `json:"text,omitempty"`
}

// Memory is the character file's memory member. Nil means not set.
type Memory struct {
	Enabled          *bool `json:"enabled,omitempty"`
	ShortTermContext *int  `json:"shortTermContext,omitempty"`
	MaxContextTokens *int  `json:"maxContextTokens,omitempty"`
}

// ModelSettings is the character file's modelSettings member. Nil means not
// set.
type ModelSettings struct {
	Temperature      *float64 `json:"temperature,omitempty"`
	MaxTokens        *int     `json:"maxTokens,omitempty"`
	TopP             *float64 `json:"topP,omitempty"`
	FrequencyPenalty *float64 `json:"frequencyPenalty,omitempty"`
	PresencePenalty  *float64 `json:"presencePenalty,omitempty"`
}

// Options returns the sampling options from modelSettings; a MaxTokens
// that is not positive counts as not set.
func (ch Character) Options() Options {
	ms := ch.ModelSettings
	o := Options{
		Temperature:      clone(ms.Temperature),
		TopP:             clone(ms.TopP),
		FrequencyPenalty: clone(ms.FrequencyPenalty),
		PresencePenalty:  clone(ms.PresencePenalty),
	}
	if ms.MaxTokens != nil && *ms.MaxTokens > 0 {
		o.MaxTokens = clone(ms.MaxTokens)
	}
	return o
}

// HistoryWindow returns how many earlier messages to send: 0 when
// memory.enabled is false (a stateless agent), else memory.shortTermContext,
// by default DefaultHistoryWindow.
func (ch Character) HistoryWindow() int {
	m := ch.Memory
	switch {
	case m.Enabled != nil && !*m.Enabled:
		return 0
	case m.ShortTermContext != nil && *m.ShortTermContext >= 0:
		return *m.ShortTermContext
	}
	return DefaultHistoryWindow
}

// The bounds of memory.maxContextTokens and its default.
const (
	DefaultContextTokens = 8000
	minContextTokens     = 1000
	maxContextTokens     = 200000
)

// ContextTokens returns memory.maxContextTokens, the budget of the earlier
// messages sent (DefaultContextTokens when not set, clamped to its bounds).
func (ch Character) ContextTokens() int {
	if n := ch.Memory.MaxContextTokens; n != nil {
		return min(max(*n, minContextTokens), maxContextTokens)
	}
	return DefaultContextTokens
}

// MaxReplyChars returns responseGuidelines.maxLength, or 0 (no cap) when it
// is not set or not positive.
func (ch Character) MaxReplyChars() int {
	if ml := ch.ResponseGuidelines.MaxLength; ml != nil && *ml > 0 {
		return *ml
	}
	return 0
}

// UnmarshalJSON decodes a character member by member; see Character.
func (ch *Character) UnmarshalJSON(data []byte) error {
	m, err := decodeMembers(data)
	if err != nil {
		return fmt.Errorf("character: %w", err)
	}
	*ch = CharacterFrom(m)
	return nil
}

// CharacterFrom reads a character from the members of an agent document
// as they are, without encoding them again; see Character.
func CharacterFrom(m map[string]json.RawMessage) Character {
	var ch Character
	fillCharacter(members(m), &ch)
	return ch
}

// fillCharacter sets the members of ch found in m.
func fillCharacter(m members, ch *Character) {
	m.str("name", &ch.Name)
	m.str("system", &ch.System)
	m.strs("bio", &ch.Bio)
	m.strs("lore", &ch.Lore)
	m.strs("knowledge", &ch.Knowledge)
	m.strs("goals", &ch.Goals)
	m.strs("topics", &ch.Topics)
	m.strs("adjectives", &ch.Adjectives)
	m.strs("postExamples", &ch.PostExamples)
	m.object("personality", &ch.Personality)
	m.object("style", &ch.Style)
	m.object("responseGuidelines", &ch.ResponseGuidelines)
	m.object("messageTemplates", &ch.MessageTemplates)
	m.object("memory", &ch.Memory)
	m.object("modelSettings", &ch.ModelSettings)
	ch.Actions = m.actions("actions")
	ch.MessageExamples = m.examples("messageExamples")
}

// UnmarshalJSON decodes the personality leniently.
func (p *Personality) UnmarshalJSON(data []byte) error {
	return decodeInto(data, p, func(m members) {
		m.strs("traits", &p.Traits)
		m.str("style", &p.Style)
		m.str("tone", &p.Tone)
		m.strs("adjectives", &p.Adjectives)
	})
}

// UnmarshalJSON decodes the style leniently.
func (s *Style) UnmarshalJSON(data []byte) error {
	return decodeInto(data, s, func(m members) {
		m.strs("all", &s.All)
		m.strs("chat", &s.Chat)
		m.strs("post", &s.Post)
	})
}

// UnmarshalJSON decodes the response guidelines leniently.
func (g *ResponseGuidelines) UnmarshalJSON(data []byte) error {
	return decodeInto(data, g, func(m members) {
		m.integer("maxLength", &g.MaxLength)
		m.integer("preferredLength", &g.PreferredLength)
		m.boolean("useEmojis", &g.UseEmojis)
		m.boolean("useHashtags", &g.UseHashtags)
		m.boolean("mentionUsers", &g.MentionUsers)
		m.boolean("includeLinks", &g.IncludeLinks)
	})
}

// UnmarshalJSON decodes the message templates leniently.
func (t *MessageTemplates) UnmarshalJSON(data []byte) error {
	return decodeInto(data, t, func(m members) {
		m.strs("greeting", &t.Greeting)
		m.strs("farewell", &t.Farewell)
		m.strs("uncertainty", &t.Uncertainty)
	})
}

// UnmarshalJSON decodes an action leniently.
func (a *Action) UnmarshalJSON(data []byte) error {
	return decodeInto(data, a, func(m members) {
		m.str("name", &a.Name)
		m.str("description", &a.Description)
		m.strs("examples", &a.Examples)
		m.str("handler", &a.Handler)
	})
}

// UnmarshalJSON decodes the memory settings leniently.
func (mem *Memory) UnmarshalJSON(data []byte) error {
	return decodeInto(data, mem, func(m members) {
		m.boolean("enabled", &mem.Enabled)
		m.integer("shortTermContext", &mem.ShortTermContext)
		m.integer("maxContextTokens", &mem.MaxContextTokens)
	})
}

// UnmarshalJSON decodes the model settings leniently.
func (s *ModelSettings) UnmarshalJSON(data []byte) error {
	return decodeInto(data, s, func(m members) {
		m.number("temperature", &s.Temperature)
		m.integer("maxTokens", &s.MaxTokens)
		m.number("topP", &s.TopP)
		m.number("frequencyPenalty", &s.FrequencyPenalty)
		m.number("presencePenalty", &s.PresencePenalty)
	})
}

// members are the raw members of a JSON object.
type members map[string]json.RawMessage

// decodeMembers splits a JSON object into its members; null gives none.
func decodeMembers(data []byte) (members, error) {
	var m members
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

// decodeInto resets *dst and fills it from the members of data.
func decodeInto[T any](data []byte, dst *T, fill func(members)) error {
	m, err := decodeMembers(data)
	if err != nil {
		return err
	}
	var zero T
	*dst = zero
	fill(m)
	return nil
}

// get returns a member's raw value; null counts as absent, because
// json.Unmarshal accepts null for any type without setting anything.
func (m members) get(key string) (json.RawMessage, bool) {
	raw, ok := m[key]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

// isNull reports whether raw is the JSON literal null.
func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// str sets *dst when the member is a string.
func (m members) str(key string, dst *string) {
	var s string
	if raw, ok := m.get(key); ok && json.Unmarshal(raw, &s) == nil {
		*dst = s
	}
}

// strs sets *dst from an array (its string items) or a single string.
func (m members) strs(key string, dst *[]string) {
	raw, ok := m.get(key)
	if !ok {
		return
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		*dst = []string{one}
		return
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		var s string
		if !isNull(item) && json.Unmarshal(item, &s) == nil {
			out = append(out, s)
		}
	}
	*dst = out
}

// number sets *dst when the member is a number.
func (m members) number(key string, dst **float64) {
	var f float64
	if raw, ok := m.get(key); ok && json.Unmarshal(raw, &f) == nil {
		*dst = &f
	}
}

// integer sets *dst when the member is a whole number (2048 or 2048.0).
func (m members) integer(key string, dst **int) {
	var f float64
	raw, ok := m.get(key)
	if !ok || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return
	}
	n := int(f)
	*dst = &n
}

// boolean sets *dst when the member is true or false.
func (m members) boolean(key string, dst **bool) {
	var b bool
	if raw, ok := m.get(key); ok && json.Unmarshal(raw, &b) == nil {
		*dst = &b
	}
}

// object decodes the member into dst, ignoring a member of another shape.
func (m members) object(key string, dst json.Unmarshaler) {
	if raw, ok := m.get(key); ok {
		_ = dst.UnmarshalJSON(raw) // a member that does not fit is ignored
	}
}

// actions decodes an array of actions, skipping items that are not objects.
func (m members) actions(key string) []Action {
	var items []json.RawMessage
	if raw, ok := m.get(key); !ok || json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []Action
	for _, item := range items {
		var a Action
		if a.UnmarshalJSON(item) == nil && (a.Name != "" || a.Description != "") {
			out = append(out, a)
		}
	}
	return out
}

// clone returns a copy of *p, nil for nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// examples reads messageExamples: a list of conversations, each a list of
// { user (or name), content: { text } }. Messages without text and
// conversations without messages are dropped.
func (m members) examples(key string) [][]ExampleMessage {
	raw, ok := m.get(key)
	if !ok {
		return nil
	}
	var convs []json.RawMessage
	if json.Unmarshal(raw, &convs) != nil {
		return nil
	}
	var out [][]ExampleMessage
	for _, c := range convs {
		var msgs []json.RawMessage
		if json.Unmarshal(c, &msgs) != nil {
			continue
		}
		var conv []ExampleMessage
		for _, raw := range msgs {
			msg, err := decodeMembers(raw)
			if err != nil {
				continue
			}
			var e ExampleMessage
			msg.str("user", &e.User)
			if e.User == "" {
				msg.str("name", &e.User)
			}
			if content, err := decodeMembers(msg["content"]); err == nil {
				content.str("text", &e.Text)
			}
			if e.Text != "" {
				conv = append(conv, e)
			}
		}
		if len(conv) > 0 {
			out = append(out, conv)
		}
	}
	return out
}
