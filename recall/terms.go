package recall

import (
	"strings"
	"unicode"
)

// maxTerms bounds the terms of a query, so a long message makes a bounded
// full-text query.
const maxTerms = 32

// stopWords are left out of the terms: they match nearly everything and
// rank nothing.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about after all also am an and any are as at be been but by can could
		did do does for from had has have he her him his how i if in into is it its just me more my no not of on
		or our she so some than that the their them then there these they this to too us was we were what when
		where which who why will with would you your yours`) {
		m[w] = true
	}
	return m
}()

// Terms are the search terms of text: its words (runs of letters and
// digits) lowercased, without stop words, each once, in order of first
// use.
func Terms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range splitWords(text) {
		if stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// splitWords is text's words, lowercased.
func splitWords(text string) []string { return strings.FieldsFunc(strings.ToLower(text), notWordRune) }

// notWordRune reports whether r separates words.
func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// indexTerms is the terms column stored with a text: its terms joined by
// spaces.
func indexTerms(text string) string { return strings.Join(Terms(text), " ") }

// queryTerms are the terms a query searches, at most maxTerms.
func queryTerms(text string) []string {
	t := Terms(text)
	return t[:min(len(t), maxTerms)]
}
