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
				s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 1, 1), Options{})
				reserveAll(ctx, t, s, a.ID, "u1") // the first reservation
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
				unmoved := shardUnmoved(ctx, t, rdb, k)
				_, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1})
				if !errors.Is(err, ErrRecovering) {
					t.Fatalf("reserve on a %s shard: %v, want ErrRecovering", give, err)
				}
				unmoved("after a reservation on a shard of another generation")
			})
		})
	}
}

// TestSealGivesTheGeneration: a reshard's new shards hold the activity's generation from the
// seal on, written in the script that creates their stock key. Before, a new shard took it on
// its first reservation (adoption, a later write): a Cluster node that failed over to a replica
// holding the seal but not the adoption kept the stock and had no generation key, and an
// instance that had never met the shard adopted it again and sold from a copy that went back
// (review of issue 18, item 5). Written with the stock, the key is lost only with the stock.
func TestSealGivesTheGeneration(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 1, 1))
		if err := s.Reshard(ctx, a.ID, 3); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			k := Shard(a.ID, 1, i)
			if g, err := rdb.Get(ctx, k.Gen()).Result(); err != nil || g != a.Generation {
				t.Errorf("new shard %d after the seal: generation %q %v, want %q", i, g, err, a.Generation)
			}
		}
	})
}
