package inventory

import (
	"errors"
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
		cat := &fakeCatalog{}
		s := newStore(t, rdb, Options{Catalog: cat})
		a := mustCreate(t, s, openActivity(t, 10, 1, 1))
		cat.put(a)
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"u1", "u2", "u3"} {
			if res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1}); err != nil || res.Code != Reserved {
				t.Fatalf("reserve %s: %+v %v", u, res, err)
			}
		}
		k := Shard(a.ID, 0, 0)
		if err := rdb.Set(ctx, k.Seq(), 1, 0).Err(); err != nil { // the rollback: u2's and u3's numbers are free again
			t.Fatal(err)
		}
		stock, _ := rdb.Get(ctx, k.Stock()).Int64()
		entries, _ := rdb.XLen(ctx, k.Journal()).Result()
		res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u4", Quantity: 1})
		if !errors.Is(err, ErrRecovering) {
			t.Fatalf("a reservation on a counter below a number handed out: %+v %v, want ErrRecovering, nothing taken", res, err)
		}
		for _, st := range []*Store{s, newStore(t, rdb, Options{Catalog: cat})} {
			if err := st.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u5", Quantity: 1}); !errors.Is(err, ErrRecovering) {
				t.Fatalf("reserve after the rollback was noticed: %v, want ErrRecovering", err)
			}
		}
		if after, _ := rdb.Get(ctx, k.Stock()).Int64(); after != stock {
			t.Fatalf("stock %d -> %d after the rollback was met", stock, after)
		}
		if n, _ := rdb.XLen(ctx, k.Journal()).Result(); n != entries {
			t.Fatalf("journal %d -> %d after the rollback was met: the reused number has an entry", entries, n)
		}
	})
}
