package app

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/seckill/seckill/internal/tokenbucket"
)

// lru is a size-capped map with per-entry expiry. When it is full, adding a key evicts the
// least recently used entry (never the whole map), so a flood of distinct keys bounds its
// memory and keeps the recent keys. Safe for concurrent use.
type lru[V any] struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List // front = most recently used
}

type lruEntry[V any] struct {
	key     string
	val     V
	expires time.Time // zero: never
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, items: make(map[string]*list.Element, min(max, 1024)), order: list.New()}
}

// get returns the value of key unless it is absent or expired at now.
func (c *lru[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !e.expires.IsZero() && !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, key)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// put stores key until expires (zero: until evicted), evicting the least recently used entry
// when the map is full.
func (c *lru[V]) put(key string, v V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.val, e.expires = v, expires
		c.order.MoveToFront(el)
		return
	}
	if len(c.items) >= c.max {
		if old := c.order.Back(); old != nil {
			c.order.Remove(old)
			delete(c.items, old.Value.(*lruEntry[V]).key)
		}
	}
	c.items[key] = c.order.PushFront(&lruEntry[V]{key: key, val: v, expires: expires})
}

// len is the number of entries held, expired ones included until they are touched.
func (c *lru[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// localLimits are per-instance token buckets by key (an IP prefix or a user), for the
// endpoints whose cost is one Redis read at most: a flood is refused before it reaches Redis.
// At most max keys are remembered; the least recently used is forgotten first.
type localLimits struct {
	buckets *lru[*tokenbucket.Bucket]
}

func newLocalLimits(max int) *localLimits {
	return &localLimits{buckets: newLRU[*tokenbucket.Bucket](max)}
}

// Allow takes one token of key under l (not limited when l.Rate <= 0).
func (ll *localLimits) Allow(key string, l tokenbucket.Limit, now time.Time) (bool, time.Duration) {
	if !l.Limited() {
		return true, 0
	}
	b, ok := ll.buckets.get(key, now)
	if !ok {
		b = tokenbucket.NewBucket(l, now)
		ll.buckets.put(key, b, time.Time{})
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
