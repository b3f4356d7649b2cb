//go:build integration

package app

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
)

// The sketches the funnel merges into Redis are read by Redis as its own HyperLogLogs: PFMERGE
// takes them and PFCOUNT answers exactly what the sketch's own count computes, also after
// merging two instances' sketches.
func TestHLLSketchMergesIntoRedis(t *testing.T) {
	for name, rdb := range testsvc.RedisServers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			key := "sk:{" + uniq(t, "hll") + "}:hll:tried"
			var a, b, union hllSketch
			for i := 0; i < 30_000; i++ {
				h := userHash64("u" + strconv.Itoa(i))
				union.add(h)
				if i%3 == 0 {
					a.add(h)
				} else {
					b.add(h)
				}
			}
			for _, s := range []*hllSketch{&a, &b} {
				if err := rdb.Set(ctx, key+":merge", s.dense(nil), 0).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.PFMerge(ctx, key, key, key+":merge").Err(); err != nil {
					t.Fatal(err)
				}
			}
			got, err := rdb.PFCount(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := union.count(); uint64(got) != want {
				t.Fatalf("PFCOUNT %d, the sketch counts %d", got, want)
			}
			if d := float64(got) - 30_000; d*d > 975*975 {
				t.Fatalf("PFCOUNT %d of 30000 distinct", got)
			}
			rdb.Del(ctx, key, key+":merge")
		})
	}
}

// Redis loses the funnel's distinct-user keys once traffic has stopped (a Redis back with
// less, between the sale and its archive): the instance's sketches still count everyone, and
// its next minute's check sends them again, so the report's distinct users are not 0. They
// were sent only when a register grew, so the counts stayed 0 and the archive froze them.
func TestTheFunnelSendsItsDistinctUsersAgainAfterRedisLostThem(t *testing.T) {
	rdb := testsvc.Redis(t)
	ctx := t.Context()
	f := newFunnel(rdb, userHash64, newFunnelMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler), time.Now)
	id := uniq(t, "funnel-lost")
	v := &inventory.ActivityView{Activity: inventory.Activity{ID: id, OpensAt: time.Now().Add(-time.Minute)}}
	af := f.activity(v)
	const users = 2000
	for i := 0; i < users; i++ {
		u := "u" + strconv.Itoa(i)
		af.attempt(f, u)
		if i%2 == 0 {
			af.answer(f, oAccepted, u, 1, time.Millisecond)
		}
	}
	tried, bought := inventory.FunnelUsers(id, "tried"), inventory.FunnelUsers(id, "bought")
	t.Cleanup(func() { rdb.Del(context.Background(), tried, bought, inventory.Funnel(id), inventory.FunnelTimes(id)) })
	counts := func() (int64, int64) {
		t.Helper()
		a, err1 := rdb.PFCount(ctx, tried).Result()
		b, err2 := rdb.PFCount(ctx, bought).Result()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return a, b
	}
	near := func(got, want int64) bool { return got > want*97/100 && got < want*103/100 }
	if err := f.flushActivity(ctx, af); err != nil {
		t.Fatal(err)
	}
	if a, b := counts(); !near(a, users) || !near(b, users/2) {
		t.Fatalf("after the first flush: tried %d, bought %d, want about %d and %d", a, b, users, users/2)
	}
	if err := rdb.Del(ctx, tried, bought).Err(); err != nil {
		t.Fatal(err)
	}
	// no traffic since; a minute on (the check's period)
	for i := 0; i < 2; i++ {
		af.expiredAt.Store(0)
		if err := f.flushActivity(ctx, af); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := counts(); !near(a, users) || !near(b, users/2) {
		t.Fatalf("after Redis lost them and two flushes: tried %d, bought %d, want about %d and %d", a, b, users, users/2)
	}
}
