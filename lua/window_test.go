package lua

import (
	"context"
	"math/rand"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
)

// windowDriver runs wc_check of lib_window.lua over a series of event times in one script
// call, keeping the state as the reservation script does (stored only when allowed).
// ARGV[1] window ms, ARGV[2] max, ARGV[3..] event times in ms.
// Returns one number per event: 0 admitted, else the retry-after in ms of the refusal.
const windowDriver = `
local W, M = tonumber(ARGV[1]), tonumber(ARGV[2])
local s, p, c
local out = {}
for i = 3, #ARGV do
  local ok, retry, s1, p1, c1 = wc_check(s, p, c, W, M, tonumber(ARGV[i]))
  if ok then
    s, p, c = s1, p1, c1
    out[#out + 1] = 0
  else
    out[#out + 1] = retry
  end
end
return out
`

// runWindow answers every event of times (ms, ascending) with 0 (admitted) or its retry-after.
func runWindow(t *testing.T, rdb redis.UniversalClient, windowMs, most int64, times []int64) []int64 {
	t.Helper()
	lib, err := Source("lib_window.lua")
	if err != nil {
		t.Fatal(err)
	}
	args := []any{windowMs, most}
	for _, x := range times {
		args = append(args, x)
	}
	res, err := redis.NewScript(lib+windowDriver).Run(context.Background(), rdb, nil, args...).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(times) {
		t.Fatalf("%d answers for %d events", len(res), len(times))
	}
	return res
}

// forWindowBackends runs f on miniredis (its Lua is gopher-lua) and, under -tags integration,
// on the real Redis (Lua 5.1), which the reservation script runs on in production.
func forWindowBackends(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { rdb.Close() })
		f(t, rdb)
	})
	if testsvc.Integration {
		t.Run("redis", func(t *testing.T) { f(t, testsvc.Redis(t)) })
	}
}

// A burst over the max is refused: with no earlier events exactly max of a burst pass, and
// every refusal carries a retry-after.
func TestWindowCounterRefusesABurst(t *testing.T) {
	forWindowBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		const w, most = 60_000, 5
		base := int64(1_764_000_000_000) // a multiple of w: the burst opens a fixed window
		var times []int64
		for i := int64(0); i < 20; i++ {
			times = append(times, base+i) // 20 events within 20 ms
		}
		res := runWindow(t, rdb, w, most, times)
		admitted := 0
		for i, r := range res {
			if r == 0 {
				admitted++
				if i >= most {
					t.Fatalf("event %d admitted after %d of the burst", i, most)
				}
			} else if r < 1 {
				t.Fatalf("event %d refused with retry %d", i, r)
			}
		}
		if admitted != most {
			t.Fatalf("admitted %d of the burst, want %d", admitted, most)
		}
		// The retry of the first refusal is honest: at the instant it names the next event passes,
		// one ms before it does not (no event in between).
		at := times[most] + res[most]
		if got := runWindow(t, rdb, w, most, append(append([]int64{}, times[:most]...), at-1)); got[most] == 0 {
			t.Fatalf("event at retry-1 (%d ms after the burst) admitted", at-1-base)
		}
		if got := runWindow(t, rdb, w, most, append(append([]int64{}, times[:most]...), at)); got[most] != 0 {
			t.Fatalf("event at the retry (%d ms after the burst) refused (retry %d)", at-base, got[most])
		}
	})
}

// The approximation bound stated in lib_window.lua and docs/DESIGN.md: never more than max
// admitted events in one fixed window, never 2*max or more in any span of the window's length;
// and the worst case (the previous window's events bunched at its end) does exceed max, which
// is the price of the counter against the exact log.
func TestWindowCounterApproximationBound(t *testing.T) {
	forWindowBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		const w, most = 1000, 10
		check := func(name string, times []int64) (worst int) {
			res := runWindow(t, rdb, w, most, times)
			var adm []int64
			for i, r := range res {
				if r == 0 {
					adm = append(adm, times[i])
				}
			}
			perFixed := map[int64]int{}
			for i, x := range adm {
				perFixed[x/w]++
				if perFixed[x/w] > most {
					t.Fatalf("%s: %d admitted in the fixed window at %d", name, perFixed[x/w], x/w*w)
				}
				n := 0 // admitted events within (x - w, x]
				for j := i; j >= 0 && adm[j] > x-w; j-- {
					n++
				}
				worst = maxInt(worst, n)
			}
			if worst >= 2*most {
				t.Fatalf("%s: %d admitted within one window span, bound is < %d", name, worst, 2*most)
			}
			return worst
		}
		// Bunched: max events in the last ms of one window, then one event every 10 ms.
		var bunched []int64
		for i := 0; i < most; i++ {
			bunched = append(bunched, 5*w-1)
		}
		for x := int64(5 * w); x < 7*w; x += 10 {
			bunched = append(bunched, x)
		}
		worst := check("bunched", bunched)
		if worst <= most {
			t.Fatalf("bunched: worst span %d; the counter should let the estimate's error show (> %d)", worst, most)
		}
		t.Logf("bunched previous window: at most %d events in a span of %d ms (max %d, bound < %d)", worst, w, most, 2*most)
		// Random traffic, seeded: the bound holds whatever the pattern.
		for seed := int64(1); seed <= 20; seed++ {
			rng := rand.New(rand.NewSource(seed))
			var times []int64
			x := int64(w * 3)
			for len(times) < 600 {
				x += int64(rng.Intn(60))
				if rng.Intn(10) == 0 {
					for k := 0; k < rng.Intn(3*most); k++ {
						times = append(times, x)
					}
				}
				times = append(times, x)
			}
			check("random", times)
		}
		// Evenly spread traffic at twice the limit: the estimate is exact, so no span holds more
		// than max (plus the one event the rounding to whole ms may let through).
		var even []int64
		for x := int64(10 * w); x < 20*w; x += w / (2 * most) {
			even = append(even, x)
		}
		if got := check("even", even); got > most+1 {
			t.Fatalf("even traffic: %d events in one span, want <= %d", got, most+1)
		}
	})
}

// A window that is off (max or size <= 0) admits everything.
func TestWindowCounterOff(t *testing.T) {
	forWindowBackends(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, tt := range []struct{ w, most int64 }{{0, 5}, {1000, 0}} {
			res := runWindow(t, rdb, tt.w, tt.most, []int64{1, 1, 1, 1, 1, 1, 1})
			for i, r := range res {
				if r != 0 {
					t.Fatalf("window %d max %d: event %d refused", tt.w, tt.most, i)
				}
			}
		}
	})
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
