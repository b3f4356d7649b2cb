//go:build integration

package limiter

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

var benchIPs = func() []string {
	ips := make([]string, 1024)
	for i := range ips {
		ips[i] = "10.7." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	return ips
}()

// BenchmarkAllow measures one decision on the real Redis, in parallel, and reports the Redis
// calls per decision (counted by a client hook).
func BenchmarkAllow(b *testing.B) {
	big := tokenbucket.Limit{Rate: 1e9, Burst: 1e9}
	leased := Request{Global: big, Campaign: big, CampaignID: "c", Activity: big, ActivityID: "a",
		Channel: big, ChannelName: "web", UserKey: "00000000000000ff"}
	cases := []struct {
		name     string
		req      Request
		ip       bool
		remember bool
		degraded bool
		rejected bool // the activity budget is empty: every decision is a local 429
	}{
		{name: "leased-4-dims", req: leased},
		{name: "leased-4-dims+ip", req: leased, ip: true},
		{name: "remembered-user", req: leased, remember: true},
		{name: "degraded-local", req: leased, ip: true, degraded: true},
		{name: "leased-rejected", req: Request{Global: big, Activity: tokenbucket.Limit{Rate: 0.001, Burst: 1},
			ActivityID: "a429", UserKey: "00000000000000ff"}, rejected: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			rdb := testsvc.Redis(b).(*redis.Client)
			calls := &redishook.Counter{}
			rdb.AddHook(calls)
			l := newTestLimiter(b, rdb, nil, Options{})
			r := c.req
			r.Fallback.Global = big
			if c.ip {
				r.IP = big
			}
			if c.remember {
				l.Remember("", r.UserKey, "", 1<<40)
			}
			if c.degraded {
				l.degrade("benchmark", nil)
			}
			ipKeys := make([]string, len(benchIPs)) // the keys the admission step hands over
			for i, ip := range benchIPs {
				ipKeys[i] = ipKeyOf(l, ip)
			}
			_, _ = l.Allow(context.Background(), r) // load scripts, first lease
			if c.rejected {
				_, _ = l.Allow(context.Background(), r) // Redis says empty: local from now on
			}
			var seq atomic.Int64
			start := calls.Load()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := r
				i := int(seq.Add(1))
				for pb.Next() {
					i++
					r.IPKey = ipKeys[i%len(ipKeys)]
					d, err := l.Allow(context.Background(), r)
					if err != nil || d.Allowed == (c.remember || c.rejected) {
						b.Errorf("unexpected decision %+v, %v", d, err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(calls.Load()-start)/float64(b.N), "redis-calls/op")
		})
	}
}
