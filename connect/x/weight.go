package x

import (
	"regexp"
	"unicode/utf8"
)

// linkLength is what X counts for a link, whatever its length: it is
// shortened to a t.co link of that length.
const linkLength = 23

// link finds the links X shortens.
var link = regexp.MustCompile(`https?://[^\s]+`)

// weightedLength is a text's length as X counts it against its 280 limit
// (twitter-text's weighted length): a character of the Latin, Greek,
// Cyrillic, Hebrew, Arabic and other early ranges, and a few punctuation
// marks, counts 1; any other (CJK, emoji) counts 2, an emoji sequence
// (joined, with a skin tone or a variation selector) as one emoji; a link
// counts 23.
func weightedLength(text string) int {
	links := link.FindAllStringIndex(text, -1)
	return len(links)*linkLength + weightedRunes(link.ReplaceAllString(text, ""))
}

// weightedRunes counts text's characters with X's weights.
func weightedRunes(text string) int {
	n := 0
	joined := false // the last rune was a zero-width joiner inside an emoji
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case joined:
			joined = false // the emoji a joiner adds is part of the sequence
		case r == 0x200D && n > 0:
			joined = true
		case r >= 0xFE00 && r <= 0xFE0F, r >= 0x1F3FB && r <= 0x1F3FF:
			// a variation selector or a skin tone changes the emoji before it
		default:
			n += runeWeight(r)
		}
	}
	return n
}

// runeWeight is X's weight of one character: 1 in the ranges of
// twitter-text's configuration, 2 elsewhere.
func runeWeight(r rune) int {
	switch {
	case r <= 0x10FF, r >= 0x2000 && r <= 0x200D, r >= 0x2010 && r <= 0x201F, r >= 0x2032 && r <= 0x2037:
		return 1
	}
	return 2
}
