package llm

import (
	"regexp"
	"strings"
	"text/template"
	"unicode/utf8"
)

// Context is where a message comes from: the context member of a message
// request, and in a direct conversation who the model talks with.
type Context struct {
	Platform string `json:"platform,omitempty"`
	Channel  string `json:"channel,omitempty"`
	// User is the other side of a direct conversation, as the prompt names
	// them: a display name with the user id, or the id alone; "" in a room.
	User string `json:"-"`
}

// Recalled is what the agent's long-term memory and knowledge bring to a
// turn's system prompt.
type Recalled struct {
	// Summary folds what has slid out of the conversation's window.
	Summary string
	// Memories are the memories most relevant to the message, best first.
	Memories []string
	// Knowledge are the knowledge chunks most relevant to the message.
	Knowledge []Snippet
}

// Snippet is a knowledge chunk and the name of its document.
type Snippet struct {
	Document, Text string
}

// MaxPromptExamples is how many messageExamples conversations the system
// prompt shows, in stored order.
const MaxPromptExamples = 5

// promptTemplate renders the system prompt. Every section is guarded by
// "with", so a section with nothing in it disappears; the blank lines it
// leaves are collapsed afterwards, which keeps the template readable.
const promptTemplate = `
{{- with .System}}{{.}}{{end}}

{{with .Name}}Your name is {{.}}.{{end}}

{{with .Bio}}About you:
{{range .}}- {{.}}
{{end}}{{end}}

{{with .Lore}}Your background:
{{range .}}- {{.}}
{{end}}{{end}}

{{with .Personality}}Your personality:
{{with .Traits}}- Traits: {{join .}}
{{end}}{{with .Adjectives}}- Adjectives: {{join .}}
{{end}}{{with .Style}}- Style: {{.}}
{{end}}{{with .Tone}}- Tone: {{.}}
{{end}}{{end}}

{{with .Knowledge}}What you know:
{{range .}}- {{.}}
{{end}}{{end}}

{{with .Topics}}Topics you like to talk about: {{join .}}.{{end}}

{{with .Goals}}Your goals:
{{range .}}- {{.}}
{{end}}{{end}}

{{with .Style}}How you write:
{{range .}}- {{.}}
{{end}}{{end}}

{{with .Examples}}Example conversations, to show your voice (do not repeat them word for word):
{{range .}}
{{range .}}{{.User}}: {{.Text}}
{{end}}{{end}}{{end}}

{{with .Guidelines}}Response guidelines:
{{with .MaxLength}}- Keep every reply to at most {{.}} characters.
{{end}}{{with .PreferredLength}}- Aim for replies of about {{.}} characters.
{{end}}{{if isTrue .UseEmojis}}- Use emojis where they fit.
{{else if isFalse .UseEmojis}}- Do not use emojis.
{{end}}{{if isTrue .UseHashtags}}- Use hashtags where they fit.
{{else if isFalse .UseHashtags}}- Do not use hashtags.
{{end}}{{if isTrue .MentionUsers}}- Mention users by name when you address them.
{{else if isFalse .MentionUsers}}- Do not mention or tag users.
{{end}}{{if isTrue .IncludeLinks}}- Include relevant links when they help.
{{else if isFalse .IncludeLinks}}- Do not include links.
{{end}}{{end}}

{{with .Templates}}Phrases in your voice:
{{with .Greeting}}- When greeting: {{quoted .}}
{{end}}{{with .Farewell}}- When saying goodbye: {{quoted .}}
{{end}}{{with .Uncertainty}}- When you are unsure: {{quoted .}}
{{end}}{{end}}

{{with .Actions}}Actions you can take:
{{range .}}- {{.Name}}{{with .Description}}: {{.}}{{end}}
{{with .Examples}}  Examples: {{quoted .}}
{{end}}{{end}}{{end}}

{{with .Summary}}Earlier in this conversation:
{{.}}
{{end}}

{{with .Memories}}What you remember:
{{range .}}- {{.}}
{{end}}{{end}}

{{with .Snippets}}Relevant knowledge:
{{range .}}[{{.Document}}]
{{.Text}}
{{end}}{{end}}

{{with .Context}}Conversation context:
{{with .Platform}}- Platform: {{.}}
{{end}}{{with .Channel}}- Channel: {{.}}
{{end}}{{with .User}}- You are talking with {{.}}.
{{end}}{{end}}
`

// prompt is the parsed promptTemplate.
var prompt = template.Must(template.New("system").Funcs(template.FuncMap{
	"join":    func(items []string) string { return strings.Join(items, ", ") },
	"quoted":  func(items []string) string { return `"` + strings.Join(items, `" / "`) + `"` },
	"isTrue":  func(b *bool) bool { return b != nil && *b },
	"isFalse": func(b *bool) bool { return b != nil && !*b },
}).Parse(promptTemplate))

// blankRuns matches the blank lines left by omitted sections.
var blankRuns = regexp.MustCompile(`\n{3,}`)

// promptData is what promptTemplate renders: the character with blank
// strings removed and empty sections set to nil.
type promptData struct {
	System, Name                        string
	Bio, Lore, Knowledge, Topics, Goals []string
	Style                               []string
	Examples                            [][]ExampleMessage
	Personality                         *Personality
	Guidelines                          *ResponseGuidelines
	Templates                           *MessageTemplates
	Actions                             []Action
	Context                             *Context
	Summary                             string
	Memories                            []string
	Snippets                            []Snippet
}

// BuildSystemPrompt renders the system prompt of a character: its system
// text first, then name, bio, lore, personality (with the top-level
// adjectives), knowledge, topics, goals, style (all and chat; post is for
// posts), up to MaxPromptExamples example conversations, response
// guidelines, message templates, actions, what is recalled (the
// conversation's summary, memories, knowledge), and the context of the
// message (platform, channel, who the model talks with). Empty sections
// are omitted.
func BuildSystemPrompt(ch Character, cx Context, rc Recalled) string {
	var b strings.Builder
	data := newPromptData(ch, cx)
	data.Summary, data.Memories, data.Snippets = strings.TrimSpace(rc.Summary), clean(rc.Memories), rc.Knowledge
	if err := prompt.Execute(&b, data); err != nil {
		// The template is fixed and its data typed: an error is a bug.
		panic("llm: system prompt template: " + err.Error())
	}
	return strings.TrimSpace(blankRuns.ReplaceAllString(b.String(), "\n\n"))
}

// newPromptData cleans a character for the template.
func newPromptData(ch Character, cx Context) promptData {
	return promptData{
		System:      strings.TrimSpace(ch.System),
		Name:        strings.TrimSpace(ch.Name),
		Bio:         clean(ch.Bio),
		Lore:        clean(ch.Lore),
		Knowledge:   clean(ch.Knowledge),
		Topics:      clean(ch.Topics),
		Goals:       clean(ch.Goals),
		Style:       clean(append(append([]string{}, ch.Style.All...), ch.Style.Chat...)),
		Examples:    examplesData(ch),
		Personality: personalityData(ch),
		Guidelines:  guidelinesData(ch.ResponseGuidelines),
		Templates:   templatesData(ch.MessageTemplates),
		Actions:     actionsData(ch.Actions),
		Context:     contextData(cx),
	}
}

// personalityData merges personality.adjectives with the top-level
// (ElizaOS) adjectives; nil when there is nothing to say.
func personalityData(ch Character) *Personality {
	p := Personality{
		Traits:     clean(ch.Personality.Traits),
		Style:      strings.TrimSpace(ch.Personality.Style),
		Tone:       strings.TrimSpace(ch.Personality.Tone),
		Adjectives: clean(append(append([]string{}, ch.Personality.Adjectives...), ch.Adjectives...)),
	}
	if p.Traits == nil && p.Adjectives == nil && p.Style == "" && p.Tone == "" {
		return nil
	}
	return &p
}

// guidelinesData drops non-positive lengths; nil when nothing is set.
func guidelinesData(g ResponseGuidelines) *ResponseGuidelines {
	if g.MaxLength != nil && *g.MaxLength <= 0 {
		g.MaxLength = nil
	}
	if g.PreferredLength != nil && *g.PreferredLength <= 0 {
		g.PreferredLength = nil
	}
	if g == (ResponseGuidelines{}) {
		return nil
	}
	return &g
}

// templatesData cleans the message templates; nil when all are empty.
func templatesData(t MessageTemplates) *MessageTemplates {
	t = MessageTemplates{Greeting: clean(t.Greeting), Farewell: clean(t.Farewell), Uncertainty: clean(t.Uncertainty)}
	if t.Greeting == nil && t.Farewell == nil && t.Uncertainty == nil {
		return nil
	}
	return &t
}

// actionsData keeps the named actions; the handler is not for the model.
func actionsData(actions []Action) []Action {
	var out []Action
	for _, a := range actions {
		a = Action{Name: strings.TrimSpace(a.Name), Description: strings.TrimSpace(a.Description), Examples: clean(a.Examples)}
		if a.Name != "" {
			out = append(out, a)
		}
	}
	return out
}

// userPlaceholder is how ElizaOS example conversations name the user.
var userPlaceholder = regexp.MustCompile(`\{\{user[0-9]*\}\}`)

// examplesData is the first MaxPromptExamples example conversations with
// their placeholders filled: {{user1}} (any {{userN}}) is "user",
// {{agentName}} the agent's name.
func examplesData(ch Character) [][]ExampleMessage {
	name := strings.TrimSpace(ch.Name)
	fill := func(s string) string {
		s = userPlaceholder.ReplaceAllString(s, "user")
		return strings.TrimSpace(strings.ReplaceAll(s, "{{agentName}}", name))
	}
	var out [][]ExampleMessage
	for _, conv := range ch.MessageExamples[:min(len(ch.MessageExamples), MaxPromptExamples)] {
		msgs := make([]ExampleMessage, 0, len(conv))
		for _, m := range conv {
			msgs = append(msgs, ExampleMessage{User: fill(m.User), Text: fill(m.Text)})
		}
		out = append(out, msgs)
	}
	return out
}

// contextData trims the context; nil when empty.
func contextData(cx Context) *Context {
	cx = Context{Platform: strings.TrimSpace(cx.Platform), Channel: strings.TrimSpace(cx.Channel), User: strings.TrimSpace(cx.User)}
	if cx == (Context{}) {
		return nil
	}
	return &cx
}

// clean trims items and drops blank and repeated ones; nil when none are
// left, so the template's "with" omits the section.
func clean(items []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range items {
		s = strings.TrimSpace(s)
		if s == "" || seen[strings.ToLower(s)] {
			continue
		}
		seen[strings.ToLower(s)] = true
		out = append(out, s)
	}
	return out
}

// EstimateTokens estimates the tokens of text at 4 characters a token.
func EstimateTokens(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// FitHistory keeps the newest of msgs (oldest first) that fit together in
// budget tokens, so a conversation that grows never overflows the model's
// context; the system prompt and the new message are not counted.
func FitHistory(msgs []Message, budget int) []Message {
	used := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		used += EstimateTokens(msgs[i].Content)
		if used > budget {
			return msgs[i+1:]
		}
	}
	return msgs
}
