// Package lru has the one size-capped map with per-entry expiry: inventory's memory of
// unknown activity ids and app's per-instance budgets by key. It imports nothing of the
// service.
package lru

import (
	"container/list"
	"sync"
	"time"
)

// Cache is a size-capped map with per-entry expiry. When it is full, adding a key evicts the
// least recently used entry (never the whole map), so a flood of distinct keys bounds its
// memory and keeps the recent keys. Safe for concurrent use.
type Cache[V any] struct {
	mu    sync.Mutex
	max   int
	items map[string]*list.Element
	order *list.List // front = most recently used
}

type entry[V any] struct {
	key     string
	val     V
	expires time.Time // zero: never
}

// New returns a Cache holding at most n entries (at least 1).
func New[V any](n int) *Cache[V] {
	n = max(1, n)
	return &Cache[V]{max: n, items: make(map[string]*list.Element, min(n, 1024)), order: list.New()}
}

// Get returns the value of key unless it is absent or expired at now.
func (c *Cache[V]) Get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[V])
	if !e.expires.IsZero() && !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, key)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// Put stores key until expires (zero: until evicted), evicting the least recently used entry
// when the map is full.
func (c *Cache[V]) Put(key string, v V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*entry[V])
		e.val, e.expires = v, expires
		c.order.MoveToFront(el)
		return
	}
	if len(c.items) >= c.max {
		if old := c.order.Back(); old != nil {
			c.order.Remove(old)
			delete(c.items, old.Value.(*entry[V]).key)
		}
	}
	c.items[key] = c.order.PushFront(&entry[V]{key: key, val: v, expires: expires})
}

// Delete forgets key.
func (c *Cache[V]) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
}

// Len is the number of entries held, expired ones included until they are touched.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
