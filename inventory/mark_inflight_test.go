package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestInFlightReserveAcrossOwnLostDebit: X recorded S's mark <gen>#1.<X's id> (its own
// debit) and builds a reservation on S carrying it. While that call is in flight, X debits S
// again (<gen>#2.<X's id2>, recorded: the refill's units are credited to shard 0 and stay
// there), S's node goes back past that debit, and Y debits S (<gen>#2.<Y's id>). The
// in-flight call reaches S: its carried mark is in S's history and of the same generation,
// but X's record (#2 of X) is not, and S holds again the units X's second debit moved to
// shard 0. Selling on S sells those units twice; the call must end with X finding its own
// debit lost (ErrRecovering, the activity fenced), as the refuse-and-retry path did
// (meetMark: the record moved under the call; sent again with it; not in S's history).
// Not on miniredis: its DUMP takes strings only, and S's xout hash is in the snapshot.
func TestInFlightReserveAcrossOwnLostDebit(t *testing.T) {
	forBackends(t, false, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 40, 1, 2), Options{}) // 20 units per shard
		xe := mustEntry(ctx, t, x, a.ID)
		ye := mustEntry(ctx, t, y, a.ID)
		l := xe.layout.Load()
		src := Shard(a.ID, 0, 1)
		refill := func(st *Store, e *entry, name string) {
			t.Helper()
			moved, closed, err := st.refill(context.Background(), e, e.layout.Load(), 0, 1)
			if err != nil || closed || moved < 1 {
				t.Fatalf("%s's refill of shard 0 from S: moved %d, closed %v, %v", name, moved, closed, err)
			}
		}
		refill(x, xe, "X") // X's first debit of S, recorded
		first := *l.mark(1, xe)
		if !strings.Contains(first, "#1.") {
			t.Fatalf("X recorded %q for S after its debit", first)
		}
		fired := false
		rdb.AddHook(raiseHook{sha: x.reserve.s.Hash(), raise: func() {
			if fired {
				return
			}
			fired = true
			// The call was built with X's record `first`; before it reaches S:
			goBack := snapshotShard(t, rdb, src)
			refill(x, xe, "X") // X's second debit of S, recorded; shard 0 keeps its credit
			if m := *l.mark(1, xe); !strings.Contains(m, "#2.") {
				t.Errorf("X recorded %q for S after its second debit", m)
			}
			goBack()           // S's node loses X's second debit
			refill(y, ye, "Y") // Y debits S from `first`: <gen>#2.<Y's id>
		}})
		_, home1 := usersByHome(x, 0, 1)
		res, err := x.Reserve(context.WithValue(ctx, raiseUnder{}, true), ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if !fired {
			t.Fatal("the hook never ran")
		}
		got, _ := rdb.Get(ctx, src.Gen()).Result()
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X reserved %s on S (mark %q), which lost X's own recorded debit (X's record %q; the call carried %q): the units that debit moved to shard 0 are sold from S too",
				res.ReservationID, got, *l.mark(1, xe), first)
		}
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering", res, err)
		}
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Errorf("X met S's loss of its own debit but did not fence the activity (meta gen %q)", g)
		}
	})
}

// TestInFlightReserveOnShardThatLostOwnDebit: as TestInFlightReserveAcrossOwnLostDebit
// without Y: S's node goes back past X's second debit and holds again exactly the mark the
// in-flight call carries. The script's mark check passes (the same mark), and the shard
// sells units the lost debit moved to shard 0. X must see on the answer that its record moved
// while the call was in flight and that S lost it, and fence (the protocol before the
// same-generation rule sold here too).
func TestInFlightReserveOnShardThatLostOwnDebit(t *testing.T) {
	forBackends(t, false, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		cat := &fakeCatalog{}
		x := newStore(t, rdb, Options{Catalog: cat})
		a := mustCreate(t, x, openActivity(t, 40, 1, 2)) // 20 units per shard
		cat.put(a)
		if err := x.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		xe := mustEntry(ctx, t, x, a.ID)
		l := xe.layout.Load()
		src := Shard(a.ID, 0, 1)
		refill := func() {
			t.Helper()
			moved, closed, err := x.refill(context.Background(), xe, xe.layout.Load(), 0, 1)
			if err != nil || closed || moved < 1 {
				t.Fatalf("X's refill of shard 0 from S: moved %d, closed %v, %v", moved, closed, err)
			}
		}
		refill()
		first := *l.mark(1, xe)
		fired := false
		rdb.AddHook(raiseHook{sha: x.reserve.s.Hash(), raise: func() {
			if fired {
				return
			}
			fired = true
			goBack := snapshotShard(t, rdb, src)
			refill() // X's second debit of S, recorded
			goBack() // S's node loses it: S holds `first` again
		}})
		_, home1 := usersByHome(x, 0, 1)
		res, err := x.Reserve(context.WithValue(ctx, raiseUnder{}, true), ReserveRequest{ActivityID: a.ID, UserID: home1[0], Quantity: 1})
		if !fired {
			t.Fatal("the hook never ran")
		}
		if err == nil && (res.Code == Reserved || res.Code == Replayed) {
			t.Fatalf("X answered %s on S, which lost X's own recorded debit (record %q, carried %q)", res.ReservationID, *l.mark(1, xe), first)
		}
		if !errors.Is(err, ErrRecovering) && !errors.Is(err, ErrNotDurable) {
			t.Fatalf("X reserve on S: %+v %v, want ErrRecovering or ErrNotDurable", res, err)
		}
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Errorf("X met S's loss of its own debit but did not fence the activity (meta gen %q)", g)
		}
		// The sale the script made is failed again: S's record of it is not a live reservation.
		var rid string
		for n := int64(1); n <= 2; n++ {
			rec, found, err := ReadRecord(ctx, rdb, src, n)
			if err != nil {
				t.Fatal(err)
			}
			if st := rec.Status; found && st != "FAILED" {
				rid = fmt.Sprintf("%d (%s)", n, st)
			}
		}
		if rid != "" {
			t.Errorf("S's reservation %s is live after X failed the sale", rid)
		}
	})
}
