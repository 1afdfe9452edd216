package recall

import (
	"container/list"
	"context"
	"math"
	"sync"

	"github.com/agentd/agentd/domain"
)

// DefaultCacheFloats bounds the vectors kept in memory (128 MB of
// float32): about 20,000 vectors of 1,536 dimensions.
const DefaultCacheFloats = 32 << 20

// vectorCache keeps the vectors of recently recalled agents in memory,
// normalised, by agent, kind and model: reading 10,000 vectors of 1,536
// floats from the database for every recall costs far more than the one
// indexed query that checks they have not changed (Memories.VectorState).
// The least recently used entries go first when the budget is spent.
type vectorCache struct {
	mu      sync.Mutex
	budget  int
	used    int
	entries map[string]*list.Element
	order   *list.List // front: most recently used
}

// vectorSet is the cached vectors of one agent, kind and model, with the
// items they belong to.
type vectorSet[T any] struct {
	key, ver string
	items    []T
	vecs     [][]float32 // unit vectors, by item
	floats   int
}

func newVectorCache(budget int) *vectorCache {
	return &vectorCache{budget: budget, entries: map[string]*list.Element{}, order: list.New()}
}

// get returns the entry of key when its version is version.
func (c *vectorCache) get(key, version string) (cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok || el.Value.(cached).version() != version {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(cached), true
}

// put keeps v, evicting the least recently used entries past the budget;
// an entry larger than the whole budget is not kept.
func (c *vectorCache) put(v cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[v.cacheKey()]; ok {
		c.used -= el.Value.(cached).size()
		c.order.Remove(el)
		delete(c.entries, v.cacheKey())
	}
	if v.size() > c.budget {
		return
	}
	for c.used+v.size() > c.budget {
		last := c.order.Back()
		old := last.Value.(cached)
		c.used -= old.size()
		c.order.Remove(last)
		delete(c.entries, old.cacheKey())
	}
	c.entries[v.cacheKey()] = c.order.PushFront(v)
	c.used += v.size()
}

// cached is what the cache holds: a vectorSet of any item type.
type cached interface {
	cacheKey() string
	version() string
	size() int
}

func (v *vectorSet[T]) cacheKey() string { return v.key }
func (v *vectorSet[T]) version() string  { return v.ver }
func (v *vectorSet[T]) size() int        { return v.floats }

// newVectorSet keeps the items with their vectors normalised; take
// returns an item's vector and removes it from the item, so it is held
// once.
func newVectorSet[T any](key, version string, items []T, take func(*T) []float32) *vectorSet[T] {
	set := &vectorSet[T]{key: key, ver: version, items: items, vecs: make([][]float32, len(items))}
	for i := range items {
		set.vecs[i] = unit(take(&items[i]))
		set.floats += len(set.vecs[i])
	}
	return set
}

// rank returns the k items closest to q (a unit vector) among those keep
// accepts, best first.
func (v *vectorSet[T]) rank(q []float32, keep func(T) bool, k int) []T {
	scores := make([]float64, len(v.items))
	for i, it := range v.items {
		scores[i] = math.Inf(-1)
		if keep(it) {
			scores[i] = dot(q, v.vecs[i])
		}
	}
	idx := top(scores, k, false)
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		if !math.IsInf(scores[i], -1) {
			out = append(out, v.items[i])
		}
	}
	return out
}

// unit returns v scaled to length 1 (v itself when it is all zeros).
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

// dot is the dot product of two unit vectors: their cosine; 0 when their
// lengths differ.
func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	// Four sums break the dependency chain of one, which the compiler
	// does not do by itself; a recall of 10,000 vectors is mostly this.
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64(s0 + s1 + s2 + s3)
}

// vectorSource is where a kind of item's vectors come from: their state,
// the embedding again of the items the model has not embedded, and the
// load of the embedded ones.
type vectorSource[T any] struct {
	key     string
	state   func(context.Context) (domain.VectorState, error)
	refresh func(context.Context)
	load    func(context.Context) ([]T, error)
	take    func(*T) []float32
}

// byVectors ranks src's items that keep accepts by their cosine with
// query, when the agent's provider can embed and some items are embedded;
// ok false says to rank by full text instead. The vectors are kept in the
// cache while their version holds; when it does not, the items the model
// has not embedded are embedded first (a model that changed).
func byVectors[T any](ctx context.Context, s *Service, a Agent, src vectorSource[T], query string, keep func(T) bool, k int) ([]T, bool, error) {
	if _, can := s.model(a); !can {
		return nil, false, nil
	}
	st, err := src.state(ctx)
	if err != nil || st.Total == 0 {
		return nil, err == nil, err // nothing to find
	}
	v, hit := s.cache.get(src.key, st.Version)
	if !hit && st.Embedded < st.Total {
		src.refresh(ctx)
		if st, err = src.state(ctx); err != nil {
			return nil, false, err
		}
	}
	if st.Embedded == 0 {
		return nil, false, nil
	}
	q, _ := s.vectors(ctx, a, []string{query})
	if q == nil {
		return nil, false, nil
	}
	if !hit {
		items, err := src.load(ctx)
		if err != nil {
			return nil, false, err
		}
		set := newVectorSet(src.key, st.Version, items, src.take)
		s.cache.put(set)
		v = set
	}
	found := v.(*vectorSet[T]).rank(unit(q[0]), keep, k)
	return found, len(found) > 0, nil
}
