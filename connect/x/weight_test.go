package x

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/llm"
)

// TestWeightedLength: X's count: Latin 1, CJK and emoji 2, an emoji
// sequence as one emoji, a link 23 whatever its length.
func TestWeightedLength(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"hello", 5},
		{"café – “ok”", 11},
		{"日本語", 6},
		{"👋", 2},
		{"👋🏽", 2},
		{"👨‍👩‍👧", 2},
		{"❤️", 2},
		{"see https://example.com/a/very/long/path?x=1 now", 4 + 23 + 4},
	} {
		if got := weightedLength(tc.text); got != tc.want {
			t.Errorf("weightedLength(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// TestRepliesFitX: a Japanese reply that X would refuse and a Chinese one
// without spaces are cut to what X accepts, never to nothing.
func TestRepliesFitX(t *testing.T) {
	ja := strings.Repeat("今日は いい 天気 ですね。", 30)
	zh := strings.Repeat("今天天气很好我们去公园散步吧", 30)
	for name, text := range map[string]string{"ja": ja, "zh": zh} {
		got := llm.ShortenBy(text, maxPost, weightedLength)
		if got == "" || weightedLength(got) > maxPost || !strings.HasPrefix(text, got) || !utf8.ValidString(got) {
			t.Errorf("%s: cut to %q (weighted %d)", name, got, weightedLength(got))
		}
		if name == "zh" && utf8.RuneCountInString(got) != maxPost/2 {
			t.Errorf("zh: %d characters kept, want %d", utf8.RuneCountInString(got), maxPost/2)
		}
	}
}
