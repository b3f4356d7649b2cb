//go:build integration

package inventory

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// usecPerCall reads INFO commandstats' usec_per_call of cmd (Redis's own time per call).
func usecPerCall(ctx context.Context, rdb redis.UniversalClient, cmd string) float64 {
	info, _ := rdb.Info(ctx, "commandstats").Result()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":"); ok {
			for _, f := range strings.Split(v, ",") {
				if x, ok := strings.CutPrefix(f, "usec_per_call="); ok {
					n, _ := strconv.ParseFloat(x, 64)
					return n
				}
			}
		}
	}
	return 0
}

// BenchmarkReserveDurability measures the reservation path in each durability mode, each on a
// private Redis of its own, with the ceiling of that same server measured in the same run:
// parallel PINGs (the round trip with no work) and, as the ratio reported, reservations/s over
// PINGs/s. usec/script is Redis's own time per reservation script (INFO commandstats), which
// excludes the fsync and the wait for the replica; the difference shows in the ratio.
func BenchmarkReserveDurability(b *testing.B) {
	for _, m := range []struct {
		name string
		args []string
		dur  Durability
		repl bool
	}{
		{name: "none", args: []string{"--appendonly", "no"}},
		{name: "aof-everysec", args: []string{"--appendonly", "yes", "--appendfsync", "everysec"}, dur: Durability{AOF: true}},
		{name: "aof-always", args: []string{"--appendonly", "yes", "--appendfsync", "always"}, dur: Durability{AOF: true}},
		{name: "replicas-1", args: []string{"--appendonly", "no"}, dur: Durability{Replicas: 1}, repl: true},
	} {
		b.Run(m.name, func(b *testing.B) {
			addr := testsvc.PrivateRedis(b, m.args...)
			if m.repl {
				testsvc.PrivateReplica(b, addr)
			}
			rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128, DisableIdentity: true})
			b.Cleanup(func() { rdb.Close() })
			ctx := ctxT(b)
			if _, err := CheckDurability(ctx, rdb, m.dur); err != nil && m.repl {
				testwait.Eventually(b, 10*time.Second, func() bool { _, err := CheckDurability(ctx, rdb, m.dur); return err == nil }, "replica online")
			}
			s := newStore(b, rdb, Options{Durability: m.dur})
			a := mustCreate(b, s, openActivity(b, 1_000_000_000, 1, 16))
			b.SetParallelism(8)
			// The ceiling: parallel PINGs on the same server, as many as reservations.
			pstart := time.Now()
			var pn atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pn.Add(1)
					if err := rdb.Ping(ctx).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			pingRate := float64(pn.Load()) / time.Since(pstart).Seconds()
			rdb.ConfigResetStat(ctx)
			var n atomic.Int64
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					u := fmt.Sprintf("bench-%d", n.Add(1))
					r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
					if err != nil || r.Code != Reserved {
						b.Errorf("reserve = %+v, %v", r, err)
						return
					}
				}
			})
			b.StopTimer()
			rate := float64(b.N) / time.Since(start).Seconds()
			b.ReportMetric(rate, "reservations/s")
			b.ReportMetric(pingRate, "pings/s")
			b.ReportMetric(rate/pingRate, "of-ping-ceiling")
			b.ReportMetric(usecPerCall(ctx, rdb, "evalsha"), "usec/script")
		})
	}
}
