package tokenbucket

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Bucket is one in-process token bucket (golang.org/x/time/rate) enforcing a Limit: the
// limiter's fallback buckets and app's per-instance read and token budgets. It starts full.
// Configure changes its Limit in place: tokens are kept and clamped to the new burst, never
// refilled. Safe for concurrent use.
type Bucket struct {
	rateBits atomic.Uint64 // math.Float64bits of the configured Limit.Rate
	burst    atomic.Int64  // the configured Limit.Burst
	mu       sync.Mutex    // serialises reconfiguration
	lim      *rate.Limiter
	used     atomic.Int64 // unix nanoseconds of the last take, for housekeeping
}

// NewBucket returns a full bucket enforcing l, last used at now.
func NewBucket(l Limit, now time.Time) *Bucket {
	b := &Bucket{lim: rate.NewLimiter(rate.Limit(l.Rate), l.Capacity())}
	b.rateBits.Store(math.Float64bits(l.Rate))
	b.burst.Store(int64(l.Burst))
	b.used.Store(now.UnixNano())
	return b
}

// Configure makes b enforce l from now on; a no-op when l is the current Limit.
func (b *Bucket) Configure(l Limit, now time.Time) {
	if b.rateBits.Load() == math.Float64bits(l.Rate) && b.burst.Load() == int64(l.Burst) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rateBits.Load() == math.Float64bits(l.Rate) && b.burst.Load() == int64(l.Burst) {
		return
	}
	// SetBurstAt advances the bucket under the old limit; the next advance clamps the tokens
	// to the new burst. Tokens are never added by a change.
	b.lim.SetLimitAt(now, rate.Limit(l.Rate))
	b.lim.SetBurstAt(now, l.Capacity())
	b.rateBits.Store(math.Float64bits(l.Rate))
	b.burst.Store(int64(l.Burst))
}

// Take takes one token at now, or reports how long until one is there: rounded up to a
// whole millisecond, at least one (a second when the rate is 0).
func (b *Bucket) Take(now time.Time) (bool, time.Duration) {
	b.used.Store(now.UnixNano())
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	r := float64(b.lim.Limit())
	if r <= 0 {
		return false, time.Second
	}
	missing := 1 - b.lim.TokensAt(now)
	return false, max(time.Millisecond, time.Duration(math.Ceil(missing/r*1e3))*time.Millisecond)
}

// Give returns one token taken at or before now.
func (b *Bucket) Give(now time.Time) {
	// AllowN with a negative n adds |n| tokens; the next advance clamps them to the burst.
	b.lim.AllowN(now, -1)
}

// Tokens reports the tokens available at now.
func (b *Bucket) Tokens(now time.Time) float64 { return b.lim.TokensAt(now) }

// IdleSince reports whether b was last taken from before t.
func (b *Bucket) IdleSince(t time.Time) bool { return b.used.Load() < t.UnixNano() }
