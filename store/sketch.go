package store

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// sketchPrecision is the HyperLogLog precision: 2^12 one-byte registers, a
// standard error of 1.04/sqrt(4096) ≈ 1.6%.
const sketchPrecision = 12

// sketchSize is the number of registers of a dense sketch.
const sketchSize = 1 << sketchPrecision

// sparseLimit is how many distinct hashes a sketch keeps exactly before it
// turns into registers: up to it, counts are exact (64-bit hashes do not
// collide in practice), and the stored form is no larger than the registers.
const sparseLimit = sketchSize / 8

// sketch counts distinct values: exactly, as a set of hashes, while they
// are few; as HyperLogLog registers beyond sparseLimit. A sketch per hour
// lets the distinct users and conversations of any range be counted by
// merging its hours, reading a few KB per hour instead of every active
// (hour, user) pair.
type sketch struct {
	hashes    []uint64 // sorted; nil once dense
	registers []byte   // nil while sparse
}

// The first byte of a stored sketch says its form.
const (
	sparseForm byte = 0
	denseForm  byte = 1
)

// decodeSketch reads a stored sketch; anything malformed is empty.
func decodeSketch(b []byte) *sketch {
	switch {
	case len(b) == 1+sketchSize && b[0] == denseForm:
		return &sketch{registers: slices.Clone(b[1:])}
	case len(b) >= 1 && b[0] == sparseForm && (len(b)-1)%8 == 0:
		s := &sketch{hashes: make([]uint64, 0, (len(b)-1)/8)}
		for i := 1; i < len(b); i += 8 {
			s.hashes = append(s.hashes, binary.BigEndian.Uint64(b[i:]))
		}
		return s
	}
	return &sketch{}
}

// encode is the stored form.
func (s *sketch) encode() []byte {
	if s.registers != nil {
		return append([]byte{denseForm}, s.registers...)
	}
	out := make([]byte, 1, 1+8*len(s.hashes))
	for _, h := range s.hashes {
		out = binary.BigEndian.AppendUint64(out, h)
	}
	return out
}

// add counts v and reports whether the sketch changed.
func (s *sketch) add(v string) bool { return s.addHash(xxhash.Sum64String(v)) }

func (s *sketch) addHash(h uint64) bool {
	if s.registers != nil {
		idx := h >> (64 - sketchPrecision)
		rank := byte(bits.LeadingZeros64(h<<sketchPrecision|1<<(sketchPrecision-1)) + 1)
		if rank <= s.registers[idx] {
			return false
		}
		s.registers[idx] = rank
		return true
	}
	i, found := slices.BinarySearch(s.hashes, h)
	if found {
		return false
	}
	s.hashes = slices.Insert(s.hashes, i, h)
	if len(s.hashes) > sparseLimit {
		s.densify()
	}
	return true
}

// densify turns the set of hashes into registers.
func (s *sketch) densify() {
	hashes := s.hashes
	s.hashes, s.registers = nil, make([]byte, sketchSize)
	for _, h := range hashes {
		s.addHash(h)
	}
}

// merge folds o into s.
func (s *sketch) merge(o *sketch) {
	if o.registers == nil {
		for _, h := range o.hashes {
			s.addHash(h)
		}
		return
	}
	if s.registers == nil {
		s.densify()
	}
	for i, r := range o.registers {
		s.registers[i] = max(s.registers[i], r)
	}
}

// estimate is the number of distinct values counted: exact while sparse,
// the HyperLogLog estimate (linear counting while registers are empty)
// after.
func (s *sketch) estimate() int64 {
	if s.registers == nil {
		return int64(len(s.hashes))
	}
	m := float64(sketchSize)
	var sum float64
	zeros := 0
	for _, r := range s.registers {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return int64(math.Round(e))
}
