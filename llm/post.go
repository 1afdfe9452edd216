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
	return ShortenBy(text, n, nil)
}

// ShortenBy is Shorten with the length measured by length, as a platform
// counts it (X weighs CJK and emoji double); nil counts characters.
func ShortenBy(text string, n int, length func(string) int) string {
	return CutAtWordBy(strings.TrimSpace(text), n, length)
}

// CutAtWord cuts text to at most n characters (runes) at the last word
// boundary before the limit, so no word is cut in half and nothing is
// appended; trailing space is dropped. Only a first word longer than n,
// which no boundary can save, is cut inside, and then not inside a
// character made of several code points (an emoji sequence, a letter with
// its accents) unless that character alone is longer than n. n <= 0 or a text within n leaves text as it is. Every
// reply cap (responseGuidelines.maxLength, a platform's message limit)
// cuts with it, streamed or not.
func CutAtWord(text string, n int) string { return CutAtWordBy(text, n, nil) }

// CutAtWordBy is CutAtWord with the length measured by length; nil counts
// characters.
func CutAtWordBy(text string, n int, length func(string) int) string {
	if length == nil {
		length = utf8.RuneCountInString
	}
	if n <= 0 || length(text) <= n {
		return text
	}
	r := []rune(text)
	fit := fitting(r, n, length) // r[:fit] is the longest prefix within n
	cut := fit
	for cut > 0 && !unicode.IsSpace(r[cut]) {
		cut-- // r[cut] is the first rune left out: end before its word
	}
	if head := strings.TrimRightFunc(string(r[:cut]), unicode.IsSpace); head != "" {
		return head
	}
	whole := fit
	for whole > 0 && continues(r, whole) {
		whole--
	}
	if whole == 0 { // one character longer than n: its first part, rather than nothing
		whole = fit
		for whole > 1 && r[whole-1] == zeroWidthJoiner {
			whole--
		}
	}
	return string(r[:whole])
}

// fitting is the largest k whose r[:k] measures at most n; lengths grow
// with the prefix, so a binary search finds it.
func fitting(r []rune, n int, length func(string) int) int {
	lo, hi := 0, len(r) // r[:lo] fits, r[:hi+1] does not (r[:len] does not)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if length(string(r[:mid])) <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// continues reports whether r[i] belongs to the character before it: a
// combining mark, a variation selector, an emoji skin tone, a zero-width
// joiner or what one joins.
func continues(r []rune, i int) bool {
	c := r[i]
	return unicode.In(c, unicode.Mn, unicode.Me) || c == zeroWidthJoiner || (c >= 0xFE00 && c <= 0xFE0F) ||
		(c >= 0x1F3FB && c <= 0x1F3FF) || (i > 0 && r[i-1] == zeroWidthJoiner)
}

// zeroWidthJoiner joins the emoji of a sequence (a family, a profession).
const zeroWidthJoiner = '\u200d'
