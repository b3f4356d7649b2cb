package inventory

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// fakeCatalog is the system of record's list of activities, held in memory for these tests
// of the inventory alone (the app's catalog reads MySQL: app tests).
type fakeCatalog struct {
	mu   sync.Mutex
	acts map[string]Activity
}

func (c *fakeCatalog) Known(context.Context) ([]Activity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Activity, 0, len(c.acts))
	for _, a := range c.acts {
		out = append(out, a)
	}
	return out, nil
}

func (c *fakeCatalog) One(_ context.Context, id string) (Activity, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.acts[id]
	return a, ok, nil
}

func (c *fakeCatalog) put(a Activity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acts == nil {
		c.acts = map[string]Activity{}
	}
	c.acts[a.ID] = a
}

// deleteActivityKeys removes every key of one activity (what a Redis that restarted empty
// shows for it), leaving the other tests' keys alone.
func deleteActivityKeys(t *testing.T, rdb redis.UniversalClient, id string) {
	t.Helper()
	ctx := ctxT(t)
	for _, k := range keysOfActivity(t, rdb, id) {
		if err := rdb.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLostRedisStatePutsTheActivityInRecovering: an activity MySQL knows whose meta is gone,
// whose generation differs, or whose current shard lost its stock key is refused with
// ErrRecovering after one refresh, on an instance that had it cached and on one that never
// saw it; nothing is re-created, and only a generation change in the catalog (a restore)
// with meta carrying it clears the state.
func TestLostRedisStatePutsTheActivityInRecovering(t *testing.T) {
	for _, loss := range []string{"meta", "generation", "shard"} {
		t.Run(loss, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := ctxT(t)
				s, cat, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 2), Options{})
				if a.Generation == "" {
					t.Fatal("Create returned no generation")
				}
				if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1}); err != nil {
					t.Fatal(err)
				}
				switch loss {
				case "meta":
					deleteActivityKeys(t, rdb, a.ID)
				case "generation":
					if err := rdb.HSet(ctx, Meta(a.ID), "gen", "other").Err(); err != nil {
						t.Fatal(err)
					}
				case "shard":
					if err := rdb.Del(ctx, Shard(a.ID, 0, 1).Stock()).Err(); err != nil {
						t.Fatal(err)
					}
				}
				fresh := newStore(t, rdb, Options{Catalog: cat}) // an instance started after the loss
				for _, st := range []*Store{s, fresh} {
					v, ok := refreshed(ctx, t, st, a.ID)
					if !ok || !v.Recovering {
						t.Fatalf("after the loss of the %s: view %+v (cached %v), want recovering", loss, v, ok)
					}
					_, err := st.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1})
					if !errors.Is(err, ErrRecovering) {
						t.Fatalf("reserve while recovering: %v, want ErrRecovering", err)
					}
					if ids, _ := st.Recovering(); len(ids) != 1 || ids[0] != a.ID {
						t.Fatalf("Recovering() = %v", ids)
					}
				}
				if loss == "meta" {
					assertNoKeys(t, rdb, Meta(a.ID), Shard(a.ID, 0, 0).Stock(), Shard(a.ID, 0, 1).Stock())
				}
				// The same generation coming back (a rolled-back copy) does not reopen it.
				if loss == "generation" {
					if err := rdb.HSet(ctx, Meta(a.ID), "gen", a.Generation).Err(); err != nil {
						t.Fatal(err)
					}
					if v, _ := refreshed(ctx, t, s, a.ID); !v.Recovering {
						t.Fatal("the old generation back in meta reopened the activity")
					}
				}
			})
		})
	}
}

// TestRestoreRebuildsFromTheOrders: after Redis lost an activity, Fence and Rebuild from the
// orders reopen it once the catalog names the new generation: remaining = stock - sold, a
// buyer at the limit is refused, a replayed idempotency key returns its old reservation,
// new reservation ids are of the new incarnation's epoch, and the older shards stay closed.
func TestRestoreRebuildsFromTheOrders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		cat := &fakeCatalog{}
		s := newStore(t, rdb, Options{Catalog: cat})
		a := mustCreate(t, s, openActivity(t, 10, 1, 2))
		cat.put(a)
		var orders []RestoredOrder
		for i, u := range []string{"ann", "ben", "cat"} {
			res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1, IdempotencyKey: "k-" + u})
			if err != nil || res.Code != Reserved {
				t.Fatalf("reserve %s: %v %v", u, res, err)
			}
			uh := s.UserHash(u)
			orders = append(orders, RestoredOrder{ReservationID: res.ReservationID, UserID: u, Quantity: 1, Seq: 1,
				IdemHash: IdemHash(idemField(uh, "k-"+u), uh), OrderID: int64(100 + i)})
		}
		deleteActivityKeys(t, rdb, a.ID)
		if v, _ := refreshed(ctx, t, s, a.ID); !v.Recovering {
			t.Fatal("not recovering after the loss")
		}
		tok, err := s.Fence(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Fence(ctx, a.ID); !errors.Is(err, ErrBusy) {
			t.Fatalf("second fence: %v, want ErrBusy", err)
		}
		gen := NewGeneration()
		got, err := s.Rebuild(ctx, tok, RestorePlan{Activity: a, Generation: gen, Incarnation: 1, Shards: 2, Orders: orders}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Sold != 3 || got.Remaining != 7 || got.Epoch != IncarnationEpochs || got.Bindings != 3 {
			t.Fatalf("rebuild %+v", got)
		}
		// Meta carries the new generation, MySQL not yet: still recovering.
		if v, _ := refreshed(ctx, t, s, a.ID); !v.Recovering {
			t.Fatal("reopened before MySQL named the new generation")
		}
		a2 := a
		a2.Generation = gen
		cat.put(a2)
		if err := s.Announce(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		v, _ := s.Activity(a.ID)
		if v.Recovering || v.Remaining != 7 || v.Epoch != IncarnationEpochs {
			t.Fatalf("after the restore: %+v", v)
		}
		res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "ann", Quantity: 1})
		if err != nil || res.Code != AlreadyPurchased || res.ReservationID != orders[0].ReservationID {
			t.Fatalf("ann again: %+v %v, want ALREADY_PURCHASED naming %s", res, err, orders[0].ReservationID)
		}
		rid, ok, err := s.Replay(ctx, a.ID, "ben", "k-ben")
		if err != nil || !ok || rid != orders[1].ReservationID {
			t.Fatalf("replay of ben's key: %q %v %v, want %s", rid, ok, err, orders[1].ReservationID)
		}
		res, err = s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "dan", Quantity: 1})
		if err != nil || res.Code != Reserved {
			t.Fatalf("dan: %+v %v", res, err)
		}
		if k, _, _ := ParseReservationID(res.ReservationID); k.Epoch != IncarnationEpochs {
			t.Fatalf("new reservation %s not of the new incarnation", res.ReservationID)
		}
		assertNoKeys(t, rdb, Shard(a.ID, 0, 0).Stock(), Shard(a.ID, 0, 1).Stock()) // the old shards stay closed
		r, err := s.Reservation(ctx, orders[2].ReservationID)
		if err != nil || r.Status != "CONFIRMED" || r.OrderID != "102" {
			t.Fatalf("record of cat's order after the restore: %+v %v", r, err)
		}
	})
}

// TestRestoreUnlockReleasesOnlyItsOwnLock: Unlock (inventory_restore_unlock.lua) leaves a
// restore lock held with another token, and releases its own, after which the next restore
// can take it.
func TestRestoreUnlockReleasesOnlyItsOwnLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		s := newStore(t, rdb, Options{})
		a := mustCreate(t, s, openActivity(t, 10, 1, 1))
		tok, err := s.Fence(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(ctx, a.ID, "not-"+tok); err != nil {
			t.Fatal(err)
		}
		if got, err := rdb.Get(ctx, RestoreLockKey(a.ID)).Result(); err != nil || got != tok {
			t.Fatalf("lock after an unlock with another token: %q %v, want %q", got, err, tok)
		}
		if _, err := s.Fence(ctx, a.ID); !errors.Is(err, ErrBusy) {
			t.Fatalf("fence while the lock is held: %v, want ErrBusy", err)
		}
		if err := s.Unlock(ctx, a.ID, tok); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, RestoreLockKey(a.ID)).Result(); err != nil || n != 0 {
			t.Fatalf("lock after its own unlock: exists %d %v, want gone", n, err)
		}
		if err := s.Unlock(ctx, a.ID, tok); err != nil {
			t.Fatalf("unlocking a lock already gone: %v", err)
		}
		if _, err := s.Fence(ctx, a.ID); err != nil {
			t.Fatalf("fence after the unlock: %v", err)
		}
	})
}

// assertNoKeys fails unless none of keys exists (one EXISTS per key: they may be in
// different cluster slots).
func assertNoKeys(t *testing.T, rdb redis.UniversalClient, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if n, err := rdb.Exists(ctxT(t), k).Result(); err != nil || n != 0 {
			t.Fatalf("key %s exists (%d, %v)", k, n, err)
		}
	}
}
