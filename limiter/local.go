package limiter

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

const shardCount = 32

// shardMap is a bounded concurrent map from string keys, split in shards to spread lock
// contention. When a shard is full, adding evicts entries (see add). Safe for concurrent use.
type shardMap[V any] struct {
	seed     maphash.Seed
	perShard int
	shards   [shardCount]struct {
		mu sync.RWMutex
		m  map[string]V
	}
}

func newShardMap[V any](maxEntries int) *shardMap[V] {
	s := &shardMap[V]{seed: maphash.MakeSeed(), perShard: max(1, maxEntries/shardCount)}
	for i := range s.shards {
		s.shards[i].m = make(map[string]V)
	}
	return s
}

func (s *shardMap[V]) shard(k string) int { return int(maphash.String(s.seed, k) % shardCount) }

func (s *shardMap[V]) get(k string) (V, bool) {
	sh := &s.shards[s.shard(k)]
	sh.mu.RLock()
	v, ok := sh.m[k]
	sh.mu.RUnlock()
	return v, ok
}

// getOrAdd returns the value under k, adding mk() when there is none. A full shard first drops
// the entries evictable reports true for, then arbitrary ones, an eighth of the shard at most.
func (s *shardMap[V]) getOrAdd(k string, mk func() V, evictable func(V) bool) V {
	if v, ok := s.get(k); ok {
		return v
	}
	sh := &s.shards[s.shard(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if v, ok := sh.m[k]; ok {
		return v
	}
	s.makeRoomLocked(sh.m, evictable)
	v := mk()
	sh.m[k] = v
	return v
}

// set stores v under k, evicting like getOrAdd when the shard is full.
func (s *shardMap[V]) set(k string, v V, evictable func(V) bool) {
	sh := &s.shards[s.shard(k)]
	sh.mu.Lock()
	if _, ok := sh.m[k]; !ok {
		s.makeRoomLocked(sh.m, evictable)
	}
	sh.m[k] = v
	sh.mu.Unlock()
}

func (s *shardMap[V]) makeRoomLocked(m map[string]V, evictable func(V) bool) {
	if len(m) < s.perShard {
		return
	}
	for k, v := range m {
		if evictable != nil && evictable(v) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < s.perShard-s.perShard/8 {
			break
		}
		delete(m, k)
	}
}

// sweep calls keep for every entry and deletes those it returns false for. keep runs under the
// shard's lock and must not call back into s.
func (s *shardMap[V]) sweep(keep func(k string, v V) bool) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, v := range sh.m {
			if !keep(k, v) {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

func (s *shardMap[V]) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// memo remembers keys (user ids, IP limit keys) until a deadline: a rejected client is answered
// locally until its Retry-After. Bounded; safe for concurrent use.
type memo struct {
	m *shardMap[int64]
	n *atomic.Int64 // entries ever added minus entries purged: 0 skips the lookup
}

func newMemo(maxEntries int) memo {
	return memo{m: newShardMap[int64](maxEntries), n: new(atomic.Int64)}
}

// until reports the deadline remembered for k when it is after now.
func (mm memo) until(k string, now time.Time) (time.Time, bool) {
	if mm.n.Load() <= 0 {
		return time.Time{}, false
	}
	u, ok := mm.m.get(k)
	if !ok || u <= now.UnixNano() {
		return time.Time{}, false
	}
	return time.Unix(0, u), true
}

// remember keeps k until the deadline, extending, never shortening, what is remembered.
func (mm memo) remember(k string, until time.Time, now time.Time) {
	u := until.UnixNano()
	if old, ok := mm.m.get(k); ok && old >= u {
		return
	}
	n := now.UnixNano()
	mm.n.Add(1)
	mm.m.set(k, u, func(v int64) bool { return v <= n })
}

// forget forgets everything remembered.
func (mm memo) forget() {
	if mm.n.Load() <= 0 {
		return
	}
	mm.m.sweep(func(string, int64) bool { return false })
	mm.n.Store(int64(mm.m.len()))
}

// purge forgets what expired by now.
func (mm memo) purge(now time.Time) {
	n := now.UnixNano()
	mm.m.sweep(func(_ string, v int64) bool { return v > n })
	mm.n.Store(int64(mm.m.len())) // also corrects for entries evicted when full
}

// cowMap is a copy-on-write map for read-mostly entries (budgets, fallback buckets by
// dimension): a read is one atomic load and a map lookup, an add copies the map. Bounded: an
// add to a full map drops the entries evictable reports true for, then arbitrary ones.
// Safe for concurrent use.
type cowMap[V any] struct {
	max int
	m   atomic.Pointer[map[string]V]
	mu  sync.Mutex // serialises writers
}

func newCowMap[V any](maxEntries int) *cowMap[V] {
	c := &cowMap[V]{max: max(1, maxEntries)}
	m := make(map[string]V)
	c.m.Store(&m)
	return c
}

func (c *cowMap[V]) get(k string) (V, bool) {
	v, ok := (*c.m.Load())[k]
	return v, ok
}

func (c *cowMap[V]) getOrAdd(k string, mk func() V, evictable func(V) bool) V {
	if v, ok := c.get(k); ok {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	if v, ok := old[k]; ok {
		return v
	}
	next := make(map[string]V, len(old)+1)
	for ok, ov := range old {
		if len(old) >= c.max && evictable != nil && evictable(ov) {
			continue
		}
		next[ok] = ov
	}
	for dk := range next {
		if len(next) < c.max {
			break
		}
		delete(next, dk)
	}
	v := mk()
	next[k] = v
	c.m.Store(&next)
	return v
}

// sweep keeps the entries keep returns true for. keep must not call back into c.
func (c *cowMap[V]) sweep(keep func(k string, v V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	next := make(map[string]V, len(old))
	for k, v := range old {
		if keep(k, v) {
			next[k] = v
		}
	}
	if len(next) != len(old) {
		c.m.Store(&next)
	}
}
