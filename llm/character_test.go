package llm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/llm"
)

// fixtures are real ElizaOS character files (testdata/characters/README.md).
const fixtures = "../testdata/characters"

// readFixture returns a character file as raw JSON.
func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return raw
}

func TestDecodeFixtures(t *testing.T) {
	names := []string{"alfred", "cosmosHelper", "dobby", "fozzie", "omniflix", "sbf"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			raw := readFixture(t, name+".character.json")
			var ch llm.Character
			if err := json.Unmarshal(raw, &ch); err != nil {
				t.Fatalf("decode: %v", err)
			}
			var generic struct {
				Name      string
				Bio       []string
				Knowledge []string
				Style     struct{ All, Chat []string }
			}
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatal(err)
			}
			if ch.Name != generic.Name || !reflect.DeepEqual(ch.Bio, generic.Bio) || !reflect.DeepEqual(ch.Knowledge, generic.Knowledge) ||
				!reflect.DeepEqual(ch.Style.All, generic.Style.All) || !reflect.DeepEqual(ch.Style.Chat, generic.Style.Chat) {
				t.Errorf("decoded %+v, want the file's name, bio, knowledge and style", ch)
			}
			p := llm.BuildSystemPrompt(ch, llm.Context{}, llm.Recalled{})
			if !strings.Contains(p, "Your name is "+ch.Name+".") || !strings.Contains(p, ch.Bio[0]) {
				t.Errorf("prompt lacks the name or bio:\n%s", p)
			}
			if ch.HistoryWindow() != llm.DefaultHistoryWindow || ch.MaxReplyChars() != 0 || ch.Options() != (llm.Options{}) {
				t.Errorf("defaults: window %d, cap %d, options %+v", ch.HistoryWindow(), ch.MaxReplyChars(), ch.Options())
			}
		})
	}
}

func TestDecodeAlfredDetails(t *testing.T) {
	var ch llm.Character
	if err := json.Unmarshal(readFixture(t, "alfred.character.json"), &ch); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ch.System, "You are Alfred Pennyworth") || len(ch.Lore) == 0 || len(ch.Topics) == 0 ||
		len(ch.Adjectives) == 0 || len(ch.Style.Post) == 0 {
		t.Errorf("alfred decoded as %+v", ch)
	}
	if p := llm.BuildSystemPrompt(ch, llm.Context{}, llm.Recalled{}); !strings.HasPrefix(p, ch.System) {
		t.Errorf("prompt does not start with the system text:\n%s", p)
	}
}

func TestDecodeBioAsString(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(readFixture(t, "fozzie.character.json"), &doc); err != nil {
		t.Fatal(err)
	}
	doc["bio"] = "Fozzie is a bear who tells jokes."
	raw, _ := json.Marshal(doc)
	var ch llm.Character
	if err := json.Unmarshal(raw, &ch); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ch.Bio, []string{"Fozzie is a bear who tells jokes."}) || ch.Name != "fozzie" || len(ch.Lore) == 0 {
		t.Errorf("decoded bio %q, name %q, lore %q", ch.Bio, ch.Name, ch.Lore)
	}
}

func TestDecodeCharacterFileMembers(t *testing.T) {
	raw := `{
		"name": "Helper", "bio": ["Helps"], "goals": ["Assist"],
		"personality": {"traits": ["calm"], "style": "concise", "tone": "friendly", "adjectives": ["kind"]},
		"actions": [{"name": "LOOKUP", "description": "Looks things up", "examples": ["find x"], "handler": "lookup"}],
		"messageTemplates": {"greeting": ["Hi!"], "farewell": ["Bye!"], "uncertainty": ["Not sure."]},
		"responseGuidelines": {"maxLength": 280, "preferredLength": 140, "useEmojis": false, "useHashtags": true, "mentionUsers": true, "includeLinks": false},
		"memory": {"enabled": true, "shortTermContext": 8, "longTermEnabled": true, "rememberUsers": true, "rememberConversations": false},
		"modelSettings": {"temperature": 0.7, "maxTokens": 500, "topP": 0.9, "frequencyPenalty": 0.1, "presencePenalty": 0.2}
	}`
	var ch llm.Character
	if err := json.Unmarshal([]byte(raw), &ch); err != nil {
		t.Fatal(err)
	}
	want := llm.Character{
		Name: "Helper", Bio: []string{"Helps"}, Goals: []string{"Assist"},
		Personality:      llm.Personality{Traits: []string{"calm"}, Style: "concise", Tone: "friendly", Adjectives: []string{"kind"}},
		Actions:          []llm.Action{{Name: "LOOKUP", Description: "Looks things up", Examples: []string{"find x"}, Handler: "lookup"}},
		MessageTemplates: llm.MessageTemplates{Greeting: []string{"Hi!"}, Farewell: []string{"Bye!"}, Uncertainty: []string{"Not sure."}},
		ResponseGuidelines: llm.ResponseGuidelines{MaxLength: ptr(280), PreferredLength: ptr(140), UseEmojis: ptr(false),
			UseHashtags: ptr(true), MentionUsers: ptr(true), IncludeLinks: ptr(false)},
		Memory:        llm.Memory{Enabled: ptr(true), ShortTermContext: ptr(8)},
		ModelSettings: llm.ModelSettings{Temperature: ptr(0.7), MaxTokens: ptr(500), TopP: ptr(0.9), FrequencyPenalty: ptr(0.1), PresencePenalty: ptr(0.2)},
	}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", ch, want)
	}
	if ch.HistoryWindow() != 8 || ch.MaxReplyChars() != 280 {
		t.Errorf("window %d, cap %d", ch.HistoryWindow(), ch.MaxReplyChars())
	}
	o := ch.Options()
	if *o.Temperature != 0.7 || *o.MaxTokens != 500 || *o.TopP != 0.9 || *o.FrequencyPenalty != 0.1 || *o.PresencePenalty != 0.2 {
		t.Errorf("options %+v", o)
	}
}

// TestDecodeLenient gives odd shapes: each member that does not fit is
// ignored and the rest is decoded.
func TestDecodeLenient(t *testing.T) {
	raw := `{
		"name": "Odd", "system": 7, "bio": 42, "goals": null, "topics": [null], "lore": ["a", 1, null, "b"], "knowledge": {"x": 1},
		"personality": "nice", "style": {"all": "one", "chat": [true]},
		"responseGuidelines": {"maxLength": "long", "preferredLength": 12.5, "useEmojis": true, "useHashtags": "no"},
		"memory": {"enabled": "yes", "shortTermContext": 5.0},
		"modelSettings": {"temperature": "hot", "maxTokens": 100, "topP": 0.9, "frequencyPenalty": null},
		"messageTemplates": [1, 2],
		"actions": [1, "x", {"name": "A", "examples": "ex"}, {"handler": "only"}],
		"unknownMember": {"deep": [1, 2]}
	}`
	var ch llm.Character
	if err := json.Unmarshal([]byte(raw), &ch); err != nil {
		t.Fatal(err)
	}
	want := llm.Character{
		Name: "Odd", Lore: []string{"a", "b"}, Topics: []string{},
		Style:              llm.Style{All: []string{"one"}, Chat: []string{}},
		ResponseGuidelines: llm.ResponseGuidelines{UseEmojis: ptr(true)},
		Memory:             llm.Memory{ShortTermContext: ptr(5)},
		ModelSettings:      llm.ModelSettings{MaxTokens: ptr(100), TopP: ptr(0.9)},
		Actions:            []llm.Action{{Name: "A", Examples: []string{"ex"}}},
	}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", ch, want)
	}
}

func TestDecodeNotAnObject(t *testing.T) {
	var ch llm.Character
	if err := json.Unmarshal([]byte(`["not", "a", "character"]`), &ch); err == nil {
		t.Error("decoding an array succeeded")
	}
	if err := json.Unmarshal([]byte(`null`), &ch); err != nil {
		t.Errorf("decoding null: %v", err)
	}
}

func TestHistoryWindow(t *testing.T) {
	cases := []struct {
		mem  llm.Memory
		want int
	}{
		{llm.Memory{}, 20},
		{llm.Memory{Enabled: ptr(true)}, 20},
		{llm.Memory{Enabled: ptr(false), ShortTermContext: ptr(10)}, 0},
		{llm.Memory{ShortTermContext: ptr(5)}, 5},
		{llm.Memory{ShortTermContext: ptr(0)}, 0},
		{llm.Memory{ShortTermContext: ptr(-3)}, 20},
	}
	for _, tc := range cases {
		if got := (llm.Character{Memory: tc.mem}).HistoryWindow(); got != tc.want {
			t.Errorf("HistoryWindow(%+v) = %d, want %d", tc.mem, got, tc.want)
		}
	}
}

func TestOptionsAndCap(t *testing.T) {
	ch := llm.Character{
		ModelSettings:      llm.ModelSettings{MaxTokens: ptr(0), Temperature: ptr(0.0)},
		ResponseGuidelines: llm.ResponseGuidelines{MaxLength: ptr(-1)},
	}
	o := ch.Options()
	if o.MaxTokens != nil || o.Temperature == nil || *o.Temperature != 0 || o.TopP != nil {
		t.Errorf("Options() = %+v: a zero maxTokens is unset, a zero temperature is set", o)
	}
	if ch.MaxReplyChars() != 0 {
		t.Errorf("MaxReplyChars() = %d, want 0 for a negative maxLength", ch.MaxReplyChars())
	}
	*o.Temperature = 1
	if *ch.ModelSettings.Temperature != 0 {
		t.Error("Options shares memory with the character")
	}
}

// TestFixtureKeepsItsVoice: a real character's example conversations reach
// its system prompt, placeholders filled.
func TestFixtureKeepsItsVoice(t *testing.T) {
	var ch llm.Character
	if err := json.Unmarshal(readFixture(t, "fozzie.character.json"), &ch); err != nil {
		t.Fatal(err)
	}
	system := llm.BuildSystemPrompt(ch, llm.Context{}, llm.Recalled{})
	if !strings.Contains(system, "Example conversations") || !strings.Contains(system, "Wocka") ||
		!strings.Contains(system, "user: Hey Fozzie, tell me a joke!") || strings.Contains(system, "{{user1}}") {
		t.Errorf("system prompt lacks fozzie's examples:\n%s", system)
	}
}
