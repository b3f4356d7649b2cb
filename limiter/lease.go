package limiter

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/internal/tokenbucket"
)

// pool holds the tokens this instance leased from one shared budget (a Redis token bucket,
// lua/limiter_lease.lua) and spends them locally. Tokens not spent within Options.LeaseTTL
// expire and go back to Redis with the next lease call (or housekeeping), so an idle instance
// does not sit on the budget. The request that takes the pool below half a lease refills it
// (one Redis call, single flight) while the others keep spending; a pool that Redis found
// empty answers locally until the bucket's refill time (one token, or an eighth of a lease if
// longer). Safe for concurrent use.
type pool struct {
	key  string
	used atomic.Int64 // unix nanoseconds of the last take

	mu         sync.Mutex
	lim        tokenbucket.Limit
	tokens     int           // leased and unspent
	stale      int           // expired, to hand back to Redis
	low        int           // refill when tokens fall to this
	expires    time.Time     // tokens are spendable until then
	emptyUntil time.Time     // Redis said empty: no lease call before then
	inflight   chan struct{} // closed when the lease call in flight ends; nil when none
}

func (l *Limiter) pool(d int, name string, now time.Time) *pool {
	nowNs := now.UnixNano()
	return l.pools[d].getOrAdd(name, func() *pool {
		p := &pool{key: l.budgetKey(d, name)}
		p.used.Store(nowNs)
		return p
	}, func(p *pool) bool { return nowNs-p.used.Load() > int64(time.Minute) })
}

// leaseSize is how many tokens one lease asks for: lim's rate over the lease window, shared by
// the healthy instances, at least 1 and at most the burst.
func (l *Limiter) leaseSize(lim tokenbucket.Limit) int {
	n := lim.Rate * l.opts.LeaseWindow.Seconds() / float64(l.healthyCount())
	return int(min(max(1, math.Ceil(n)), float64(lim.Capacity())))
}

// reconfigureLocked applies a changed Limit: every unspent token goes back to Redis with the
// next lease call, where the bucket clamps to the new burst, so a change never adds tokens and
// this instance never holds more than the new limit allows.
func (p *pool) reconfigureLocked(lim tokenbucket.Limit) {
	p.lim = lim
	p.stale += p.tokens
	p.tokens = 0
	p.low = 0
	p.emptyUntil = time.Time{}
}

// expireLocked moves tokens whose lease ran out to stale.
func (p *pool) expireLocked(now time.Time) {
	if p.tokens > 0 && !now.Before(p.expires) {
		p.stale += p.tokens
		p.tokens = 0
	}
}

// errLeaseDegraded sends a request whose awaited lease failed to the local limiter.
var errLeaseDegraded = errors.New("limiter: lease failed, limiter degraded")

// take spends one token of the budget, leasing from Redis when the pool runs low. It returns
// the bucket's refill time when the budget is empty, and an error only when the lease call
// failed and no token was taken.
func (p *pool) take(ctx context.Context, l *Limiter, now time.Time, lim tokenbucket.Limit) (bool, time.Duration, error) {
	p.used.Store(now.UnixNano())
	p.mu.Lock()
	if lim != p.lim {
		p.reconfigureLocked(lim)
	}
	for attempt := 0; ; attempt++ {
		p.expireLocked(now)
		if p.tokens > 0 {
			p.tokens--
			refill := p.tokens <= p.low && p.inflight == nil && !now.Before(p.emptyUntil)
			if refill {
				p.inflight = make(chan struct{})
			}
			p.mu.Unlock()
			if refill {
				// This request already holds its token; a failed refill only degrades.
				_ = p.lease(ctx, l, lim)
			}
			return true, 0, nil
		}
		if now.Before(p.emptyUntil) {
			retry := p.emptyUntil.Sub(now)
			p.mu.Unlock()
			return false, retry, nil
		}
		if attempt >= 3 {
			// Leases keep going to other requests of this instance: the budget is contended.
			p.mu.Unlock()
			return false, time.Millisecond, nil
		}
		if ch := p.inflight; ch != nil {
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return false, 0, ctx.Err()
			}
			if l.Degraded() {
				// The lease this request waited for failed and Redis is now considered
				// down or slow: let the local limiter decide instead of answering "busy".
				return false, 0, errLeaseDegraded
			}
			p.mu.Lock()
			continue
		}
		p.inflight = make(chan struct{})
		p.mu.Unlock()
		if err := p.lease(ctx, l, lim); err != nil {
			return false, 0, err
		}
		p.mu.Lock()
	}
}

// lease runs one lease call for the pool, whose inflight channel the caller set; it hands back
// the stale tokens in the same call.
func (p *pool) lease(ctx context.Context, l *Limiter, lim tokenbucket.Limit) error {
	want := l.leaseSize(lim)
	p.mu.Lock()
	give := p.stale
	p.stale = 0
	p.mu.Unlock()

	got, retry, err := l.leaseCall(ctx, p.key, lim, want, give)

	now := l.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.inflight)
	p.inflight = nil
	if err != nil {
		p.stale += give // try to hand them back next time
		return err
	}
	if got > 0 {
		p.expireLocked(now)
		p.tokens += got
		p.expires = now.Add(l.opts.LeaseTTL)
		p.low = want / 2
		p.emptyUntil = time.Time{}
	} else if want > 0 {
		// Look again when one token is there, but not before an eighth of a lease refilled: a
		// saturated budget would otherwise be polled every millisecond by every instance.
		// Tokens are not lost meanwhile, they wait in the bucket for whoever asks first.
		eighth := time.Duration(float64(want) / 8 / lim.Rate * float64(time.Second))
		p.emptyUntil = now.Add(max(retry, eighth))
	}
	return nil
}

// give returns one spent token to the pool (a refund); no Redis call.
func (p *pool) give() {
	p.mu.Lock()
	p.tokens++
	p.mu.Unlock()
}

// flush hands back expired tokens of an idle pool (housekeeping). It reports whether the pool
// holds nothing and may be forgotten.
func (p *pool) flush(ctx context.Context, l *Limiter, now time.Time) bool {
	p.mu.Lock()
	p.expireLocked(now)
	if p.inflight != nil {
		p.mu.Unlock()
		return false
	}
	give, lim := p.stale, p.lim
	if give == 0 {
		empty := p.tokens == 0
		p.mu.Unlock()
		return empty
	}
	p.stale = 0
	p.mu.Unlock()
	if _, _, err := l.leaseCall(ctx, p.key, lim, 0, give); err != nil {
		p.mu.Lock()
		p.stale += give
		p.mu.Unlock()
		return false
	}
	return false
}

// available reports the tokens of the budget this instance holds unspent (tests).
func (p *pool) available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens + p.stale
}

// leaseCall takes up to want tokens of the budget at key after handing back give.
func (l *Limiter) leaseCall(ctx context.Context, key string, lim tokenbucket.Limit, want, give int) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.CallTimeout)
	defer cancel()
	l.callsLease.Inc()
	start := time.Now()
	res, err := l.leaseScript.Run(ctx, l.rdb, []string{key}, lim.Rate, lim.Capacity(), want, give, l.nowArg()).Int64Slice()
	l.observe(time.Since(start), err)
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 || res[0] < 0 || res[0] > int64(want) && lim.Rate > 0 {
		return 0, 0, ErrBadReply
	}
	if give > 0 {
		l.returned.Add(float64(give))
	}
	if res[0] > 0 {
		l.leased.Add(float64(res[0]))
	}
	return int(res[0]), time.Duration(res[1]) * time.Millisecond, nil
}
