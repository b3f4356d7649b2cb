package inventory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// staleRecord is the start of the tests of a record X keeps of S, shard 1, after an answer
// past another instance's debit: X and Y sell 40 units on two shards, limit 1, and S's home
// buyer home1[0] holds the limit through X.
type staleRecord struct {
	ctx    context.Context
	rdb    redis.UniversalClient
	x, y   *Store
	xe, ye *entry
	l      *layout // X's
	a      Activity
	src    ShardKeys // S
	home1  []string  // two buyers of S
}

func newStaleRecord(t *testing.T, rdb redis.UniversalClient, xOpts Options) *staleRecord {
	t.Helper()
	ctx := ctxT(t)
	sc := &staleRecord{ctx: ctx, rdb: rdb}
	sc.x, sc.y, sc.a = twoInstances(ctx, t, rdb, openActivity(t, 40, 1, 2), xOpts) // 20 units per shard
	sc.xe, sc.ye = mustEntry(ctx, t, sc.x, sc.a.ID), mustEntry(ctx, t, sc.y, sc.a.ID)
	sc.l = sc.xe.layout.Load()
	sc.src = Shard(sc.a.ID, 0, 1)
	_, sc.home1 = usersByHome(sc.x, 0, 2)
	mustReserve(ctx, t, sc.x, "X", sc.a.ID, sc.home1[0]) // home1[0] holds the limit on S
	return sc
}

// yDebit has Y debit S (a refill of shard 0 from it; the units credited to shard 0 stay there)
// and returns S's mark after the debit.
func (sc *staleRecord) yDebit(t *testing.T) string {
	t.Helper()
	moved, closed, err := sc.y.refill(context.Background(), sc.ye, sc.ye.layout.Load(), 0, 1)
	if err != nil || closed || moved < 1 {
		t.Errorf("Y's refill of shard 0 from S: moved %d, closed %v, %v", moved, closed, err)
	}
	m, _ := sc.rdb.Get(context.Background(), sc.src.Gen()).Result()
	return m
}

// wantFenced has S's node go back (goBack) past Y's debit, whose mark is lost, and X reserve
// for S's second buyer: refused with ErrRecovering, never a unit sold twice (sold units sold
// before).
func (sc *staleRecord) wantFenced(t *testing.T, goBack func(), lost string, sold int) {
	t.Helper()
	rec := *sc.l.mark(1, sc.xe)
	goBack() // shard 0 keeps the credit
	stock0, _ := sc.rdb.Get(sc.ctx, Shard(sc.a.ID, 0, 0).Stock()).Int64()
	stock1, _ := sc.rdb.Get(sc.ctx, sc.src.Stock()).Int64()
	res, err := sc.x.Reserve(sc.ctx, ReserveRequest{ActivityID: sc.a.ID, UserID: sc.home1[1], Quantity: 1})
	if err == nil && (res.Code == Reserved || res.Code == Replayed) {
		t.Fatalf("X reserved %s on S, which lost Y's debit %q that X had called S past (X's record %q): shards hold %d + %d units for a stock of 40 with %d sold",
			res.ReservationID, lost, rec, stock0, stock1, sold)
	}
	if !errors.Is(err, ErrRecovering) {
		t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
	}
}

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
		sc := newStaleRecord(t, rdb, Options{})
		x, a, home1 := sc.x, sc.a, sc.home1
		goBack := snapshotShard(t, rdb, sc.src)
		yMark := sc.yDebit(t)
		if !strings.Contains(yMark, "#1.") {
			t.Fatalf("S's mark after Y's debit is %q", yMark)
		}
		// X calls S after Y's debit: nothing sold (the buyer's limit).
		res, err := x.Reserve(sc.ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if err != nil || res.Code != AlreadyPurchased {
			t.Fatalf("X reserve %s again: %+v %v, want AlreadyPurchased", home1[0], res, err)
		}
		t.Logf("X's record of S after calling it past Y's debit: %q (S holds %q)", *sc.l.mark(1, sc.xe), yMark)
		sc.wantFenced(t, goBack, yMark, 2)
		if g, _ := rdb.HGet(sc.ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Errorf("meta gen %q, want the fence", g)
		}
	})
}

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
		// 1: each call alone, in parallel (the same stale carried mark arises with batches:
		// the next batch is built before the previous batch's answers are recorded).
		sc := newStaleRecord(t, rdb, Options{ReserveBatch: 1})
		x, a, home1 := sc.x, sc.a, sc.home1
		y1 := sc.yDebit(t)
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
			if m := *sc.l.mark(1, sc.xe); m != y1 {
				t.Errorf("X's record of S after its first call %q, want %q", m, y1)
			}
			goBack = snapshotShard(t, rdb, sc.src) // S at Y's first debit
			y2 = sc.yDebit(t)                      // Y's second debit of S; shard 0 keeps the credit
		}))
		res, err := x.Reserve(context.WithValue(sc.ctx, raiseUnder{}, true), ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if !fired {
			t.Fatal("the hook never ran")
		}
		if err != nil || res.Code != AlreadyPurchased {
			t.Fatalf("X's second call: %+v %v, want AlreadyPurchased", res, err)
		}
		t.Logf("X called S on %q; X's record of S %q", y2, *sc.l.mark(1, sc.xe))
		sc.wantFenced(t, goBack, y2, 1)
	})
}
