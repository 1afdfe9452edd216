package llm_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/llm"
)

func TestShorten(t *testing.T) {
	cases := []struct {
		text string
		n    int
		want string
	}{
		{"  short  ", 10, "short"},
		{"one two three", 13, "one two three"},
		{"one two three", 12, "one two"},
		{"one two three", 8, "one two"},
		{"one two three", 7, "one two"},
		{"one two three", 6, "one"},
		{"héllo wörld", 10, "héllo"},
		{"unbreakable", 5, "unbre"},
		{"a b", 0, "a b"},
	}
	for _, c := range cases {
		if got := llm.Shorten(c.text, c.n); got != c.want {
			t.Errorf("Shorten(%q, %d) = %q; want %q", c.text, c.n, got, c.want)
		}
	}
	long := strings.Repeat("word ", 100)
	if got := llm.Shorten(long, 280); utf8.RuneCountInString(got) > 280 || strings.HasSuffix(got, "wor") || !strings.HasSuffix(got, "word") {
		t.Errorf("Shorten of a long text gave %d characters ending %q", utf8.RuneCountInString(got), got[len(got)-5:])
	}
}

func TestPostPrompt(t *testing.T) {
	ch := llm.Character{Topics: []string{"tea", "gardens"}, Adjectives: []string{"dry"},
		Style:        llm.Style{All: []string{"short sentences"}, Chat: []string{"chat only"}, Post: []string{"no hashtags"}},
		PostExamples: []string{"The roses are in."}}
	p := llm.PostPrompt(ch, 280)
	for _, want := range []string{"at most 280 characters", "tea, gardens", "dry", "- short sentences", "- no hashtags", "- The roses are in."} {
		if !strings.Contains(p, want) {
			t.Errorf("post prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "chat only") {
		t.Errorf("post prompt has the chat style:\n%s", p)
	}
	if p := llm.PostPrompt(llm.Character{}, 280); strings.Contains(p, "\n") {
		t.Errorf("empty character's post prompt has sections:\n%s", p)
	}
}
