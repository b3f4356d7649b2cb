package inventory

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestCounterRolledBackIsNoticed: a Redis that came back rolled back (AOF everysec: the last
// second lost) keeps the activity's generation, so nothing else tells it from a healthy one;
// its shard's reservation counter went back, and the next reservation gets a number this
// instance already handed out (the buyer of the lost reservation holds that id). The instance
// must not take that reservation at all (its id is another buyer's, and a journal entry under
// it would become an order that confirms the lost 202: loss simulation seeds 4, 7, 9), and
// must fence the activity so no instance sells until a restore: that reservation and every
// later one are refused (ErrRecovering) and take nothing.
func TestCounterRolledBackIsNoticed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, cat, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		reserveAll(ctx, t, s, a.ID, "u1", "u2", "u3")
		k := Shard(a.ID, 0, 0)
		if err := rdb.Set(ctx, k.Seq(), 1, 0).Err(); err != nil { // the rollback: u2's and u3's numbers are free again
			t.Fatal(err)
		}
		unmoved := shardUnmoved(ctx, t, rdb, k)
		res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u4", Quantity: 1})
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("a reservation on a counter below a number handed out: %+v %v, want ErrRecovering, nothing taken", res, err)
		}
		for _, st := range []*Store{s, newStore(t, rdb, Options{Catalog: cat})} {
			mustRefresh(ctx, t, st)
			if _, err := st.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u5", Quantity: 1}); !errors.Is(err, ErrRecovering) {
				t.Fatalf("reserve after the rollback was noticed: %v, want ErrRecovering", err)
			}
		}
		unmoved("after the rollback was met: the reused number took a unit or has an entry")
	})
}

// TestRefillDebitRolledBackIsNoticed: a refill took a shard's units (debit) and credited them
// to another shard, which sold them; then the source's node lost its last writes (a Cluster
// master failed over to a replica that lagged) while the target's node kept the credit. The
// source has its units back and had never sold, so no reservation number is handed out again
// (loss simulation seed 12: 6 units in orders for a stock of 5). The source's generation key
// carries a mark the debit raised, which the rollback takes back while this instance keeps
// it: no reservation and no refill may take a unit from the source again.
func TestRefillDebitRolledBackIsNoticed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 2, 1, 2), Options{}) // one unit per shard
		// Two buyers of one home shard: the second one's unit comes from the other shard.
		var buyers []string
		for i := 0; len(buyers) < 2; i++ {
			if u := fmt.Sprintf("u%d", i); HomeShard(s.UserHash(u), 2) == 0 {
				buyers = append(buyers, u)
			}
		}
		src := Shard(a.ID, 0, 1)
		before := map[string]string{}
		for _, k := range []string{src.Stock(), src.Gen()} {
			before[k], _ = rdb.Get(ctx, k).Result()
		}
		reserveAll(ctx, t, s, a.ID, buyers...)
		if n, _ := rdb.HGet(ctx, src.Stats(), "xout").Int(); n != 1 {
			t.Fatalf("the source's xout is %d: the second unit was not moved by a refill", n)
		}
		// The source's node goes back to before the debit (the transfer had finished: no
		// transit entry either way); the target keeps its credit and its sales.
		for k, v := range before {
			if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.Del(ctx, src.XOut(), src.Stats()).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 8; i++ {
			u := fmt.Sprintf("v%d", i)
			res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if err == nil && (res.Code == Reserved || res.Code == Replayed) {
				t.Fatalf("%s reserved %s from a shard that lost the debit of a unit sold elsewhere", u, res.ReservationID)
			}
			if !errors.Is(err, ErrRecovering) {
				t.Fatalf("reserve %s after the source lost its debit: %+v %v, want ErrRecovering", u, res, err)
			}
		}
		if got, _ := rdb.Get(ctx, src.Stock()).Int(); got != 1 {
			t.Fatalf("the source's stock is %d, want the 1 unit the rollback brought back, untaken", got)
		}
	})
}

// TestReshardOfARolledBackShardIsNoticed: a shard's node went back (a reservation, or a
// refill's debit, lost) and the next call on it is a reshard's drain, not a reservation: the
// reshard would carry the rolled-back users hash and stock into a new layout whose counters
// are fresh, where the buyer of the lost reservation buys again (loss simulation seed 10, a
// user over the limit, seen only when the rollback was met first by a drain) or the units
// given away are sold again. The drain reports what it found; the reshard stops and the
// activity is fenced.
func TestReshardOfARolledBackShardIsNoticed(t *testing.T) {
	for _, what := range []string{"reservation", "debit"} {
		t.Run(what, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := ctxT(t)
				s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 4, 1, 2), Options{})
				home0, _ := usersByHome(s, 4, 0)
				// Shard 1 goes back: after a reservation of its own, or after a debit to
				// shard 0 (the third buyer of shard 0 needs a unit from shard 1).
				k := Shard(a.ID, 0, 1)
				buyers := home0[:3]
				if what == "reservation" {
					var u1 string
					for i := 0; u1 == ""; i++ {
						if u := fmt.Sprintf("w%d", i); HomeShard(s.UserHash(u), 2) == 1 {
							u1 = u
						}
					}
					buyers = []string{u1}
				}
				goBack := snapshotShard(t, rdb, k)
				reserveAll(ctx, t, s, a.ID, buyers...)
				goBack()
				err := s.Reshard(ctx, a.ID, 3)
				if !errors.Is(err, ErrRecovering) {
					t.Errorf("reshard of a layout with a shard gone back: %v, want ErrRecovering", err)
				}
				for _, u := range append(buyers, home0[3]) {
					res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
					if err == nil && (res.Code == Reserved || res.Code == Replayed) {
						t.Fatalf("%s reserved %s after its shard went back and the layout was resharded", u, res.ReservationID)
					}
				}
			})
		})
	}
}

// TestRefillFromAShardThatLostAReservation: a shard's node went back past a reservation this
// instance made there (its stock and counter back), and the next call on it is a refill's
// debit for another shard, not a reservation or a drain: the debit would hand the lost
// reservation's unit to a second buyer while the first one holds a 202 for it (loss
// simulation seed 12 with about one user-hash key in five: 6 or 7 units in orders for a
// stock of 5). The debit carries the floor the reservation script carries and is refused
// below it; the activity is fenced.
func TestRefillFromAShardThatLostAReservation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 4, 1, 2), Options{}) // two units per shard
		home0, home1 := usersByHome(s, 4, 3)
		k := Shard(a.ID, 0, 1)
		goBack := snapshotShard(t, rdb, k)
		accepted := 0
		reserveAll(ctx, t, s, a.ID, home1[0])
		accepted++
		// Shard 1's node goes back to before that reservation (the 202 was answered, its
		// journal entry may already be an order).
		goBack()
		// Shard 0's buyers: the third needs a unit from shard 1, whose two units are one
		// too many now.
		fenced := false
		for _, u := range append(home0, home1[1:]...) {
			res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			switch {
			case err == nil && res.Code == Reserved:
				accepted++
			case errors.Is(err, ErrRecovering):
				fenced = true
			case err != nil:
				t.Fatalf("reserve %s: %v", u, err)
			}
		}
		if accepted > 4 {
			t.Fatalf("%d reservations accepted for a stock of 4: the refill sold the lost reservation's unit again", accepted)
		}
		if !fenced {
			t.Fatalf("no reservation met ErrRecovering after shard 1 went back below a number handed out")
		}
	})
}

// TestRollbackSeenByAnotherInstance: one instance's refill took a unit from a shard, the
// shard's node went back past that debit and past reservations of the same instance; another
// instance, which never called that shard, had read it in its refresh (stock, counter and
// mark come in one read). The other instance must refuse the shard too: the rollback lost
// writes it saw, not only writes it made.
func TestRollbackSeenByAnotherInstance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		a1, b, a := twoInstances(ctx, t, rdb, openActivity(t, 6, 1, 2), Options{}) // three units per shard
		home0, _ := usersByHome(a1, 4, 0)
		src := Shard(a.ID, 0, 1)
		goBack := snapshotShard(t, rdb, src)
		// The fourth buyer of shard 0 needs a unit from shard 1.
		reserveAll(ctx, t, a1, a.ID, home0...)
		mustRefresh(ctx, t, b) // b reads the raised mark
		goBack()
		for i := 0; i < 6; i++ {
			res, err := b.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprintf("v%d", i), Quantity: 1})
			if err == nil && (res.Code == Reserved || res.Code == Replayed) {
				t.Fatalf("the other instance reserved %s on a layout whose shard went back past a debit it had read", res.ReservationID)
			}
		}
	})
}

// A keyless replay after a reshard answers the binding the first attempt made on the old
// layout: its number is the old shard's, and must not raise the new shard's floor of numbers
// handed out (review of issue 18: the next reservation on the new shard was refused as rolled
// back and the healthy activity fenced).
func TestAnotherLayoutsNumberIsNotThisShards(t *testing.T) {
	l := newLayout("act", 5, 4)
	l.noteIssued(1, ReservationID("act", 4, 1, 99, testIssuer, 1))
	if got := l.issued[1].Load(); got != 0 {
		t.Fatalf("an old layout's number raised the new shard's floor to %d", got)
	}
	l.noteIssued(1, ReservationID("act", 5, 1, 7, testIssuer, 3))
	if got := l.issued[1].Load(); got != 7 {
		t.Fatalf("the shard's own number: floor %d, want 7", got)
	}
}

// snapshotShard DUMPs the keys of shard k (stock, generation, counter, users, stats, transit
// and journal) and returns what puts its node back to them: keys written since are deleted,
// the others restored (a failover to a replica that lagged, an AOF without its last writes).
func snapshotShard(t *testing.T, rdb redis.UniversalClient, k ShardKeys) (goBack func()) {
	t.Helper()
	ctx := context.Background()
	keys := []string{k.Stock(), k.Gen(), k.Seq(), k.Users(), k.Stats(), k.XOut(), k.Journal()}
	snap := map[string]string{}
	for _, key := range keys {
		d, err := rdb.Dump(ctx, key).Result()
		if err == nil {
			snap[key] = d
		} else if !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		for _, key := range keys {
			if d, ok := snap[key]; ok {
				if err := rdb.RestoreReplace(ctx, key, 0, d).Err(); err != nil {
					t.Fatal(err)
				}
			} else if err := rdb.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRaisedMarkHandedOutTwice: instance X's refill debited shard S (its mark raised from
// "<gen>" to the next one), S's node went back to before that debit, and instance Y, whose
// view of S is older than the debit, debited S again before X called it: Y's debit raised S to
// the same count X recorded. A mark that names only a count matches X's record, so X's next
// reservation on S sells the unit X's lost debit had already moved and sold elsewhere: one
// unit over stock (review of issue 18, item 1). Each debit's mark must be its own, and X must
// refuse S and fence the activity.
func TestRaisedMarkHandedOutTwice(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 4, 1, 2), Options{}) // two units per shard
		home0, home1 := usersByHome(x, 4, 1)
		src := Shard(a.ID, 0, 1)
		reserve := func(st *Store, name, u string) { t.Helper(); mustReserve(ctx, t, st, name, a.ID, u) }
		// X sells shard 0's two units, and its third buyer of shard 0 gets a unit debited from S.
		reserve(x, "X", home0[0])
		reserve(x, "X", home0[1])
		goBack := snapshotShard(t, rdb, src)
		reserve(x, "X", home0[2])
		if n, _ := rdb.HGet(ctx, src.Stats(), "xout").Int(); n != 1 {
			t.Fatalf("S's xout is %d: X's third buyer's unit did not come from S", n)
		}
		goBack() // S's node loses X's debit; shard 0 keeps the credit, sold
		// Y never read S since its first refresh: its buyer of shard 0 finds it empty and
		// debits S again, raising S's mark to the count X recorded.
		reserve(y, "Y", home0[3])
		sold := 4
		for i, u := range home1 {
			res, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if err == nil && (res.Code == Reserved || res.Code == Replayed) {
				t.Fatalf("X reserved %s on S, which lost X's debit: %d units sold of 4", res.ReservationID, sold+i+1)
			}
			if !errors.Is(err, ErrRecovering) {
				t.Fatalf("X reserve %s on S after it lost X's debit: %+v %v, want ErrRecovering", u, res, err)
			}
		}
	})
}

// TestMetaBackPastAReshardOnAFreshInstance: meta's node went back past a reshard's switch (it
// names the old epoch again, no reshard recorded) while the old shards' nodes kept their
// drain. An instance that applied the new epoch notices by its own record (checkLost); one
// started after the rollback never saw it, finds its user's home shard closed for good
// outside a reshard and must answer recovering, not busy for good (loss simulation, two
// instances: busy from one instance while the other had noticed).
func TestMetaBackPastAReshardOnAFreshInstance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, cat, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 2), Options{})
		before, err := rdb.HGetAll(ctx, Meta(a.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Reshard(ctx, a.ID, 3); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, Meta(a.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, Meta(a.ID), before).Err(); err != nil {
			t.Fatal(err)
		}
		y := newStore(t, rdb, Options{Catalog: cat})
		mustRefresh(ctx, t, y)
		res, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1})
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("reserve on an instance started after meta went back past a reshard: %+v %v, want ErrRecovering", res, err)
		}
	})
}

// TestRefillFromALostShardIsNoticed: a shard's node lost the shard (its keys gone, meta and the
// other shards kept), and the first call to meet it is another shard's refill, whose debit
// finds it closed: outside a reshard that is a loss, and the reservation must answer
// recovering, not busy for good (two-instance loss simulation: busy on every buyer of the
// sold-out home shard, the lost shard never checked because it was not theirs).
func TestRefillFromALostShardIsNoticed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 4, 1, 2), Options{}) // two units per shard
		home0, _ := usersByHome(s, 3, 0)
		reserveAll(ctx, t, s, a.ID, home0[:2]...)
		src := Shard(a.ID, 0, 1)
		if err := rdb.Del(ctx, src.Stock(), src.Gen(), src.Seq(), src.Users(), src.Stats()).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: home0[2], Quantity: 1})
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("reserve whose refill met a shard its node lost: %+v %v, want ErrRecovering", res, err)
		}
	})
}

// TestFenceLostWithASecondLossIsWrittenAgain: an instance met a rollback and fenced the
// activity (meta's generation "rolledback"); then meta's node went back again, to before the
// fence: meta names the old generation and, say, a reshard under way. Another instance, and
// this instance's own writer waiting for that reshard, would take it for a live activity (the
// loss simulation: the writer's compensation answered busy for good, waiting for a reshard a
// recovering instance will never run). The instance that holds the activity recovering for a
// rollback writes the fence again at its next refresh.
func TestFenceLostWithASecondLossIsWrittenAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s, cat, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		reserveAll(ctx, t, s, a.ID, "u1", "u2")
		before, err := rdb.HGetAll(ctx, Meta(a.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		k := Shard(a.ID, 0, 0)
		if err := rdb.Set(ctx, k.Seq(), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u3", Quantity: 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("reserve on a counter that went back: %v, want ErrRecovering", err)
		}
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Fatalf("meta's generation after the fence: %q", g)
		}
		// Meta's node goes back to before the fence.
		if err := rdb.Del(ctx, Meta(a.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, Meta(a.ID), before).Err(); err != nil {
			t.Fatal(err)
		}
		mustRefresh(ctx, t, s)
		if g, _ := rdb.HGet(ctx, Meta(a.ID), "gen").Result(); g != generationRolledBack {
			t.Fatalf("meta's generation after the fence was lost and the fencing instance refreshed: %q, want %q", g, generationRolledBack)
		}
		y := newStore(t, rdb, Options{Catalog: cat})
		mustRefresh(ctx, t, y)
		if _, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u4", Quantity: 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("another instance's reserve after the fence was written again: %v, want ErrRecovering", err)
		}
	})
}

// usersByHome returns the users u0, u1, ... split by their home shard of two, until at least
// n0 have shard 0 and n1 shard 1.
func usersByHome(s *Store, n0, n1 int) (home0, home1 []string) {
	for i := 0; len(home0) < n0 || len(home1) < n1; i++ {
		u := fmt.Sprintf("u%d", i)
		if HomeShard(s.UserHash(u), 2) == 0 {
			home0 = append(home0, u)
		} else {
			home1 = append(home1, u)
		}
	}
	return home0, home1
}

// oneInstance creates def through a new instance s (options opts, given a catalog that holds
// the activity) and refreshes it: the start of every test of an instance meeting a shard that
// went back. cat is the catalog, for more instances.
func oneInstance(ctx context.Context, t *testing.T, rdb redis.UniversalClient, def Activity, opts Options) (s *Store, cat *fakeCatalog, a Activity) {
	t.Helper()
	cat = &fakeCatalog{}
	opts.Catalog = cat
	s = newStore(t, rdb, opts)
	a = mustCreate(t, s, def)
	cat.put(a)
	mustRefresh(ctx, t, s)
	return s, cat, a
}

// twoInstances creates def through instance x (options xOpts, given the catalog) beside a
// second instance y, both reading the same catalog, and refreshes both: the start of every
// test of one instance meeting another's writes on a shard.
func twoInstances(ctx context.Context, t *testing.T, rdb redis.UniversalClient, def Activity, xOpts Options) (x, y *Store, a Activity) {
	t.Helper()
	x, cat, a := oneInstance(ctx, t, rdb, def, xOpts)
	y = newStore(t, rdb, Options{Catalog: cat})
	mustRefresh(ctx, t, y)
	return x, y, a
}

// mustEntry is st's entry of activity id.
func mustEntry(ctx context.Context, t *testing.T, st *Store, id string) *entry {
	t.Helper()
	e, err := st.entryFor(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// mustReserve reserves one unit of activity for u through st (instance name), and fails the
// test unless it is reserved.
func mustReserve(ctx context.Context, t *testing.T, st *Store, name, activity, u string) {
	t.Helper()
	if res, err := st.Reserve(ctx, ReserveRequest{ActivityID: activity, UserID: u, Quantity: 1}); err != nil || res.Code != Reserved {
		t.Fatalf("%s reserve %s: %+v %v", name, u, res, err)
	}
}

// shardUnmoved reads shard k's stock and journal length, and returns the check that both
// are the same when it is called (when ends its message).
func shardUnmoved(ctx context.Context, t *testing.T, rdb redis.UniversalClient, k ShardKeys) (check func(when string)) {
	stock, _ := rdb.Get(ctx, k.Stock()).Int64()
	entries, _ := rdb.XLen(ctx, k.Journal()).Result()
	return func(when string) {
		t.Helper()
		if after, _ := rdb.Get(ctx, k.Stock()).Int64(); after != stock {
			t.Fatalf("stock %d -> %d %s", stock, after, when)
		}
		if n, _ := rdb.XLen(ctx, k.Journal()).Result(); n != entries {
			t.Fatalf("journal %d -> %d entries %s", entries, n, when)
		}
	}
}

// reserveAll reserves one unit of activity for each of users through st, in order, and fails
// the test unless each is reserved.
func reserveAll(ctx context.Context, t *testing.T, st *Store, activity string, users ...string) {
	t.Helper()
	for _, u := range users {
		if res, err := st.Reserve(ctx, ReserveRequest{ActivityID: activity, UserID: u, Quantity: 1}); err != nil || res.Code != Reserved {
			t.Fatalf("reserve %s: %+v %v", u, res, err)
		}
	}
}

// TestFenceMetOnAShardIsKept: instance X fenced the activity after a rollback (meta and the
// shard hold "rolledback"); meta's node then went back to before the fence. Instance Y meets
// the fence on the shard: it must hold the activity recovering itself (and write meta's fence
// again), so that when the shard's node goes back past the fence too, Y still sells nothing
// (loss simulation, two instances, seed 403828802: a 202 from an instance that had answered
// recovering for the fence).
func TestFenceMetOnAShardIsKept(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
		mustReserve(ctx, t, x, "X", a.ID, "u1")
		mustReserve(ctx, t, x, "X", a.ID, "u2")
		before, err := rdb.HGetAll(ctx, Meta(a.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		k := Shard(a.ID, 0, 0)
		gen, err := rdb.Get(ctx, k.Gen()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, k.Seq(), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u3", Quantity: 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("X reserve on a counter that went back: %v, want ErrRecovering", err)
		}
		// Meta's node goes back to before the fence; the shard keeps it.
		if err := rdb.Del(ctx, Meta(a.ID)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, Meta(a.ID), before).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u4", Quantity: 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("Y reserve on the fenced shard: %v, want ErrRecovering", err)
		}
		if ids, _ := y.Recovering(); len(ids) != 1 || ids[0] != a.ID {
			t.Errorf("Y met the fence but does not hold the activity recovering: %v", ids)
		}
		// The shard's node goes back past the fence too.
		if err := rdb.Set(ctx, k.Gen(), gen, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, k.Seq(), 2, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if res, err := y.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u5", Quantity: 1}); !errors.Is(err, ErrRecovering) {
			t.Fatalf("Y reserve after it met the fence and both fences were lost: %+v %v, want ErrRecovering", res, err)
		}
	})
}
