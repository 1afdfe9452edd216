package llm_test

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
)

// fullCharacter sets every member that shapes the prompt.
func fullCharacter() llm.Character {
	return llm.Character{
		Name:       "Alfred",
		System:     "You are Alfred Pennyworth, the world's best butler.",
		Bio:        []string{"Loyal butler to Bruce Wayne"},
		Lore:       []string{"Served in the SAS"},
		Knowledge:  []string{"Field medicine"},
		Topics:     []string{"etiquette", "tea"},
		Goals:      []string{"Keep Master Bruce alive"},
		Adjectives: []string{"dignified"},
		Personality: llm.Personality{
			Traits: []string{"loyal", "witty"}, Style: "formal", Tone: "dry", Adjectives: []string{"proper"},
		},
		Style: llm.Style{All: []string{"Formal British English"}, Chat: []string{"Addresses men as sir"}, Post: []string{"POST-ONLY STYLE"}},
		ResponseGuidelines: llm.ResponseGuidelines{
			MaxLength: ptr(280), PreferredLength: ptr(120),
			UseEmojis: ptr(false), UseHashtags: ptr(true), MentionUsers: ptr(false), IncludeLinks: ptr(true),
		},
		MessageTemplates: llm.MessageTemplates{
			Greeting: []string{"Good evening, sir."}, Farewell: []string{"Do be careful, sir."}, Uncertainty: []string{"I couldn't say, sir."},
		},
		Actions: []llm.Action{{Name: "PREPARE_CAR", Description: "Readies the Batmobile", Examples: []string{"Get the car ready"}, Handler: "SECRET_HANDLER"}},
	}
}

var fullContext = llm.Context{Platform: "discord", Channel: "#batcave"}

func TestBuildSystemPromptOrder(t *testing.T) {
	p := llm.BuildSystemPrompt(fullCharacter(), fullContext, llm.Recalled{})
	order := []string{
		"You are Alfred Pennyworth, the world's best butler.",
		"Your name is Alfred.",
		"About you:\n- Loyal butler to Bruce Wayne",
		"Your background:\n- Served in the SAS",
		"Your personality:\n- Traits: loyal, witty\n- Adjectives: proper, dignified\n- Style: formal\n- Tone: dry",
		"What you know:\n- Field medicine",
		"Topics you like to talk about: etiquette, tea.",
		"Your goals:\n- Keep Master Bruce alive",
		"How you write:\n- Formal British English\n- Addresses men as sir",
		"Response guidelines:\n- Keep every reply to at most 280 characters.\n- Aim for replies of about 120 characters.\n" +
			"- Do not use emojis.\n- Use hashtags where they fit.\n- Do not mention or tag users.\n- Include relevant links when they help.",
		"Phrases in your voice:\n- When greeting: \"Good evening, sir.\"\n- When saying goodbye: \"Do be careful, sir.\"\n" +
			"- When you are unsure: \"I couldn't say, sir.\"",
		"Actions you can take:\n- PREPARE_CAR: Readies the Batmobile\n  Examples: \"Get the car ready\"",
		"Conversation context:\n- Platform: discord\n- Channel: #batcave",
	}
	at := 0
	for _, part := range order {
		i := strings.Index(p[at:], part)
		if i < 0 {
			t.Fatalf("prompt lacks %q after offset %d:\n%s", part, at, p)
		}
		at += i + len(part)
	}
	if !strings.HasPrefix(p, order[0]) || strings.TrimSpace(p) != p {
		t.Errorf("prompt must start with the system text and have no outer space:\n%s", p)
	}
	for _, absent := range []string{"POST-ONLY STYLE", "SECRET_HANDLER", "\n\n\n", " \n"} {
		if strings.Contains(p, absent) {
			t.Errorf("prompt contains %q:\n%s", absent, p)
		}
	}
}

func TestBuildSystemPromptGolden(t *testing.T) {
	ch := llm.Character{
		Name:               "Fozzie",
		Bio:                []string{"Aspiring comedian", "  ", "Best friends with Kermit"},
		Goals:              []string{"Make people laugh"},
		ResponseGuidelines: llm.ResponseGuidelines{UseEmojis: ptr(true)},
	}
	want := "Your name is Fozzie.\n\n" +
		"About you:\n- Aspiring comedian\n- Best friends with Kermit\n\n" +
		"Your goals:\n- Make people laugh\n\n" +
		"Response guidelines:\n- Use emojis where they fit.\n\n" +
		"Conversation context:\n- Platform: twitter"
	if got := llm.BuildSystemPrompt(ch, llm.Context{Platform: "twitter"}, llm.Recalled{}); got != want {
		t.Errorf("prompt =\n%s\n--- want\n%s", got, want)
	}
}

// TestBuildSystemPromptSections sets one member at a time: its section
// appears, and no other section does.
func TestBuildSystemPromptSections(t *testing.T) {
	headers := []string{"Your name is", "About you:", "Your background:", "Your personality:", "What you know:",
		"Topics you like", "Your goals:", "How you write:", "Response guidelines:", "Phrases in your voice:",
		"Actions you can take:", "Conversation context:"}
	cases := []struct {
		header string
		ch     llm.Character
		cx     llm.Context
		want   string
	}{
		{"", llm.Character{System: "Be brief."}, llm.Context{}, "Be brief."},
		{"Your name is", llm.Character{Name: "Dobby"}, llm.Context{}, "Your name is Dobby."},
		{"About you:", llm.Character{Bio: []string{"A free elf"}}, llm.Context{}, "- A free elf"},
		{"Your background:", llm.Character{Lore: []string{"Freed by a sock"}}, llm.Context{}, "- Freed by a sock"},
		{"Your personality:", llm.Character{Personality: llm.Personality{Tone: "warm"}}, llm.Context{}, "- Tone: warm"},
		{"Your personality:", llm.Character{Adjectives: []string{"Loyal"}}, llm.Context{}, "- Adjectives: Loyal"},
		{"What you know:", llm.Character{Knowledge: []string{"Magic"}}, llm.Context{}, "- Magic"},
		{"Topics you like", llm.Character{Topics: []string{"socks"}}, llm.Context{}, "Topics you like to talk about: socks."},
		{"Your goals:", llm.Character{Goals: []string{"Help Harry"}}, llm.Context{}, "- Help Harry"},
		{"How you write:", llm.Character{Style: llm.Style{Chat: []string{"Eager"}}}, llm.Context{}, "- Eager"},
		{"Response guidelines:", llm.Character{ResponseGuidelines: llm.ResponseGuidelines{MaxLength: ptr(100)}}, llm.Context{}, "at most 100 characters"},
		{"Response guidelines:", llm.Character{ResponseGuidelines: llm.ResponseGuidelines{IncludeLinks: ptr(false)}}, llm.Context{}, "- Do not include links."},
		{"Phrases in your voice:", llm.Character{MessageTemplates: llm.MessageTemplates{Farewell: []string{"Bye!"}}}, llm.Context{}, `- When saying goodbye: "Bye!"`},
		{"Actions you can take:", llm.Character{Actions: []llm.Action{{Name: "WAVE"}}}, llm.Context{}, "- WAVE"},
		{"Conversation context:", llm.Character{}, llm.Context{Channel: "#general"}, "- Channel: #general"},
	}
	for _, tc := range cases {
		p := llm.BuildSystemPrompt(tc.ch, tc.cx, llm.Recalled{})
		if !strings.Contains(p, tc.want) {
			t.Errorf("%q: prompt %q lacks %q", tc.header, p, tc.want)
		}
		for _, h := range headers {
			if h != tc.header && strings.Contains(p, h) {
				t.Errorf("%q: prompt %q has the empty section %q", tc.header, p, h)
			}
		}
	}
}

func TestBuildSystemPromptOmitsEmpty(t *testing.T) {
	ch := llm.Character{
		Bio: []string{"", "  "}, Topics: []string{""}, Style: llm.Style{Post: []string{"posts only"}},
		ResponseGuidelines: llm.ResponseGuidelines{MaxLength: ptr(0)},
		MessageTemplates:   llm.MessageTemplates{Greeting: []string{" "}},
		Actions:            []llm.Action{{Description: "no name"}},
	}
	if p := llm.BuildSystemPrompt(ch, llm.Context{Platform: " "}, llm.Recalled{}); p != "" {
		t.Errorf("prompt = %q, want empty", p)
	}
}

func BenchmarkBuildSystemPrompt(b *testing.B) {
	ch := fullCharacter()
	cx := llm.Context{Platform: "discord", Channel: "general"}
	b.ReportAllocs()
	for b.Loop() {
		if llm.BuildSystemPrompt(ch, cx, llm.Recalled{}) == "" {
			b.Fatal("empty prompt")
		}
	}
}
