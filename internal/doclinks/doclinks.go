// Package doclinks checks the relative links of Markdown documents: a link
// to a file must name a file or directory that exists, and a link to an
// anchor (#name, or other.md#name) must name a heading of that document, by
// the slug GitHub gives the heading. External links (http:, https:,
// mailto:, ...) are not followed. Its test runs over README.md and docs/,
// so a guide that loses a section its links point to fails the build.
package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Problem is one link that does not resolve.
type Problem struct {
	File   string // the document, as given to Check
	Line   int    // 1-based line of the link's target
	Target string // the link's target as written
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Target, p.Reason)
}

// Link is one link of a document.
type Link struct {
	Line   int
	Target string
}

// Check reads each document (paths relative to root, or absolute) and
// returns every link that does not resolve, in document order.
func Check(root string, docs ...string) ([]Problem, error) {
	anchors := map[string]map[string]bool{} // absolute path -> slugs
	slugsOf := func(abs string) (map[string]bool, error) {
		if s, ok := anchors[abs]; ok {
			return s, nil
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		s := Anchors(string(b))
		anchors[abs] = s
		return s, nil
	}
	var problems []Problem
	for _, doc := range docs {
		abs := doc
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, doc)
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		for _, l := range Links(string(b)) {
			if reason := resolve(root, abs, l.Target, slugsOf); reason != "" {
				problems = append(problems, Problem{File: doc, Line: l.Line, Target: l.Target, Reason: reason})
			}
		}
	}
	return problems, nil
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// resolve answers why target, a link in the document at abs, does not
// resolve, or "" when it does.
func resolve(root, abs, target string, slugsOf func(string) (map[string]bool, error)) string {
	if target == "" {
		return "an empty link"
	}
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // external: not fetched
	}
	path, fragment, _ := strings.Cut(target, "#")
	path, _, _ = strings.Cut(path, "?")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	file := abs
	if path != "" {
		if strings.HasPrefix(path, "/") {
			file = filepath.Join(root, filepath.FromSlash(path)) // GitHub: from the repository's root
		} else {
			file = filepath.Join(filepath.Dir(abs), filepath.FromSlash(path))
		}
		info, err := os.Stat(file)
		if err != nil {
			return "no such file or directory"
		}
		if info.IsDir() {
			if fragment != "" {
				return "an anchor in a directory"
			}
			return ""
		}
	}
	if fragment == "" {
		return ""
	}
	if !strings.EqualFold(filepath.Ext(file), ".md") {
		return "" // anchors of other files (#L10 of source) are not checked
	}
	slugs, err := slugsOf(file)
	if err != nil {
		return err.Error()
	}
	if f, err := url.PathUnescape(fragment); err == nil {
		fragment = f
	}
	if !slugs[strings.ToLower(fragment)] {
		return "no heading with this anchor in " + filepath.Base(file)
	}
	return ""
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional title; the text may span lines and hold one level of
	// brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	// refDefinition matches a link reference definition, [label]: target.
	refDefinition = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)`)
	// htmlLink matches href="..." and src="..." of raw HTML.
	htmlLink = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*"([^"]*)"`)
)

// Links returns the links of a Markdown document, outside code blocks and
// code spans, in order.
func Links(doc string) []Link {
	text := prose(doc)
	var links []Link
	add := func(at int, target string) {
		target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
		links = append(links, Link{Line: 1 + strings.Count(text[:at], "\n"), Target: target})
	}
	type match struct{ at, end int }
	var found []match
	for _, re := range []*regexp.Regexp{inlineLink, refDefinition, htmlLink} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			found = append(found, match{m[2], m[3]})
		}
	}
	// document order
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && found[j].at < found[j-1].at; j-- {
			found[j], found[j-1] = found[j-1], found[j]
		}
	}
	for _, m := range found {
		add(m.at, text[m.at:m.end])
	}
	return links
}

// prose returns doc with fenced code blocks, code spans and HTML comments
// blanked out (their newlines kept, so offsets still give lines).
func prose(doc string) string {
	return blankComments(blankCodeSpans(blankFences(doc)))
}

// blankFences returns doc with its fenced code blocks blanked out. A fence
// may be indented as far as it likes, since one inside a list item is
// indented with the item's text.
func blankFences(doc string) string {
	lines := strings.SplitAfter(doc, "\n")
	var b strings.Builder
	fence := ""
	for _, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(strings.TrimRight(trimmed, " \t\r\n"), fence[:1]) == "" {
				fence = ""
			}
			b.WriteString(blank(line))
			continue
		}
		if f := fenceOf(trimmed); f != "" {
			fence = f
			b.WriteString(blank(line))
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// fenceOf returns the opening fence (``` or ~~~, or longer) of a line, or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := 0
		for n < len(line) && line[n] == c[0] {
			n++
		}
		if n >= 3 {
			if c == "`" && strings.Contains(line[n:], "`") {
				return "" // a code span, not a fence
			}
			return line[:n]
		}
	}
	return ""
}

func blank(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return ' '
	}, s)
}

// blankCodeSpans blanks the content of each code span: a run of n
// backticks up to the next run of exactly n.
func blankCodeSpans(s string) string {
	b := []byte(s)
	run := func(i int) int {
		j := i
		for j < len(b) && b[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(i)
		closeAt := -1
		for j := i + n; j < len(b); {
			if b[j] == '`' {
				m := run(j)
				if m == n {
					closeAt = j
					break
				}
				j += m
				continue
			}
			j++
		}
		if closeAt < 0 {
			i += n
			continue
		}
		for k := i + n; k < closeAt; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = closeAt + n
	}
	return string(b)
}

func blankComments(s string) string {
	for {
		start := strings.Index(s, "<!--")
		if start < 0 {
			return s
		}
		end := strings.Index(s[start:], "-->")
		if end < 0 {
			return s
		}
		end += start + len("-->")
		s = s[:start] + blank(s[start:end]) + s[end:]
	}
}

var (
	atxHeading   = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextUnder  = regexp.MustCompile(`^ {0,3}(?:=+|-+)[ \t]*$`)
	htmlAnchor   = regexp.MustCompile(`(?i)<a\s+[^>]*\b(?:id|name)\s*=\s*"([^"]+)"`)
	markupLink   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	markupTag    = regexp.MustCompile(`<[^>]+>`)
	markupSymbol = strings.NewReplacer("`", "", "*", "")
)

// Anchors returns the anchors a Markdown document offers: the slug of
// each heading as GitHub makes it (duplicates numbered -1, -2, ...), and
// the id or name of each HTML <a>.
func Anchors(doc string) map[string]bool {
	slugs := map[string]bool{}
	seen := map[string]int{}
	addHeading := func(text string) {
		base := Slug(text)
		s := base
		for n := seen[base]; ; n++ {
			if n > 0 {
				s = fmt.Sprintf("%s-%d", base, n)
			}
			if !slugs[s] {
				seen[base] = n + 1
				break
			}
		}
		slugs[s] = true
	}
	lines := strings.Split(blankComments(blankFences(doc)), "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, "\r")
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			addHeading(m[2])
			continue
		}
		if i > 0 && setextUnder.MatchString(line) {
			prev := strings.TrimSpace(lines[i-1])
			if prev != "" && atxHeading.FindStringSubmatch(prev) == nil && !strings.HasPrefix(prev, "|") &&
				!strings.HasPrefix(prev, "- ") && !strings.HasPrefix(prev, "* ") {
				addHeading(prev)
			}
		}
	}
	for _, m := range htmlAnchor.FindAllStringSubmatch(blankFences(doc), -1) {
		slugs[strings.ToLower(m[1])] = true
	}
	return slugs
}

// Slug is GitHub's anchor for a heading's text: its rendered text
// lowercased, every character but letters, digits, marks, '-', '_' and
// spaces dropped, and each space made '-'.
func Slug(heading string) string {
	heading = markupLink.ReplaceAllString(heading, "$1")
	heading = markupTag.ReplaceAllString(heading, "")
	heading = markupSymbol.Replace(heading)
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
