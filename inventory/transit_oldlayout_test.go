package inventory

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lua"
)

// TestCompensationInTransitFromAnOldLayoutIsNotSoldOut: after a reshard, a failed
// reservation of the old layout gives its unit back through a transfer from the old
// (drained) shard to a shard of the current layout (inventory_fail.lua answer 5). While
// that credit is not done (the Settle after the script met a Redis error; Recover finishes
// it only after recoverAge) the unit is in transit and still for sale, yet the transit
// check of the refresh and of Reserve reads only the xout hashes of the current layout's
// shards: the activity is marked sold out (and a reservation broadcasts it) with a unit left.
func TestCompensationInTransitFromAnOldLayoutIsNotSoldOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 1, 1, 1))
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "buyer", Quantity: 1})
		if err != nil || r.Code != Reserved {
			t.Fatalf("reserve = %+v, %v", r, err)
		}
		if err := s.Reshard(ctx, a.ID, 2); err != nil {
			t.Fatal(err)
		}
		// The payment fails: inventory_fail.lua on the drained old shard puts the unit in
		// transit; the Settle that would follow is cut short (a Redis error).
		k, n, ok := ParseReservationID(r.ReservationID)
		if !ok {
			t.Fatalf("rid %q", r.ReservationID)
		}
		fail, err := lua.Load("inventory_fail.lua")
		if err != nil {
			t.Fatal(err)
		}
		res, err := fail.Run(ctx, rdb, []string{k.Users(), k.Stock(), k.Stats(), k.Drained(), k.XOut()}, RecordField(n), r.ReservationID).Int64Slice()
		if err != nil || len(res) != 2 || res[0] != 5 {
			t.Fatalf("fail on the drained shard = %v, %v; want {5 1} (units in transit)", res, err)
		}
		if v, ok := s.Activity(a.ID); !ok || v.SoldOut {
			t.Fatalf("before the refresh: %+v, want not sold out", v)
		}
		if v, ok := refreshed(ctx, t, s, a.ID); !ok || v.SoldOut {
			t.Fatalf("after a refresh with one compensated unit in transit: %+v, want not sold out", v)
		}
		other := "rival"
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: other, Quantity: 1}); err != nil {
			t.Fatal(err)
		} else if v, _ := s.Activity(a.ID); v.SoldOut {
			t.Fatalf("a reservation (%+v) marked the activity sold out with one unit in transit", r)
		}
		if _, err := s.Recover(ctx, a.ID, 0); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: other, Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("after the credit landed = %+v, %v; want Reserved", r, err)
		}
	})
}
