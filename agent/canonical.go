package agent

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// The canonical form of a JSON value is how members are stored and
// compared: objects' keys sorted, numbers kept exactly as written, strings
// escaped the one way encoding/json writes them without HTML escaping, no
// insignificant space. It is what encoding/json's Encoder, with
// SetEscapeHTML(false), writes of the value decoded with UseNumber; the
// two functions here write and recognise it without reflection, so that a
// member decoded once (by the API's validator) is not decoded again to be
// stored.

// AppendCanonical appends the canonical form of v, a value as encoding/json
// decodes it into an any with UseNumber (nil, bool, string, json.Number,
// []any, map[string]any), to dst. Values of other types are written by
// encoding/json (without HTML escaping), as is a json.Number that is not
// a number, which encoding/json refuses.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return appendString(dst, v), nil
	case json.Number:
		if v == "" || !validNumber([]byte(v)) {
			return appendEncoded(dst, v)
		}
		return append(dst, v...), nil
	case []any:
		dst = append(dst, '[')
		for i, item := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendCanonical(dst, item); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendCanonical(dst, v[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return appendEncoded(dst, v)
}

// appendEncoded appends v as encoding/json writes it without HTML escaping.
func appendEncoded(dst []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// hexDigits are the digits of a \u escape, lowercase as encoding/json
// writes them.
const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it without HTML escaping: `"` and `\`, the control characters
// (\b, \f, \n, \r and \t by name, the others as \u00xx), U+2028 and U+2029;
// each byte of invalid UTF-8 becomes \ufffd.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// maxCanonicalDepth bounds the nesting IsCanonical follows, as
// encoding/json's decoder bounds it.
const maxCanonicalDepth = 10000

// IsCanonical reports whether raw is exactly one JSON value in canonical
// form, as AppendCanonical writes it of the value raw decodes to: nothing
// around it, no space, keys in increasing order without duplicates, each
// string escaped only where encoding/json escapes. It reads raw once and
// allocates nothing unless a key holds an escape.
func IsCanonical(raw []byte) bool {
	c := canonicalScan{raw: raw}
	return c.value(0) && c.i == len(raw)
}

// canonicalScan is IsCanonical's position in raw.
type canonicalScan struct {
	raw []byte
	i   int
}

func (c *canonicalScan) value(depth int) bool {
	if c.i >= len(c.raw) {
		return false
	}
	switch b := c.raw[c.i]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		_, ok := c.string()
		return ok
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	}
	return false
}

func (c *canonicalScan) literal(lit string) bool {
	if !bytes.HasPrefix(c.raw[c.i:], []byte(lit)) {
		return false
	}
	c.i += len(lit)
	return true
}

func (c *canonicalScan) array(depth int) bool {
	if depth > maxCanonicalDepth {
		return false
	}
	c.i++ // [
	if c.i < len(c.raw) && c.raw[c.i] == ']' {
		c.i++
		return true
	}
	for {
		if !c.value(depth) || c.i >= len(c.raw) {
			return false
		}
		switch c.raw[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			return true
		default:
			return false
		}
	}
}

func (c *canonicalScan) object(depth int) bool {
	if depth > maxCanonicalDepth {
		return false
	}
	c.i++ // {
	if c.i < len(c.raw) && c.raw[c.i] == '}' {
		c.i++
		return true
	}
	var prev []byte
	for n := 0; ; n++ {
		if c.i >= len(c.raw) || c.raw[c.i] != '"' {
			return false
		}
		key, ok := c.string()
		// Keys sort as the strings they decode to (a key without an
		// escape is its bytes), strictly: a duplicate is not canonical.
		if !ok || n > 0 && bytes.Compare(prev, key) >= 0 {
			return false
		}
		prev = key
		if c.i >= len(c.raw) || c.raw[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth) || c.i >= len(c.raw) {
			return false
		}
		switch c.raw[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return true
		default:
			return false
		}
	}
}

// string reads a canonical string and returns what it decodes to: its
// bytes, unless it holds an escape.
func (c *canonicalScan) string() ([]byte, bool) {
	c.i++ // "
	start, escaped := c.i, false
	for c.i < len(c.raw) {
		b := c.raw[c.i]
		switch {
		case b == '"':
			s := c.raw[start:c.i]
			c.i++
			if !escaped {
				return s, true
			}
			var out string
			if json.Unmarshal(c.raw[start-1:c.i], &out) != nil {
				return nil, false
			}
			return []byte(out), true
		case b == '\\':
			if !c.escape() {
				return nil, false
			}
			escaped = true
		case b < 0x20:
			return nil, false
		case b < utf8.RuneSelf:
			c.i++
		default:
			r, size := utf8.DecodeRune(c.raw[c.i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			c.i += size
		}
	}
	return nil, false
}

// escape reads an escape that encoding/json writes: \" \\ \b \f \n \r \t,
// \u00xx for another control character, \u2028 and \u2029.
func (c *canonicalScan) escape() bool {
	rest := c.raw[c.i:]
	if len(rest) < 2 {
		return false
	}
	switch rest[1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		c.i += 2
		return true
	case 'u':
	default:
		return false
	}
	if len(rest) < 6 {
		return false
	}
	switch u := string(rest[2:6]); {
	case u == "2028" || u == "2029":
	case u[0] == '0' && u[1] == '0' && (u[2] == '0' || u[2] == '1') && strings.IndexByte(hexDigits, u[3]) >= 0:
		switch u[2:] {
		case "08", "09", "0a", "0c", "0d": // written by name
			return false
		}
	default:
		return false
	}
	c.i += 6
	return true
}

// number reads a JSON number: any is canonical, kept as written.
func (c *canonicalScan) number() bool {
	end := c.i
	for end < len(c.raw) {
		b := c.raw[end]
		if b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E' || b >= '0' && b <= '9' {
			end++
			continue
		}
		break
	}
	if !validNumber(c.raw[c.i:end]) {
		return false
	}
	c.i = end
	return true
}

// validNumber reports whether s is a JSON number, by the grammar of RFC
// 8259.
func validNumber(s []byte) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case s[0] >= '1' && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && s[1] >= '0' && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if len(s) == 0 {
				return false
			}
		}
		for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
			s = s[1:]
		}
	}
	return len(s) == 0
}
