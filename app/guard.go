package app

import (
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
