package report

import (
	"math"
	"math/bits"
)

// histSubBits sets the precision of Histogram: each power of two is split into 2^histSubBits
// linear buckets, so a recorded value is known to within 1/128 (0.8 %) of itself.
const (
	histSubBits = 7
	histSub     = 1 << histSubBits
)

// Histogram is a log-linear histogram of non-negative integers (the load tool records
// microseconds), in the manner of HdrHistogram: values below 256 are exact, larger ones fall
// in buckets whose width is 1/128 of their lower bound. Memory grows with the largest value
// recorded: about 4,000 buckets (32 KiB) for values up to an hour in microseconds.
//
// The zero value is an empty histogram ready to use. A Histogram is not safe for concurrent
// use.
type Histogram struct {
	counts []uint64
	n      uint64
	min    int64
	max    int64
	sum    float64
}

// histIndex is the bucket of v (v >= 0).
func histIndex(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - (histSubBits + 1)
	return shift*histSub + int(v>>shift)
}

// histHigh is the largest value that falls in bucket i.
func histHigh(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	shift := i/histSub - 1
	top := int64(i - shift*histSub) // in [histSub, 2*histSub)
	return (top+1)<<shift - 1
}

// Record adds one value; a negative value counts as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	i := histIndex(v)
	if i >= len(h.counts) {
		grown := make([]uint64, i+1+histSub)
		copy(grown, h.counts)
		h.counts = grown
	}
	h.counts[i]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		grown := make([]uint64, len(o.counts))
		copy(grown, h.counts)
		h.counts = grown
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Min is the smallest value recorded, exactly; 0 when empty.
func (h *Histogram) Min() int64 { return h.min }

// Max is the largest value recorded, exactly; 0 when empty.
func (h *Histogram) Max() int64 { return h.max }

// Mean is the exact mean of the values recorded; 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile is the nearest-rank q-quantile (q in [0, 1]): the smallest recorded value v such
// that at least q of the values are <= v. It is exact for values below 256 and otherwise at
// most 1/128 above the true value, never below it and never above Max. 0 when empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank <= 1 {
		return h.min
	}
	if rank >= h.n {
		return h.max
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histHigh(i), h.max)
		}
	}
	return h.max
}
