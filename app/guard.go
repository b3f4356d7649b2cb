package app

import (
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/lru"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// localLimits are per-instance token buckets by key (an IP prefix or a user), for the
// endpoints whose cost is one Redis read at most: a flood is refused before it reaches Redis.
// At most max keys are remembered; the least recently used is forgotten first.
type localLimits struct {
	buckets *lru.Cache[*tokenbucket.Bucket]
}

func newLocalLimits(max int) *localLimits {
	return &localLimits{buckets: lru.New[*tokenbucket.Bucket](max)}
}

// Allow takes one token of key under l (not limited when l.Rate <= 0).
func (ll *localLimits) Allow(key string, l tokenbucket.Limit, now time.Time) (bool, time.Duration) {
	if !l.Limited() {
		return true, 0
	}
	b, ok := ll.buckets.Get(key, now)
	if !ok {
		b = tokenbucket.NewBucket(l, now)
		ll.buckets.Put(key, b, time.Time{})
	}
	b.Configure(l, now)
	return b.Take(now)
}

// readyProbe answers /readyz from a cached Redis probe: at most one ping per period, however
// many requests ask.
type readyProbe struct {
	ping   func(ctx context.Context) error
	period time.Duration

	mu  sync.Mutex
	at  time.Time
	err error
}

// check returns the latest probe result, probing again when it is older than the period.
// Concurrent callers wait for the one probe in flight.
func (p *readyProbe) check(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && now.Sub(p.at) < p.period {
		return p.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	p.err = p.ping(ctx)
	p.at = time.Now()
	return p.err
}
