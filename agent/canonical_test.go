package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// referenceCanonical is the canonical form by encoding/json alone: the
// value decoded with UseNumber, encoded without HTML escaping. ok is false
// when raw is not exactly one JSON value.
func referenceCanonical(raw []byte) (out []byte, v any, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), v, true
}

// canonicalSeeds are JSON texts (and non-JSON ones) whose canonical forms
// exercise every escape, number shape and key order.
var canonicalSeeds = []string{
	`{"b":1,"a":{"d":[1,2],"c":null}}`, `{"a":{"c":null,"d":[1,2]},"b":1}`,
	" { \"a\" :\n true } ", `[1.0, 1e2, 12345678901234567890123, -0.5, 0, -0, 1E+2, 1e-7]`,
	`"<b>&amp;"`, `"\u00e9\u003c"`, `{"a":1,"a":2}`, `[]`, `{}`, `""`, `null`, `true`, `false`,
	`"\b\f\n\r\t\u0000\u001f\u007f\u0020\"\\\/"`, `"\u2028\u2029 \u2027"`, `"\ud800"`, `"\ud83d\ude00"`,
	"\"\xff\xfe\"", "\"\xed\xa0\x80\"", "\"é\u2028\"", `"\ufffd"`, "\"\uFFFD\"", `"\U00e9"`, `"\u00E9"`,
	`{"\u0000":1,"a":2}`, `{"é":1,"e":2,"z":3}`, `{"b":1,"a":2}`, `{"a":1,"b":2,"b":3}`,
	`{"a\nb":1,"a":2}`, `{"a":1,"a\nb":2}`, `{"a\"":1,"a":0}`, `{"":1}`,
	`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `1.5e-3`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a"}`, `{1:2}`,
	`[1 ]`, ` 1`, `1 `, `[[[[]]]]`, `{"a":[{"b":{"c":[true,false,null]}}]}`, `"abc`, `[`, `{`, `nul`, `tru`,
	`1 2`, `{} x`, `"\x"`, `"\u12"`, `"\u123g"`,
}

// TestCanonicalMatchesEncodingJSON: AppendCanonical writes what
// encoding/json writes, and IsCanonical holds exactly for its output.
func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	for _, s := range canonicalSeeds {
		checkCanonical(t, []byte(s))
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkCanonical(t, raw) })
}

func checkCanonical(t *testing.T, raw []byte) {
	t.Helper()
	want, v, ok := referenceCanonical(raw)
	if !ok {
		if IsCanonical(raw) {
			t.Errorf("IsCanonical(%q) of what is not one JSON value", raw)
		}
		return
	}
	got, err := AppendCanonical(nil, v)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("AppendCanonical(%q) = %q, %v; encoding/json writes %q", raw, got, err, want)
	}
	if !IsCanonical(want) {
		t.Errorf("IsCanonical(%q) is false of a canonical form", want)
	}
	if IsCanonical(raw) != bytes.Equal(raw, want) {
		t.Errorf("IsCanonical(%q) = %v, but its canonical form is %q", raw, IsCanonical(raw), want)
	}
}

// TestAppendCanonicalOtherTypes: values that decoding never makes are
// written by encoding/json.
func TestAppendCanonicalOtherTypes(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{map[string]any{"b": 1.5, "a": []string{"<x>"}}, `{"a":["<x>"],"b":1.5}`},
		{json.Number(""), `0`},
		{float64(3), `3`},
	} {
		got, err := AppendCanonical(nil, tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("AppendCanonical(%#v) = %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
	if _, err := AppendCanonical(nil, json.Number("1x")); err == nil {
		t.Error("AppendCanonical wrote an invalid json.Number")
	}
}

// TestIsCanonicalDeep: nesting past encoding/json's bound is not
// canonical (the decoder refuses it).
func TestIsCanonicalDeep(t *testing.T) {
	for _, depth := range []int{maxCanonicalDepth, maxCanonicalDepth + 1} {
		deep := append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
		checkCanonical(t, deep)
	}
}

func BenchmarkIsCanonical(b *testing.B) {
	raw, _, _ := referenceCanonical([]byte(`{"name":"Fozzie","bio":["Aspiring comedian with a heart of gold","Performs at the El Sleazo Cafe every night"],` +
		`"personality":{"traits":["optimistic","loyal","persistent"],"tone":"cheerful"},"modelSettings":{"temperature":0.7,"topP":0.9,"maxTokens":300}}`))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if !IsCanonical(raw) {
			b.Fatal("not canonical")
		}
	}
}
