package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestLaterAnswerOfAnOlderCallLeavesStaleRecord: two calls of X on S both carry the
// generation <gen> (built before either answer arrived: parallel calls, or the next batch
// built while the previous batch's answers are decided). Y debited S (<gen>#1.<Y>): the
// first call answers ALREADY_PURCHASED on it and X records <gen>#1.<Y>. Y debits S again
// (<gen>#2.<Y2>, the units credited to shard 0), then the second call reaches S and answers
// ALREADY_PURCHASED on <gen>#2.<Y2>. The record is no longer the mark that call carried:
// X must still record <gen>#2.<Y2> (S's history holds <gen>#1.<Y>). S's node then goes back
// past Y's second debit and holds <gen>#1.<Y> again: X's next call carries <gen>#2.<Y2>, is
// refused and fences. Skipping the answer (found by review) left the record at <gen>#1.<Y>,
// X's next call matched exactly and sold the units Y's second debit moved to shard 0 a
// second time.
func TestLaterAnswerOfAnOlderCallLeavesStaleRecord(t *testing.T) {
	forBackends(t, false, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		// 1: each call alone, in parallel (the same stale carried mark arises with batches:
		// the next batch is built before the previous batch's answers are recorded).
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 40, 1, 2), Options{ReserveBatch: 1}) // 20 units per shard, limit 1
		xe := mustEntry(ctx, t, x, a.ID)
		ye := mustEntry(ctx, t, y, a.ID)
		l := xe.layout.Load()
		src := Shard(a.ID, 0, 1)
		_, home1 := usersByHome(x, 0, 2)
		mustReserve(ctx, t, x, "X", a.ID, home1[0]) // home1[0] holds the limit on S
		yDebit := func() string {
			t.Helper()
			moved, closed, err := y.refill(context.Background(), ye, ye.layout.Load(), 0, 1)
			if err != nil || closed || moved < 1 {
				t.Errorf("Y's refill of shard 0 from S: moved %d, closed %v, %v", moved, closed, err)
			}
			m, _ := rdb.Get(context.Background(), src.Gen()).Result()
			return m
		}
		y1 := yDebit()
		if !strings.Contains(y1, "#1.") {
			t.Fatalf("S's mark after Y's debit is %q", y1)
		}
		var goBack func()
		var y2 string
		fired := false
		rdb.AddHook(raiseHook(x.reserve.s.Hash(), func() {
			if fired {
				return
			}
			fired = true
			// The second call was built with <gen>; before it reaches S, the first call:
			res, err := x.Reserve(context.Background(), ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
			if err != nil || res.Code != AlreadyPurchased {
				t.Errorf("X's first call: %+v %v, want AlreadyPurchased", res, err)
			}
			if m := *l.mark(1, xe); m != y1 {
				t.Errorf("X's record of S after its first call %q, want %q", m, y1)
			}
			goBack = snapshotShard(t, rdb, src) // S at Y's first debit
			y2 = yDebit()                       // Y's second debit of S; shard 0 keeps the credit
		}))
		res, err := x.Reserve(context.WithValue(ctx, raiseUnder{}, true), ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if !fired {
			t.Fatal("the hook never ran")
		}
		if err != nil || res.Code != AlreadyPurchased {
			t.Fatalf("X's second call: %+v %v, want AlreadyPurchased", res, err)
		}
		rec := *l.mark(1, xe)
		t.Logf("X called S on %q; X's record of S %q", y2, rec)
		goBack() // S's node loses Y's second debit; shard 0 keeps its credit
		stock0, _ := rdb.Get(ctx, Shard(a.ID, 0, 0).Stock()).Int64()
		stock1, _ := rdb.Get(ctx, src.Stock()).Int64()
		res, err = x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[1], Quantity: 1})
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X reserved %s on S, which lost Y's debit %q that X had called S past (X's record %q): shards hold %d + %d units for a stock of 40 with 1 sold",
				res.ReservationID, y2, rec, stock0, stock1)
		}
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
		}
	})
}
