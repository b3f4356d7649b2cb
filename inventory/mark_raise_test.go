package inventory

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// raiseUnder is the context key of TestReserveWhileAnotherInstanceDebitsTheShard's hook.
type raiseUnder struct{}

// raiseHook runs raise before every reserve script (sha) sent with a context that carries
// raiseUnder: another instance's debit lands between the caller's read of the mark and the
// script, every time.
func raiseHook(sha string, raise func()) redishook.Hook {
	return redishook.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if ctx.Value(raiseUnder{}) != nil && len(cmd.Args()) > 1 && fmt.Sprint(cmd.Args()[1]) == sha {
			raise()
		}
		return next(ctx, cmd)
	}}
}

// TestReserveWhileAnotherInstanceDebitsTheShard: instance Y refills its empty shard 0 from S
// (shard 1) one unit at a time, and each of Y's debits raises S's mark, while instance X
// sells on S. X's record of S's mark is an ancestor of the mark each of its scripts finds
// (in S's history): S's node lost nothing X knew, so the script sells. Before, the script
// refused every call whose mark had moved since X read it, X recorded the new mark and sent
// again, and a shard debited faster than one round trip never sold to X: 503 "the home
// shard's mark keeps moving" after a second (the three-instance rush on Cluster under load).
func TestReserveWhileAnotherInstanceDebitsTheShard(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 400, 1, 2), Options{})
		ye := mustEntry(ctx, t, y, a.ID)
		src := Shard(a.ID, 0, 1)
		const maxRaises = 100
		raises, calls := 0, 0
		rdb.AddHook(raiseHook(x.reserve.s.Hash(), func() {
			calls++
			if raises == maxRaises {
				return
			}
			before, _ := rdb.Get(context.Background(), src.Gen()).Result()
			// Y's debit of S (a refill of shard 0 moves half of S), then Y's refill of S from
			// shard 0, which gives S units back without touching its mark.
			for _, home := range []int{0, 1} {
				moved, closed, err := y.refill(context.Background(), ye, ye.layout.Load(), home, 1)
				if err != nil || closed || moved < 1 {
					t.Errorf("Y's refill of shard %d: moved %d, closed %v, %v", home, moved, closed, err)
					return
				}
				if home == 0 {
					if after, _ := rdb.Get(context.Background(), src.Gen()).Result(); after == before {
						t.Errorf("Y's debit of S left its mark at %q", after)
					}
				}
			}
			raises++
		}))
		_, home1 := usersByHome(x, 0, 5)
		for _, u := range home1 {
			calls = 0
			res, err := x.Reserve(context.WithValue(ctx, raiseUnder{}, true), ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if err != nil || res.Code != Reserved {
				t.Fatalf("X reserve %s on S with a debit of Y before each script: %+v %v (%d raises so far)", u, res, err, raises)
			}
			if calls > 1 {
				// The first debit of S raises it from the generation itself, which every mark
				// of S descends from: refused, that took a second script for every call in
				// flight or queued (a batch of 32) at each shard's first debit, and a request
				// that had waited its second in the queue answered 503 (CI's rushes).
				t.Fatalf("X's reservation of %s took %d reserve scripts, one per debit of Y that landed under it", u, calls)
			}
		}
		// Nothing was lost, nothing fenced: X and Y still sell, and the units are where
		// the scripts put them.
		for _, st := range []*Store{x, y} {
			mustRefresh(ctx, t, st)
		}
		more := usersByHomeFrom(x, 5, 2)
		mustReserve(ctx, t, x, "X", a.ID, more[0])
		mustReserve(ctx, t, y, "Y", a.ID, more[1])
		left0, _ := rdb.Get(ctx, Shard(a.ID, 0, 0).Stock()).Int64()
		left1, _ := rdb.Get(ctx, src.Stock()).Int64()
		if got, want := left0+left1, int64(400-7); got != want {
			t.Errorf("shards hold %d + %d units after 7 sold of 400, want %d in all", left0, left1, want)
		}
	})
}

// usersByHomeFrom is n users of home shard 1 of 2 after the first skip of them.
func usersByHomeFrom(s *Store, skip, n int) []string {
	_, home1 := usersByHome(s, 0, skip+n)
	return home1[skip:]
}
