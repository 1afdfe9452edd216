package domain

import (
	"strings"
	"testing"
)

func TestConversationTitle(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"short":                        "short",
		strings.Repeat("a", 80):        strings.Repeat("a", 80),
		strings.Repeat("a", 81):        strings.Repeat("a", 80),
		strings.Repeat("日", 100):       strings.Repeat("日", 80),
		strings.Repeat("é", 79) + "xy": strings.Repeat("é", 79) + "x",
	} {
		if got := ConversationTitle(in); got != want {
			t.Errorf("ConversationTitle(%q) = %q, want %q", in, got, want)
		}
	}
}
