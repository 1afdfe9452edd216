package recall

import (
	"math"
	"slices"
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

// top returns the indexes of the k highest scores, best first; ties keep
// the candidates' order (newest first). Scores of zero or less are left
// out when positiveOnly. It keeps the best k as it goes (insertion into a
// list of k), as k is small and the candidates may be many.
func top(scores []float64, k int, positiveOnly bool) []int {
	best := make([]int, 0, k+1)
	for i, s := range scores {
		if (positiveOnly && s <= 0) || k <= 0 || (len(best) == k && s <= scores[best[k-1]]) {
			continue
		}
		at := len(best)
		for at > 0 && s > scores[best[at-1]] {
			at--
		}
		best = slices.Insert(best, at, i)
		if len(best) > k {
			best = best[:k]
		}
	}
	return best
}
