//go:build integration

package inventory

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// BenchmarkReserve measures the reservation path on the real Redis: distinct users, stock
// that never runs out, one script call per reservation. It reports reservations/s and the
// Redis commands per reservation.
func BenchmarkReserve(b *testing.B) {
	for _, bk := range []struct {
		name string
		dial func(testing.TB) redis.UniversalClient
	}{{"standalone", testsvc.Redis}, {"cluster", testsvc.RedisCluster}} {
		for _, lim := range []struct {
			name   string
			rate   tokenbucket.Limit
			window time.Duration
			max    int
		}{{"user-limits", tokenbucket.Limit{Rate: 2, Burst: 4}, time.Minute, 10}, {"no-user-limits", tokenbucket.Limit{}, 0, 0}} {
			b.Run(bk.name+"/"+lim.name, func(b *testing.B) {
				rdb := bk.dial(b)
				var calls redishook.Counter
				rdb.AddHook(&calls)
				s := newStore(b, rdb, Options{})
				a := mustCreate(b, s, openActivity(b, 1_000_000_000, 1, 16))
				ctx := ctxT(b)
				var n atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(8) // 8 x GOMAXPROCS callers, about what 64 HTTP connections make
				calls.Reset()
				start := time.Now()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						u := "bench-" + strconv.FormatInt(n.Add(1), 10)
						r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1,
							UserRate: lim.rate, Window: lim.window, WindowMax: lim.max})
						if err != nil || r.Code != Reserved {
							b.Errorf("reserve = %+v, %v", r, err)
							return
						}
					}
				})
				b.StopTimer()
				el := time.Since(start).Seconds()
				b.ReportMetric(float64(b.N)/el, "reservations/s")
				b.ReportMetric(float64(calls.Load())/float64(b.N), "redis-cmds/op")
			})
		}
	}
}

// BenchmarkBareScript is the ceiling to compare BenchmarkReserve with: one trivial EVALSHA
// per operation through the same client and concurrency.
func BenchmarkBareScript(b *testing.B) {
	rdb := testsvc.Redis(b)
	sc := redis.NewScript("return 1")
	ctx := ctxT(b)
	b.ReportAllocs()
	b.SetParallelism(8)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := sc.Run(ctx, rdb, []string{"sk:{bench}:x"}).Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
