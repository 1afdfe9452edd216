package domain

import "unicode/utf8"

// CleanText reports whether s is valid UTF-8 without control characters:
// what any id or name taken from a client must be before it reaches a
// query, since PostgreSQL refuses such bytes where SQLite finds nothing.
func CleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
