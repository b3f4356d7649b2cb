package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// roundTrips adds to rdb a counter of its round trips: each command sent alone and each
// pipeline count one.
func roundTrips(rdb redis.UniversalClient) *atomic.Int64 {
	n := new(atomic.Int64)
	rdb.AddHook(redishook.Hook{
		Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
			n.Add(1)
			return next(ctx, cmd)
		},
		Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			n.Add(1)
			return next(ctx, cmds)
		},
	})
	return n
}

// ageTransit makes the transit entry xid of src's xout hash age old (its time, the value's
// last field, moved back).
func ageTransit(t *testing.T, rdb redis.UniversalClient, src ShardKeys, xid string, age time.Duration) {
	t.Helper()
	ctx := ctxT(t)
	v, err := rdb.HGet(ctx, src.XOut(), xid).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := strconv.FormatInt(time.Now().Add(-age).UnixMilli(), 10)
	if err := rdb.HSet(ctx, src.XOut(), xid, v[:strings.LastIndexByte(v, '|')+1]+at).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSettlingPassCostsTwoRoundTrips: the background pass that settles transfers and retires
// layouts (recoverAll, every 2 s, in the refresh loop) costs two round trips when nothing is
// due, however many activities the instance holds (it cost three per activity, one after the
// other, and held up the refresh), and still settles a transfer in transit for recoverAge and
// retires a layout past RetireAfter.
func TestSettlingPassCostsTwoRoundTrips(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{Namespace: uniqueID(t), ReshardRunLimit: time.Second, RetireAfter: 2 * time.Second},
			openActivity(t, 10, 1, 2))
		acts := []Activity{a}
		for i := 0; i < 11; i++ {
			acts = append(acts, mustCreate(t, s, openActivity(t, 10, 1, 2)))
		}
		mustRefresh(ctx, t, s)
		s.recoverAll(ctx) // the first pass sweeps every activity's credit records
		trips := roundTrips(rdb)
		s.recoverAll(ctx)
		if n := trips.Load(); n != 2 {
			t.Errorf("an idle settling pass over %d activities took %d round trips, want 2", len(acts), n)
		}

		// A transfer in transit for longer than recoverAge is settled by the pass.
		moving := acts[3]
		_, src := unitInTransit(t, s, rdb, moving, "buyer", 0, 1, "late-1")
		ageTransit(t, rdb, src, "late-1", 2*recoverAge)
		// A layout replaced by a reshard is retired once RetireAfter has passed.
		resharded := acts[7]
		if err := s.Reshard(ctx, resharded.ID, 3); err != nil {
			t.Fatal(err)
		}
		s.recoverAll(ctx) // stamps when the old layout was first seen replaced (retire.go)
		time.Sleep(2*time.Second + 200*time.Millisecond)
		s.recoverAll(ctx)
		if n := rdb.HLen(ctx, src.XOut()).Val(); n != 0 {
			t.Errorf("%d entries still in transit after a settling pass, want the one of %s settled", n, moving.ID)
		}
		if l := rdb.HGet(ctx, Meta(resharded.ID), "layouts").Val(); l != "1:3" {
			t.Errorf("meta layouts of %s after a settling pass past RetireAfter: %q, want %q (the old layout retired)", resharded.ID, l, "1:3")
		}
		for _, x := range acts {
			if x.ID == moving.ID || x.ID == resharded.ID {
				continue
			}
			if l := rdb.HGet(ctx, Meta(x.ID), "layouts").Val(); l != "0:2" {
				t.Fatal(fmt.Errorf("meta layouts of %s: %q", x.ID, l))
			}
		}
	})
}

// TestSettlingPassFallsBackWhenItsReadsFail: when the settling pass's own reads fail (a
// pipeline to a Cluster node failing over, a read timing out), the activities they covered go
// to Recover and Retire one at a time, as before the pass read ahead: a transfer past
// recoverAge is settled in that pass, whichever of its two reads failed.
func TestSettlingPassFallsBackWhenItsReadsFail(t *testing.T) {
	for _, which := range []string{"meta", "xout"} {
		t.Run(which, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
				s, a, ctx := storeWith(t, rdb, Options{Namespace: uniqueID(t)}, openActivity(t, 10, 1, 2))
				other := mustCreate(t, s, openActivity(t, 10, 1, 2))
				mustRefresh(ctx, t, s)
				s.recoverAll(ctx) // the first pass sweeps every activity's credit records
				_, src := unitInTransit(t, s, rdb, a, "buyer", 0, 1, "late-1")
				ageTransit(t, rdb, src, "late-1", 2*recoverAge)
				// The first pipeline of HGETALLs of the kind named fails, as a connection's
				// failure fails each of its commands.
				var armed atomic.Bool
				armed.Store(true)
				rdb.AddHook(redishook.Hook{Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
					if len(cmds) > 1 && cmds[0].Name() == "hgetall" && strings.HasSuffix(fmt.Sprint(cmds[0].Args()[1]), which) &&
						armed.CompareAndSwap(true, false) {
						err := errors.New("i/o timeout (the test's)")
						for _, c := range cmds {
							c.SetErr(err)
						}
						return err
					}
					return next(ctx, cmds)
				}})
				s.recoverAll(ctx)
				if armed.Load() {
					t.Fatalf("no pipeline of %s reads was sent: the test does not test the fallback", which)
				}
				if n := rdb.HLen(ctx, src.XOut()).Val(); n != 0 {
					t.Errorf("%d entries still in transit after a pass whose %s reads failed, want the one of %s settled", n, which, a.ID)
				}
				if _, ok := s.Activity(other.ID); !ok {
					t.Fatalf("%s dropped", other.ID)
				}
			})
		})
	}
}
