package recall

import (
	"math"
	"sort"
)

// BM25's parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25 scores each text for the query terms. The document frequencies are
// counted over the candidates (every text matching a term, as the
// full-text index found them) and total is how many texts the whole scope
// holds, so rare terms weigh more, as in the index's own ranking.
func bm25(query []string, texts []string, total int64) []float64 {
	docs := make([]map[string]int, len(texts))
	df := map[string]int{}
	length := 0
	for i, t := range texts {
		docs[i] = map[string]int{}
		terms := Terms(t)
		for _, w := range termsWithRepeats(t, terms) {
			docs[i][w]++
		}
		length += len(terms)
		for _, w := range terms {
			df[w]++
		}
	}
	n := math.Max(float64(total), float64(len(texts)))
	avg := math.Max(float64(length)/math.Max(float64(len(texts)), 1), 1)
	scores := make([]float64, len(texts))
	for i, d := range docs {
		dl := float64(len(d))
		for _, w := range query {
			tf := float64(d[w])
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[w])+0.5)/(float64(df[w])+0.5))
			scores[i] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*dl/avg))
		}
	}
	return scores
}

// termsWithRepeats counts every use of the text's terms (Terms keeps each
// once): term frequency matters to BM25.
func termsWithRepeats(text string, terms []string) []string {
	keep := make(map[string]bool, len(terms))
	for _, t := range terms {
		keep[t] = true
	}
	var out []string
	for _, w := range splitWords(text) {
		if keep[w] {
			out = append(out, w)
		}
	}
	return out
}

// cosine is the cosine similarity of two vectors; 0 when either is empty
// or their lengths differ.
func cosine(a, b []float32) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// top returns the indexes of the k highest scores, best first; ties keep
// the candidates' order (newest first). Scores of zero or less are left
// out when positiveOnly.
func top(scores []float64, k int, positiveOnly bool) []int {
	idx := make([]int, 0, len(scores))
	for i, s := range scores {
		if !positiveOnly || s > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	return idx[:min(len(idx), k)]
}
