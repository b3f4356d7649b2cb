package inventory

import (
	"context"
	_ "embed"
	"testing"

	"github.com/redis/go-redis/v9"
)

//go:embed testdata/inventory_reserve_pre12.lua
var reservePre12 string

// reserveWithPre12 runs the reservation script as released before issue 12 for user on
// shard 0 of epoch 0 (what an instance not yet upgraded runs during a rolling upgrade), with
// every limit off, and returns its raw answer.
func reserveWithPre12(ctx context.Context, t *testing.T, rdb redis.UniversalClient, s *Store, a Activity, user string) []any {
	t.Helper()
	k := Shard(a.ID, 0, 0)
	uh := s.UserHash(user)
	// The script's own bucket and window keys, and the prefix of the records it appends n to.
	keys := []string{k.Stock(), k.Users(), k.Seq(), k.Journal(), k.Stats(), k.Drained(), k.tag + "tb:" + uh, k.tag + "sw:" + uh, k.tag + "r:"}
	args := []any{a.ID, user, uh, 1, a.PerUserLimit, unixMs(a.OpensAt), 0, 0, 1, 0, 0, "", "n1",
		0, 0, 3600000, 7 * 24 * 3600000}
	res, err := redis.NewScript(reservePre12).Run(ctx, rdb, keys, args...).Slice()
	if err != nil {
		t.Fatalf("pre-12 script: %v", err)
	}
	return res
}

// During a rolling upgrade both scripts answer the same users (DESIGN: "compatible both
// ways"). A buyer who reserved through an upgraded instance and clicks again on an instance
// not yet upgraded must get 409 ALREADY_PURCHASED with the existing reservationId
// (docs/API.md); the script before issue 12 reads the last id from "<uh>:l", which the
// current script no longer writes, so it answers an empty id.
func TestAlreadyAcrossVersionsNewThenOld(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, Options{})
		a := mustCreate(t, s, openActivity(t, 10, 1, 1))
		ctx := ctxT(t)
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u", Quantity: 1})
		if err != nil || r.Code != Reserved {
			t.Fatalf("reserve: %+v, %v", r, err)
		}
		res := reserveWithPre12(ctx, t, rdb, s, a, "u")
		if len(res) != 2 || res[0] != int64(3) {
			t.Fatalf("pre-12 script answered %v, want ALREADY", res)
		}
		if res[1] != r.ReservationID {
			t.Fatalf("pre-12 ALREADY names %q, want the user's reservation %s", res[1], r.ReservationID)
		}
	})
}

// The other way: a buyer whose latest reservation was made by an instance not yet upgraded
// (limit 2: one reservation on each version) is answered by the current script with the
// older reservation id kept in "<uh>:p", not the latest one.
func TestAlreadyAcrossVersionsOldThenNew(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, Options{})
		a := mustCreate(t, s, openActivity(t, 10, 2, 1))
		ctx := ctxT(t)
		req := ReserveRequest{ActivityID: a.ID, UserID: "u", Quantity: 1}
		if r, err := s.Reserve(ctx, req); err != nil || r.Code != Reserved {
			t.Fatalf("reserve: %+v, %v", r, err)
		}
		res := reserveWithPre12(ctx, t, rdb, s, a, "u")
		if len(res) != 3 || res[0] != int64(1) {
			t.Fatalf("pre-12 script answered %v, want RESERVED", res)
		}
		latest := res[1]
		r, err := s.Reserve(ctx, req)
		if err != nil || r.Code != AlreadyPurchased {
			t.Fatalf("third: %+v, %v; want AlreadyPurchased", r, err)
		}
		if r.ReservationID != latest {
			t.Fatalf("ALREADY names %s, want the latest reservation %v", r.ReservationID, latest)
		}
	})
}
