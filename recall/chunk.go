package recall

import (
	"strings"
	"unicode/utf8"
)

// ChunkSize is about how many characters a knowledge chunk holds.
const ChunkSize = 1000

// Chunk cuts a document into chunks of about size characters on paragraph
// boundaries (blank lines): paragraphs are packed together while they fit,
// and a paragraph longer than size is cut at line, then word, boundaries.
func Chunk(text string, size int) []string {
	var chunks []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			chunks = append(chunks, s)
		}
		cur.Reset()
	}
	for _, para := range paragraphs(text) {
		for _, piece := range cutLong(para, size) {
			if cur.Len() > 0 && utf8.RuneCountInString(cur.String())+2+utf8.RuneCountInString(piece) > size {
				flush()
			}
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
			}
			cur.WriteString(piece)
		}
	}
	flush()
	return chunks
}

// paragraphs splits text at blank lines, dropping empty paragraphs.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// cutLong cuts a paragraph longer than size into pieces of at most size
// characters, at the last newline or space before the limit when there is
// one.
func cutLong(p string, size int) []string {
	var out []string
	for utf8.RuneCountInString(p) > size {
		head := string([]rune(p)[:size])
		cut := strings.LastIndexAny(head, "\n")
		if cut < size/2 {
			cut = strings.LastIndexAny(head, " \t")
		}
		if cut <= 0 {
			cut = len(head)
		}
		out = append(out, strings.TrimSpace(p[:cut]))
		p = strings.TrimSpace(p[cut:])
	}
	if p != "" {
		out = append(out, p)
	}
	return out
}
