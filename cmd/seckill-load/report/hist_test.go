package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// exactQuantile is the nearest-rank quantile of sorted values.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(rank, 1)
	return sorted[rank-1]
}

func TestHistogramSmallValuesAreExact(t *testing.T) {
	var h Histogram
	// 1..100 in a scrambled order.
	for _, v := range rand.New(rand.NewPCG(1, 2)).Perm(100) {
		h.Record(int64(v + 1))
	}
	tests := []struct {
		give float64
		want int64
	}{
		{0, 1}, {0.01, 1}, {0.5, 50}, {0.95, 95}, {0.99, 99}, {0.999, 100}, {1, 100},
	}
	for _, tt := range tests {
		if got := h.Quantile(tt.give); got != tt.want {
			t.Errorf("Quantile(%v) = %d, want %d", tt.give, got, tt.want)
		}
	}
	if h.Count() != 100 || h.Min() != 1 || h.Max() != 100 || h.Mean() != 50.5 {
		t.Errorf("count %d min %d max %d mean %v, want 100 1 100 50.5", h.Count(), h.Min(), h.Max(), h.Mean())
	}
}

func TestHistogramSkewedData(t *testing.T) {
	// 990 fast answers of 2 ms and 10 slow ones of 900 ms (in microseconds): p99 must be fast,
	// p99.9 and max slow, the tail must not leak into p50.
	var h Histogram
	for i := 0; i < 990; i++ {
		h.Record(2000)
	}
	for i := 0; i < 10; i++ {
		h.Record(900_000)
	}
	within := func(got, want int64) bool { return got >= want && float64(got-want) <= float64(want)/histSub }
	if got := h.Quantile(0.5); !within(got, 2000) {
		t.Errorf("p50 = %d, want ~2000", got)
	}
	if got := h.Quantile(0.99); !within(got, 2000) {
		t.Errorf("p99 = %d, want ~2000", got)
	}
	if got := h.Quantile(0.995); got != 900_000 {
		t.Errorf("p99.5 = %d, want 900000 (capped at max)", got)
	}
	if h.Max() != 900_000 {
		t.Errorf("max = %d", h.Max())
	}
}

func TestHistogramMatchesSortedSamplesWithinPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	var h, a, b Histogram
	var all []int64
	for i := 0; i < 50_000; i++ {
		// Log-uniform from 1 µs to about 10 s, like latencies.
		v := int64(math.Exp(r.Float64() * math.Log(1e7)))
		all = append(all, v)
		h.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(&b)
	slices.Sort(all)
	for _, q := range []float64{0.1, 0.5, 0.9, 0.95, 0.99, 0.999} {
		want := exactQuantile(all, q)
		for name, hh := range map[string]*Histogram{"single": &h, "merged": &a} {
			got := hh.Quantile(q)
			if got < want || float64(got-want) > float64(want)/histSub {
				t.Errorf("%s: Quantile(%v) = %d, exact %d: off by more than 1/%d", name, q, got, want, histSub)
			}
		}
	}
	if a.Count() != h.Count() || a.Min() != all[0] || a.Max() != all[len(all)-1] {
		t.Errorf("merged count %d min %d max %d, want %d %d %d", a.Count(), a.Min(), a.Max(), h.Count(), all[0], all[len(all)-1])
	}
}

func TestHistogramBucketsRoundTrip(t *testing.T) {
	// Every value falls in a bucket whose upper bound is >= it and within 1/128 of it, and
	// bucket indexes never go backwards.
	prev := -1
	for v := int64(0); v < 1<<20; v += 1 + v/300 {
		i := histIndex(v)
		if i < prev {
			t.Fatalf("histIndex(%d) = %d < histIndex of a smaller value %d", v, i, prev)
		}
		prev = i
		hi := histHigh(i)
		if hi < v || float64(hi-v) > float64(v)/histSub+1e-9 && v >= 2*histSub {
			t.Fatalf("value %d: bucket %d high %d", v, i, hi)
		}
		if v < 2*histSub && hi != v {
			t.Fatalf("value %d below %d not exact: high %d", v, 2*histSub, hi)
		}
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram not zero")
	}
	h.Record(-5)
	if h.Count() != 1 || h.Max() != 0 || h.Quantile(1) != 0 {
		t.Fatalf("negative value: count %d max %d", h.Count(), h.Max())
	}
}

// The service's sale report is printed for a person: no Go map, no float of 17 digits.
func TestWriteSalePrintsNoGoValues(t *testing.T) {
	var sale map[string]any
	if err := json.Unmarshal([]byte(`{"attempts":3000,"answers":{"accepted":258},"refusedTotal":2742,
		"orders":{"units":258,"distinctBuyers":258},"distinctUsers":{"tried":2990,"bought":258,"standardError":0.0081},
		"opensAt":"2026-12-06T10:00:00.000Z","peakSecond":{"at":"2026-12-06T10:00:01.000Z","attempts":1500,"accepted":200},
		"refused":{"sold_out":2742,"rate_ip":0},"conversion":{"ordersPerAttempt":0.086,"ordersPerTriedUser":0.23201856148491878},
		"blockRate":0.23201856148491878,"compensated":0,"drift":0}`), &sale); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeSale(&b, sale)
	out := b.String()
	for _, bad := range []string{"map[", "0.23201856148491878"} {
		if strings.Contains(out, bad) {
			t.Errorf("the sale report prints %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"23.2 %", "1500 attempts, 200 accepted", "attempts 3000"} {
		if !strings.Contains(out, want) {
			t.Errorf("the sale report lacks %q:\n%s", want, out)
		}
	}
}
