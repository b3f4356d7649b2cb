package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestBareGenerationAnswerWithoutSaleKeepsStaleRecord: X's record of S is the generation
// itself. Y debits S (<gen>#1.<Y's id>; the units are credited to shard 0 and stay there).
// X then calls S for a buyer who already holds the per-user limit: the script answers
// ALREADY_PURCHASED on a later mark of X's, which it accepts, and the answer carries that
// mark, so X records it (refused, as the script did once, X recorded it as well). S's node
// then goes back past Y's debit (before X's next refresh): S holds <gen> and the units Y
// moved to shard 0 again. X's next reservation on S carries Y's mark, which S's history no
// longer holds: refused, fenced. Without the recorded mark X carried <gen>, matched and sold
// the moved units a second time (found by review: 48 units in the shards for a stock of 40).
func TestBareGenerationAnswerWithoutSaleKeepsStaleRecord(t *testing.T) {
	forBackends(t, false, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 40, 1, 2), Options{}) // 20 units per shard, limit 1
		xe := mustEntry(ctx, t, x, a.ID)
		ye := mustEntry(ctx, t, y, a.ID)
		l := xe.layout.Load()
		src := Shard(a.ID, 0, 1)
		_, home1 := usersByHome(x, 0, 2)
		mustReserve(ctx, t, x, "X", a.ID, home1[0]) // home1[0] holds the limit on S
		goBack := snapshotShard(t, rdb, src)
		moved, closed, err := y.refill(context.Background(), ye, ye.layout.Load(), 0, 1) // Y debits S
		if err != nil || closed || moved < 1 {
			t.Fatalf("Y's refill of shard 0 from S: moved %d, closed %v, %v", moved, closed, err)
		}
		yMark, _ := rdb.Get(ctx, src.Gen()).Result()
		if !strings.Contains(yMark, "#1.") {
			t.Fatalf("S's mark after Y's debit is %q", yMark)
		}
		// X calls S after Y's debit: nothing sold (the buyer's limit).
		res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if err != nil || res.Code != AlreadyPurchased {
			t.Fatalf("X reserve %s again: %+v %v, want AlreadyPurchased", home1[0], res, err)
		}
		t.Logf("X's record of S after calling it past Y's debit: %q (S holds %q)", *l.mark(1, xe), yMark)
		goBack() // S's node loses Y's debit; shard 0 keeps the credit
		stock0, _ := rdb.Get(ctx, Shard(a.ID, 0, 0).Stock()).Int64()
		stock1, _ := rdb.Get(ctx, src.Stock()).Int64()
		res, err = x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[1], Quantity: 1})
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X reserved %s on S, which lost Y's debit X had called S past (X's record %q, Y's mark %q): shards hold %d + %d units for a stock of 40 with 2 sold",
				res.ReservationID, *l.mark(1, xe), yMark, stock0, stock1)
		}
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
		}
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Errorf("meta gen %q, want the fence", g)
		}
	})
}
