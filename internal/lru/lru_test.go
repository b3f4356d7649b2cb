package lru

import (
	"fmt"
	"testing"
	"time"
)

// A full cache forgets the least recently used entry, never the whole map (issue 14), and
// an entry does not outlive its expiry.
func TestCacheEvictsTheOldestAndExpires(t *testing.T) {
	c := New[struct{}](3)
	now := time.Now()
	for i := 0; i < 5; i++ {
		c.Put(fmt.Sprint(i), struct{}{}, now.Add(time.Second))
	}
	if c.Len() != 3 {
		t.Fatalf("holds %d, want 3", c.Len())
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := c.Get(fmt.Sprint(i), now); ok != want {
			t.Fatalf("key %d present=%v, want %v (the oldest go first, the rest stay)", i, ok, want)
		}
	}
	if _, ok := c.Get("4", now.Add(time.Second)); ok {
		t.Fatal("entry outlived its expiry")
	}
	// A get makes an entry the most recent: 2 stays when 5 comes in, 3 goes.
	c.Put("6", struct{}{}, time.Time{})
	c.Get("2", now)
	c.Put("5", struct{}{}, time.Time{})
	if _, ok := c.Get("3", now); ok {
		t.Fatal("the least recently used entry stayed")
	}
	if _, ok := c.Get("2", now); !ok {
		t.Fatal("a recently read entry was evicted")
	}
	c.Delete("2")
	if _, ok := c.Get("2", now); ok || c.Len() != 2 {
		t.Fatalf("after Delete: present=%v, len %d", ok, c.Len())
	}
	if _, ok := c.Get("5", now.Add(time.Hour)); !ok {
		t.Fatal("an entry without expiry expired")
	}
}
