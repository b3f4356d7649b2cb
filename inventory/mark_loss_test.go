package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// lostDebit is the start of the tests of a debit X made on S, shard 1, and S's node lost: X
// and Y sell 8 units on two shards (four each), limit 1; home0 are buyers of shard 0, home1
// of S.
type lostDebit struct {
	ctx          context.Context
	rdb          redis.UniversalClient
	x, y         *Store
	a            Activity
	src          ShardKeys // S
	home0, home1 []string
	n0           int // buyers of home0 served
}

func newLostDebit(t *testing.T, rdb redis.UniversalClient, n1 int) *lostDebit {
	t.Helper()
	sc := &lostDebit{ctx: ctxT(t), rdb: rdb}
	sc.x, sc.y, sc.a = twoInstances(sc.ctx, t, rdb, openActivity(t, 8, 1, 2), Options{})
	sc.home0, sc.home1 = usersByHome(sc.x, 12, n1)
	sc.src = Shard(sc.a.ID, 0, 1)
	return sc
}

// sell0 reserves one unit for the next buyer of shard 0 through st (instance name).
func (sc *lostDebit) sell0(t *testing.T, st *Store, name string) {
	t.Helper()
	sc.n0++
	mustReserve(sc.ctx, t, st, name, sc.a.ID, sc.home0[sc.n0-1])
}

// xDebitsS has X sell shard 0 out, then debit S for its next buyer; goBack returns S to
// before that debit.
func (sc *lostDebit) xDebitsS(t *testing.T) (goBack func()) {
	t.Helper()
	for i := 0; i < 4; i++ {
		sc.sell0(t, sc.x, "X")
	}
	goBack = snapshotShard(t, sc.rdb, sc.src)
	sc.sell0(t, sc.x, "X")
	return goBack
}

// ySellsUntilRaisedTwice has Y sell shard 0 (the rest of X's credit, then units Y debits from
// S) until S's mark was raised twice (it names count 2), and fails the test when shard 0's
// buyers run out before.
func (sc *lostDebit) ySellsUntilRaisedTwice(t *testing.T) {
	t.Helper()
	for {
		m, _ := sc.rdb.Get(sc.ctx, sc.src.Gen()).Result()
		if strings.Contains(m, "#2.") {
			return
		}
		if sc.n0 >= len(sc.home0) {
			t.Fatalf("Y never debited S twice (mark %q)", m)
		}
		sc.sell0(t, sc.y, "Y")
	}
}

// TestLostMarkRaisedTwiceFences: X debited S (mark <gen>#1.<X's id>), S's node went back past
// that debit, and Y, whose view of S is older, debited S twice (<gen>#2.<Y's second id>). X's
// next reservation on S meets a higher count whose history lacks X's mark ({13, mark, 0}):
// X's debit was lost. X must fence the activity, not only refuse its own request, or Y keeps
// selling S, whose units X's lost debit already moved and sold elsewhere.
func TestLostMarkRaisedTwiceFences(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		sc := newLostDebit(t, rdb, 2)
		ctx, x, y, a, src := sc.ctx, sc.x, sc.y, sc.a, sc.src
		goBack := sc.xDebitsS(t)
		xMark, _ := rdb.Get(ctx, src.Gen()).Result()
		if !strings.Contains(xMark, "#1.") {
			t.Fatalf("S's mark after X's debit is %q", xMark)
		}
		goBack() // S loses X's debit; shard 0 keeps the credit
		sc.ySellsUntilRaisedTwice(t)
		// X meets S: its mark is not in S's history, the script says so.
		res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: sc.home1[0], Quantity: 1})
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X reserved on S, which lost X's debit: %+v", res)
		}
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
		}
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Errorf("X met S without its own debit's mark in S's history and answered ErrRecovering, but did not fence the activity (meta gen %q)", g)
		}
		if res, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: sc.home1[1], Quantity: 1}); err == nil && res.Code == Reserved {
			t.Errorf("Y sold %s on S after X met S's loss: X did not fence", res.ReservationID)
		}
	})
}

// TestInFlightCallForgetsOwnDebit: a reservation of X on S carries the mark X recorded when
// it was built (<gen>); meanwhile X's own debit raises S to <gen>#1.<X's id> and X records
// it; S's node goes back past that debit and Y debits S twice (<gen>#2.<Y's id>). The
// reservation's answer is {13, <gen>#2.<Y's id>, 1}: its carried mark is an ancestor of Y's,
// but X's record is not, and must not be replaced by it: X's next reservation on S must find
// its own debit lost. The late answer is given by calling meetMark with it.
func TestInFlightCallForgetsOwnDebit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		sc := newLostDebit(t, rdb, 1)
		ctx, x, a, src := sc.ctx, sc.x, sc.a, sc.src
		e := mustEntry(ctx, t, x, a.ID)
		l := e.layout.Load()
		inFlight := *l.mark(1, e) // the mark a reservation built now carries for S
		seen := l.seen(1)
		goBack := sc.xDebitsS(t) // X records the raised mark
		if m := *l.mark(1, e); !strings.Contains(m, "#1.") {
			t.Fatalf("X recorded %q for S after its debit", m)
		}
		goBack()
		sc.ySellsUntilRaisedTwice(t)
		got, _ := rdb.Get(ctx, src.Gen()).Result()
		inHistory, _ := rdb.HExists(ctx, src.Stats(), "m:"+inFlight).Result()
		// The in-flight reservation's answer reaches X now.
		x.meetMark(ctx, e, l, 1, inFlight, got, seen, inHistory)
		res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: sc.home1[0], Quantity: 1})
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X reserved %s on S, which lost X's own debit (X's record now %q)", res.ReservationID, *l.mark(1, e))
		}
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
		}
	})
}

// TestDebitRetriedAfterItRan: go-redis sends a command again when the connection broke
// before the reply (app.go MaxRetries 1). A debit sent again under the id of a debit that ran
// must answer that debit, not take the units a second time under the same id (the second
// transit entry overwrote the first, whose units were then never credited). The resend is
// given by running the debit once before debitChecked.
func TestDebitRetriedAfterItRan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, _, a := oneInstance(ctx, t, rdb, openActivity(t, 16, 1, 2), Options{})
		e := mustEntry(ctx, t, x, a.ID)
		l := e.layout.Load()
		src, home := l.keys[1], l.keys[0]
		before, _ := rdb.Get(ctx, src.Stock()).Int64()
		id := x.mover.newID("tX")
		// First run: Redis ran it, the reply was lost.
		if _, err := x.mover.debit(ctx, src, home, id, 1, *l.mark(1, e), l.floorOf(1)); err != nil {
			t.Fatal(err)
		}
		// go-redis's resend, as debitChecked sees it.
		if _, err := x.debitChecked(ctx, e, l, 1, home, id, 1); err != nil {
			t.Fatal(err)
		}
		after, _ := rdb.Get(ctx, src.Stock()).Int64()
		v, _ := rdb.HGet(ctx, src.XOut(), id).Result()
		var inTransit int64
		fmt.Sscanf(v, "%d|", &inTransit)
		if before-after != inTransit {
			t.Errorf("S's stock fell by %d but transit holds %d under %s (%q): %d units debited twice under one id and never credited",
				before-after, inTransit, id, v, before-after-inTransit)
		}
	})
}
