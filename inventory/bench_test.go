package inventory

import (
	"github.com/seckill/seckill/internal/redishook"
	"testing"
)

// BenchmarkReserveSoldOut is the known-sold-out path: no Redis call, no allocation.
func BenchmarkReserveSoldOut(b *testing.B) {
	rdb := miniRedis(b)
	var calls redishook.Counter
	rdb.AddHook(&calls)
	s := newStore(b, rdb, Options{})
	a := mustCreate(b, s, openActivity(b, 0, 1, 2))
	ctx := ctxT(b)
	if err := s.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	if v, _ := s.Activity(a.ID); !v.SoldOut {
		b.Fatal("not sold out")
	}
	req := ReserveRequest{ActivityID: a.ID, UserID: "u", Quantity: 1}
	calls.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r, _ := s.Reserve(ctx, req); r.Code != SoldOut {
				b.Errorf("got %v", r.Code)
				return
			}
		}
	})
	b.ReportMetric(float64(calls.Load())/float64(b.N), "redis-cmds/op")
}

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
