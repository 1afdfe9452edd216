package connect

import "unicode/utf16"

// Split cuts text into parts of at most limit UTF-16 code units, at a line
// break or space in the second half of a part when there is one, never
// inside a surrogate pair. Telegram counts a message's length in UTF-16
// code units and Discord in characters, so parts cut this way fit both.
func Split(text string, limit int) []string {
	var parts []string
	u := utf16.Encode([]rune(text))
	for len(u) > limit {
		cut := limit
		if utf16.IsSurrogate(rune(u[cut-1])) && u[cut-1] < 0xdc00 {
			cut-- // keep a high surrogate with its low half
		}
		for i := cut; i > limit/2; i-- {
			if u[i-1] == '\n' || u[i-1] == ' ' {
				cut = i
				break
			}
		}
		parts = append(parts, string(utf16.Decode(u[:cut])))
		u = u[cut:]
	}
	if len(u) > 0 {
		parts = append(parts, string(utf16.Decode(u)))
	}
	return parts
}
