package llm

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PostPrompt is the message asking a character's model for one original
// post of at most maxChars characters: the character's postExamples,
// topics, post style (style.all and style.post) and adjectives guide it.
// The system prompt (BuildSystemPrompt) already says who the character is.
func PostPrompt(ch Character, maxChars int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write one new, original post for your social media feed, at most %d characters. "+
		"Answer with the post's text only: no quotes, no preamble, no explanation.", maxChars)
	if topics := clean(ch.Topics); topics != nil {
		fmt.Fprintf(&b, "\nPick one of your topics: %s.", strings.Join(topics, ", "))
	}
	if adj := clean(append(append([]string{}, ch.Adjectives...), ch.Personality.Adjectives...)); adj != nil {
		fmt.Fprintf(&b, "\nSound %s.", strings.Join(adj, ", "))
	}
	list := func(title string, items []string) {
		if items = clean(items); items != nil {
			b.WriteString("\n" + title + ":\n- " + strings.Join(items, "\n- "))
		}
	}
	list("How you write posts", append(append([]string{}, ch.Style.All...), ch.Style.Post...))
	list("Posts you have written before (do not repeat them)", ch.PostExamples)
	return b.String()
}

// Shorten returns text, trimmed, cut to at most n characters (runes) as
// CutAtWord cuts. n <= 0 means no limit.
func Shorten(text string, n int) string {
	return CutAtWord(strings.TrimSpace(text), n)
}

// CutAtWord cuts text to at most n characters (runes) at the last word
// boundary before the limit, so no word is cut in half and nothing is
// appended; trailing space is dropped. Only a first word longer than n,
// which no boundary can save, is cut inside. n <= 0 or a text within n
// leaves text as it is. Every reply cap (responseGuidelines.maxLength, a
// platform's message limit) cuts with it, streamed or not.
func CutAtWord(text string, n int) string {
	if n <= 0 || utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)
	cut := n
	for cut > 0 && !unicode.IsSpace(r[cut]) {
		cut-- // r[cut] is the first rune left out: end before its word
	}
	head := strings.TrimRightFunc(string(r[:cut]), unicode.IsSpace)
	if head == "" {
		return string(r[:n])
	}
	return head
}
