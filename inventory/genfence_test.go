package inventory

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestReservationRefusedByTheShardsGeneration: a reservation whose instance has not yet seen
// a restore's fence (its refresh is late, or the request stalled past the fence), or that
// finds a shard a late write brought back on a Redis that lost the activity, must not sell:
// the reserve script itself checks the shard's generation, so nothing is taken (no stock, no
// record, no journal entry) and the answer is ErrRecovering, before any refresh ran.
func TestReservationRefusedByTheShardsGeneration(t *testing.T) {
	for _, give := range []string{"fenced", "lost and a shard written back"} {
		t.Run(give, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := ctxT(t)
				cat := &fakeCatalog{}
				s := newStore(t, rdb, Options{Catalog: cat})
				a := mustCreate(t, s, openActivity(t, 10, 1, 1))
				cat.put(a)
				if err := s.Refresh(ctx); err != nil {
					t.Fatal(err)
				}
				if res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1}); err != nil || res.Code != Reserved {
					t.Fatalf("first reservation: %+v %v", res, err)
				}
				k := Shard(a.ID, 0, 0)
				switch give {
				case "fenced":
					if _, err := s.Fence(ctx, a.ID); err != nil {
						t.Fatal(err)
					}
				default:
					deleteActivityKeys(t, rdb, a.ID)
					if err := rdb.Set(ctx, k.Stock(), 9, 0).Err(); err != nil { // a stalled credit
						t.Fatal(err)
					}
				}
				stock, _ := rdb.Get(ctx, k.Stock()).Int64()
				entries, _ := rdb.XLen(ctx, k.Journal()).Result()
				_, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1})
				if !errors.Is(err, ErrRecovering) {
					t.Fatalf("reserve on a %s shard: %v, want ErrRecovering", give, err)
				}
				if after, _ := rdb.Get(ctx, k.Stock()).Int64(); after != stock {
					t.Fatalf("stock %d -> %d: the reservation sold from a shard of another generation", stock, after)
				}
				if n, _ := rdb.XLen(ctx, k.Journal()).Result(); n != entries {
					t.Fatalf("journal %d -> %d entries", entries, n)
				}
			})
		})
	}
}
