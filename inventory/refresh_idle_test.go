package inventory

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// hlenCounter adds to rdb a counter of its HLEN commands (the refresh reads xout with them).
func hlenCounter(rdb redis.UniversalClient) *redishook.Counter {
	c := &redishook.Counter{Match: func(_ context.Context, cmd redis.Cmder) bool { return cmd.Name() == "hlen" }}
	rdb.AddHook(c)
	return c
}

// TestIdleRefreshReadsNoTransitWithStock is issue 46 item 6's part the review kept: after
// reshard flips the refresh read HLEN of every shard's xout of every layout kept until it
// retires (RetireAfter, 5 min by default), four times a second, on every idle instance (twelve
// flips of 1024/1023 shards: 53,200 of its 79,000 commands/s). The transit hashes decide only
// whether an activity whose current shards all read 0 is sold out: while the current layout
// holds stock, a refresh pass reads none.
func TestIdleRefreshReadsNoTransitWithStock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{Namespace: uniqueID(t), RetireAfter: 10 * time.Minute}, openActivity(t, 100, 1, 3))
		for i := 1; i <= 6; i++ {
			if err := s.Reshard(ctx, a.ID, []int{3, 2}[i%2]); err != nil {
				t.Fatal(err)
			}
		}
		if m := rdb.HGetAll(ctx, Meta(a.ID)).Val(); m["epoch"] != "6" || strings.Count(m["layouts"], ",") != 6 {
			t.Fatalf("meta epoch %q layouts %q: want epoch 6 and all 7 layouts kept", m["epoch"], m["layouts"])
		}
		hlen := hlenCounter(rdb)
		const passes = 8
		for range passes {
			mustRefresh(ctx, t, s)
		}
		if n := hlen.Load(); n != 0 {
			t.Errorf("%d HLEN over %d refresh passes of an activity with stock and 6 old layouts, want 0", n, passes)
		}
		if v, ok := s.Activity(a.ID); !ok || v.SoldOut || v.Remaining != a.Stock {
			t.Fatalf("activity %+v, want %d remaining, not sold out", v, a.Stock)
		}
	})
}

// TestRefreshMarksSoldOutOnlyWhenNothingMoves: the refresh marks an activity sold out when
// every current shard reads 0 and no transit hash of any layout holds an entry, and not while
// a unit is in transit (debited, not yet credited), whatever the transit reads cost.
func TestRefreshMarksSoldOutOnlyWhenNothingMoves(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{Namespace: uniqueID(t), RetireAfter: 10 * time.Minute}, openActivity(t, 1, 1, 1))
		if err := s.Reshard(ctx, a.ID, 2); err != nil {
			t.Fatal(err)
		}
		home := HomeShard(s.UserHash("late"), 2)
		k, src := Shard(a.ID, 1, home), Shard(a.ID, 1, 1-home)
		rdb.Set(ctx, k.Stock(), 0, 0)
		rdb.Set(ctx, src.Stock(), 1, 0)
		d, err := s.mover.debit(ctx, src, k, "moving-1", 1, "", 0)
		if err != nil || d.closed || d.units != 1 {
			t.Fatalf("debit = %d, %v, %v", d.units, d.closed, err)
		}
		hlen := hlenCounter(rdb)
		if v, _ := refreshed(ctx, t, s, a.ID); v.SoldOut {
			t.Fatalf("after a refresh with one unit in transit: %+v, want not sold out", v)
		}
		if hlen.Load() == 0 {
			t.Fatal("the refresh read no transit hash with every current shard at 0")
		}
		if n, err := s.Recover(ctx, a.ID, 0); err != nil || n != 1 {
			t.Fatalf("recover = %d, %v; want the move finished", n, err)
		}
		if v, _ := refreshed(ctx, t, s, a.ID); v.SoldOut || v.Remaining != 1 {
			t.Fatalf("after the unit landed: %+v, want 1 remaining, not sold out", v)
		}
		rdb.Set(ctx, k.Stock(), 0, 0) // the unit sold elsewhere, as far as this instance knows
		if v, _ := refreshed(ctx, t, s, a.ID); !v.SoldOut {
			t.Fatalf("every shard 0 and nothing in transit: %+v, want sold out", v)
		}
	})
}

// landBeforeHLen adds to rdb a hook that, once the returned switch is armed, runs land before
// the first pipeline holding an HLEN (the refresh's transit reads) goes out, and disarms.
func landBeforeHLen(rdb redis.UniversalClient, land func(ctx context.Context)) (armed *atomic.Bool) {
	armed = new(atomic.Bool)
	rdb.AddHook(redishook.Hook{Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		for _, c := range cmds {
			if c.Name() == "hlen" && armed.CompareAndSwap(true, false) {
				land(ctx)
				break
			}
		}
		return next(ctx, cmds)
	}})
	return armed
}

// TestTransferLandingBetweenTheRefreshReadsIsNotSoldOut is the review's finding 4 on the
// refresh's two reads: the stock read finds every current shard at 0 while the last unit is
// in transit, then the transfer credits its target and deletes its transit entry, then the
// transit read finds nothing. The unit is on a shard and for sale: the refresh must not mark
// the activity sold out (before, it did, until the next pass 250 ms later).
func TestTransferLandingBetweenTheRefreshReadsIsNotSoldOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{Namespace: uniqueID(t)}, openActivity(t, 1, 1, 2))
		_, src := unitInTransit(t, s, rdb, a, "late", 0, 1, "landing-1")
		armed := landBeforeHLen(rdb, func(ctx context.Context) {
			if err := s.mover.Settle(ctx, src, "landing-1", ""); err != nil {
				t.Errorf("settle between the refresh's reads: %v", err)
			}
		})
		armed.Store(true)
		mustRefresh(ctx, t, s)
		if armed.Load() {
			t.Fatal("the refresh sent no transit read: the test does not test the race")
		}
		if n := rdb.HLen(ctx, src.XOut()).Val(); n != 0 {
			t.Fatalf("%d entries still in transit, want the move finished", n)
		}
		if v, _ := s.Activity(a.ID); v.SoldOut {
			t.Fatalf("a transfer that landed between the refresh's stock and transit reads got the activity marked sold out: %+v", v)
		}
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "late", Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("reserve the landed unit = %+v, %v", r, err)
		}
	})
}
