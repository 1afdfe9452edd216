package recall

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTerms: words lowercased, stop words and repeats dropped, letters of
// any script kept, punctuation splitting.
func TestTerms(t *testing.T) {
	got := Terms("My name is Ann, and ANN likes Rust-lang & café; the 2nd of May.")
	want := []string{"name", "ann", "likes", "rust", "lang", "café", "2nd", "may"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Terms = %q, want %q", got, want)
	}
	if got := queryTerms(strings.Repeat("word ", 3) + strings.Join(strings.Fields(strings.Repeat("x y z ", 20)), "")); len(got) > maxTerms {
		t.Errorf("%d query terms", len(got))
	}
}

// TestChunk: paragraphs are packed up to the size, never split inside
// unless longer than it, and no text is lost.
func TestChunk(t *testing.T) {
	para := func(word string, n int) string { return strings.TrimSpace(strings.Repeat(word+" ", n)) }
	doc := para("alpha", 50) + "\n\n" + para("beta", 50) + "\n\r\n\n" + para("gamma", 400) + "\n\n" + para("delta", 10)
	chunks := Chunk(doc, 1000)
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > 1000 || n == 0 {
			t.Errorf("chunk %d has %d characters", i, n)
		}
	}
	if !strings.Contains(chunks[0], "alpha") || !strings.Contains(chunks[0], "beta") {
		t.Errorf("the two short paragraphs are not packed together: %q", chunks[0][:40])
	}
	if strings.Count(strings.Join(chunks, " "), "gamma") != 400 || !strings.HasSuffix(chunks[len(chunks)-1], "delta") {
		t.Errorf("text lost: %d chunks", len(chunks))
	}
	for _, c := range chunks {
		if strings.HasSuffix(c, "gam") || strings.HasPrefix(c, "ma ") {
			t.Errorf("a word was cut: %q", c)
		}
	}
}

// TestBM25Ranks: a text sharing the rarer query term ranks first; texts
// sharing none are left out.
func TestBM25Ranks(t *testing.T) {
	texts := []string{"the weather is nice", "Ann is learning Rust", "Rust and Go and Rust again", "Ann likes tea"}
	scores := bm25(Terms("what does Ann learn in Rust"), texts, 10)
	idx := top(scores, 5, true)
	if len(idx) != 3 || idx[0] != 1 {
		t.Errorf("ranking %v (scores %v), want text 1 first and text 0 out", idx, scores)
	}
}

// TestCosine: the dot product of unit vectors is their cosine: parallel
// vectors score 1, orthogonal 0, mismatched lengths 0.
func TestCosine(t *testing.T) {
	cos := func(a, b []float32) float64 { return dot(unit(a), unit(b)) }
	if c := cos([]float32{1, 2}, []float32{2, 4}); c < 0.999 {
		t.Errorf("parallel = %v", c)
	}
	if c := cos([]float32{1, 0}, []float32{0, 3}); c != 0 {
		t.Errorf("orthogonal = %v", c)
	}
	if c := cos([]float32{1}, []float32{1, 2}); c != 0 {
		t.Errorf("mismatched = %v", c)
	}
}

// TestTop: the best k, best first, ties in their order, non-positive
// scores left out when asked.
func TestTop(t *testing.T) {
	scores := []float64{1, 3, 3, 2, 0, -1}
	for _, tc := range []struct {
		k        int
		positive bool
		want     []int
	}{{3, false, []int{1, 2, 3}}, {10, true, []int{1, 2, 3, 0}}, {10, false, []int{1, 2, 3, 0, 4, 5}}, {0, false, []int{}}} {
		if got := top(scores, tc.k, tc.positive); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("top(%d, %v) = %v, want %v", tc.k, tc.positive, got, tc.want)
		}
	}
}
