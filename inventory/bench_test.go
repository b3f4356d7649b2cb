package inventory

import (
	"testing"
)

// BenchmarkActivity is the cached activity read.
func BenchmarkActivity(b *testing.B) {
	s := newStore(b, miniRedis(b), Options{})
	a := mustCreate(b, s, openActivity(b, 10, 1, 4))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := s.Activity(a.ID); !ok {
				b.Error("missing")
				return
			}
		}
	})
}
