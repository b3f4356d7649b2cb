package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestLostMarkRaisedTwiceFences: X debited S (mark <gen>#1.<X's id>), S's node went back past
// that debit, and Y, whose view of S is older, debited S twice (<gen>#2.<Y's second id>). X's
// next reservation on S meets a higher count whose history lacks X's mark ({13, mark, 0}):
// X's debit was lost. X must fence the activity, not only refuse its own request, or Y keeps
// selling S, whose units X's lost debit already moved and sold elsewhere.
func TestLostMarkRaisedTwiceFences(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 8, 1, 2), Options{}) // four units per shard
		home0, home1 := usersByHome(x, 12, 2)
		src := Shard(a.ID, 0, 1)
		reserve := func(st *Store, name, u string) { t.Helper(); mustReserve(ctx, t, st, name, a.ID, u) }
		n0 := 0
		next0 := func() string { n0++; return home0[n0-1] }
		for i := 0; i < 4; i++ { // X sells shard 0 out
			reserve(x, "X", next0())
		}
		goBack := snapshotShard(t, rdb, src)
		reserve(x, "X", next0()) // X debits S
		xMark, _ := rdb.Get(ctx, src.Gen()).Result()
		if !strings.Contains(xMark, "#1.") {
			t.Fatalf("S's mark after X's debit is %q", xMark)
		}
		goBack() // S loses X's debit; shard 0 keeps the credit
		// Y sells shard 0 (the rest of X's credit, then units Y debits from S) until S's
		// mark was raised twice by Y.
		untilRaisedTwice(ctx, t, rdb, src, func() bool { return n0 < len(home0) }, func() { reserve(y, "Y", next0()) })
		// X meets S: its mark is not in S's history, the script says so.
		res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X reserved on S, which lost X's debit: %+v", res)
		}
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
		}
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Errorf("X met S without its own debit's mark in S's history and answered ErrRecovering, but did not fence the activity (meta gen %q)", g)
		}
		if res, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[1], Quantity: 1}); err == nil && res.Code == Reserved {
			t.Errorf("Y sold %s on S after X met S's loss: X did not fence", res.ReservationID)
		}
	})
}

// untilRaisedTwice calls sell (Y's reservation) until shard src's mark was raised twice (it
// names count 2), and fails the test when more reports false before.
func untilRaisedTwice(ctx context.Context, t *testing.T, rdb redis.UniversalClient, src ShardKeys, more func() bool, sell func()) {
	t.Helper()
	for {
		m, _ := rdb.Get(ctx, src.Gen()).Result()
		if strings.Contains(m, "#2.") {
			return
		}
		if !more() {
			t.Fatalf("Y never debited S twice (mark %q)", m)
		}
		sell()
	}
}

// TestInFlightCallForgetsOwnDebit: a reservation of X on S carries the mark X recorded when
// it was built (<gen>); meanwhile X's own debit raises S to <gen>#1.<X's id> and X records
// it; S's node goes back past that debit and Y debits S twice (<gen>#2.<Y's id>). The
// reservation's answer is {13, <gen>#2.<Y's id>, 1}: its carried mark is an ancestor of Y's,
// but X's record is not, and must not be replaced by it: X's next reservation on S must find
// its own debit lost. The late answer is given by calling meetMark with it.
func TestInFlightCallForgetsOwnDebit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 8, 1, 2), Options{})
		home0, home1 := usersByHome(x, 12, 1)
		src := Shard(a.ID, 0, 1)
		reserve := func(st *Store, name, u string) { t.Helper(); mustReserve(ctx, t, st, name, a.ID, u) }
		x.mu.RLock()
		e := x.acts[a.ID]
		x.mu.RUnlock()
		l := e.layout.Load()
		inFlight := *l.mark(1, e) // the mark a reservation built now carries for S
		seen := l.seen(1)
		n0 := 0
		next0 := func() string { n0++; return home0[n0-1] }
		for i := 0; i < 4; i++ {
			reserve(x, "X", next0())
		}
		goBack := snapshotShard(t, rdb, src)
		reserve(x, "X", next0()) // X debits S and records the raised mark
		if m := *l.mark(1, e); !strings.Contains(m, "#1.") {
			t.Fatalf("X recorded %q for S after its debit", m)
		}
		goBack()
		untilRaisedTwice(ctx, t, rdb, src, func() bool { return n0 < len(home0) }, func() { reserve(y, "Y", next0()) })
		got, _ := rdb.Get(ctx, src.Gen()).Result()
		inHistory, _ := rdb.HExists(ctx, src.Stats(), "m:"+inFlight).Result()
		// The in-flight reservation's answer reaches X now.
		x.meetMark(ctx, e, l, 1, inFlight, got, seen, inHistory)
		res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
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
		x.mu.RLock()
		e := x.acts[a.ID]
		x.mu.RUnlock()
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
