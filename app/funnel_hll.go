package app

import (
	"math"
	"math/bits"
)

// The distinct-user estimates are HyperLogLogs kept in memory, one per activity and stage, and
// merged into Redis's own HyperLogLog of the activity at each flush (PFMERGE of the sketch
// written in Redis's dense layout), so an attempt costs a hash and a register update, with no
// allocation, whatever the number of users. Registers only grow, so merging the same sketch
// again changes nothing: a flush that fails is simply redone by the next one. Redis then holds
// the union over every instance; PFCOUNT's standard error is 1.04/sqrt(16384) = 0.81 %.
const (
	hllP         = 14 // Redis's HLL_P: 16384 registers
	hllRegisters = 1 << hllP
	hllBits      = 6 // bits per register in the dense layout
	hllHeader    = 16
	hllDenseSize = hllHeader + (hllRegisters*hllBits+7)/8
)

// hllSketch is one HyperLogLog: the max rank seen per register. Not safe for concurrent use
// (actFunnel's mutex guards it).
type hllSketch struct {
	reg    [hllRegisters]uint8
	dirty  bool // a register grew since the last dense()
	merged bool // a flush merged it into Redis: Redis counts someone for it
}

// add adds the element whose 64-bit hash is h (the index from its low 14 bits, the rank from
// the rest, as Redis's hllPatLen does).
func (s *hllSketch) add(h uint64) {
	i := h & (hllRegisters - 1)
	h >>= hllP
	h |= 1 << (64 - hllP) // bounds the rank at 64-14+1
	if r := uint8(bits.TrailingZeros64(h) + 1); r > s.reg[i] {
		s.reg[i] = r
		s.dirty = true
	}
}

// dense appends the sketch in Redis's dense HyperLogLog encoding ("HYLL", encoding 0, the
// cached cardinality marked invalid, then 16384 6-bit registers packed little-endian) to buf
// and clears dirty.
func (s *hllSketch) dense(buf []byte) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, hllDenseSize)...)
	p := buf[start:]
	copy(p, "HYLL")
	p[15] = 0x80 // cardinality cache invalid: PFCOUNT computes it
	regs := p[hllHeader:]
	for i, v := range s.reg {
		if v == 0 {
			continue
		}
		b, fb := i*hllBits/8, uint(i*hllBits&7)
		regs[b] |= v << fb
		if fb > 8-hllBits {
			regs[b+1] |= v >> (8 - fb)
		}
	}
	s.dirty = false
	return buf
}

// userHash64 is the 64-bit hash a user id adds to the sketches: FNV-1a, then the MurmurHash3
// finalizer for a uniform spread of the low bits. The same on every instance (their sketches
// are merged); only registers reach Redis, never an id.
func userHash64(user string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(user); i++ {
		h ^= uint64(user[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// count is the sketch's estimate of the distinct elements added, computed as Redis's PFCOUNT
// computes it from the same registers (hllCount: Ertl's estimator), so the embedded mode,
// whose in-process Redis has no HyperLogLog in Redis's encoding, answers what Redis would.
func (s *hllSketch) count() uint64 {
	const q = 64 - hllP
	var hist [q + 2]int
	for _, v := range s.reg {
		hist[v]++
	}
	m := float64(hllRegisters)
	z := m * hllTau((m-float64(hist[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(hist[j])
		z *= 0.5
	}
	z += m * hllSigma(float64(hist[0])/m)
	return uint64(math.Round(0.5 / math.Ln2 * m * m / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zp := z
		z += x * y
		y += y
		if zp == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zp := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if zp == z {
			return z / 3
		}
	}
}
