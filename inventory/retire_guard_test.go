package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testwait"
)

// TestRetireRefusesALayoutStillAddressed: Retire deletes a drained layout only when nothing
// can address it (retire.go). Each case leaves exactly one thing that still does, on a layout
// drained long enough ago: a reservation still PENDING (a confirm or fail would write its
// stats, a compensation would put its units in transit), a journal entry not yet relayed, a
// transit entry (a transfer out of it not finished). Retire must keep the layout (meta names
// it, its keys stay); once that one thing is settled the same call retires it, so it was what
// held the layout back.
func TestRetireRefusesALayoutStillAddressed(t *testing.T) {
	cases := []struct {
		name   string
		hold   func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) // leaves the one thing
		settle func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) // settles it
	}{
		{"pending", func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) {
			confirm(t, l, rids[1:])
		}, func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) {
			confirm(t, l, rids[:1])
		}},
		{"journal", func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) {
			confirm(t, l, rids)
			if err := rdb.XAdd(ctxT(t), &redis.XAddArgs{Stream: k.Journal(), Values: []any{"rid", rids[0]}}).Err(); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) {
			if err := rdb.Del(ctxT(t), k.Journal()).Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{"transit", func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) {
			confirm(t, l, rids)
			if err := rdb.HSet(ctxT(t), k.XOut(), "x-test-1", "1||0").Err(); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, rdb redis.UniversalClient, l *Ledger, k ShardKeys, rids []string) {
			if err := rdb.HDel(ctxT(t), k.XOut(), "x-test-1").Err(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := ctxT(t)
				s := newStore(t, rdb, Options{ReshardRunLimit: 100 * time.Millisecond, RetireAfter: 1100 * time.Millisecond})
				l, err := NewLedger(rdb)
				if err != nil {
					t.Fatal(err)
				}
				a := mustCreate(t, s, openActivity(t, 10, 1, 1))
				var rids []string
				for _, u := range []string{"u1", "u2"} {
					res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
					if err != nil || res.Code != Reserved {
						t.Fatalf("reserve %s: %+v %v", u, res, err)
					}
					rids = append(rids, res.ReservationID)
				}
				if err := s.Reshard(ctx, a.ID, 2); err != nil {
					t.Fatal(err)
				}
				k := Shard(a.ID, 0, 0)
				// The relay's work: the journal relayed and acknowledged.
				if err := rdb.Del(ctx, k.Journal()).Err(); err != nil {
					t.Fatal(err)
				}
				tc.hold(t, rdb, l, k, rids)
				if n, err := s.Retire(ctx, a.ID); err != nil || n != 0 {
					t.Fatalf("first pass (stamps the layout): retired %d, %v", n, err)
				}
				waitStampOld(t, rdb, a.ID, s.opts.RetireAfter)
				n, err := s.Retire(ctx, a.ID)
				if err != nil {
					t.Fatal(err)
				}
				if n != 0 || !namesLayout(t, rdb, a.ID, "0:1") {
					t.Fatalf("retired %d with a %s left on the drained layout (layouts %q): it must stay", n, tc.name,
						rdb.HGet(ctx, Meta(a.ID), "layouts").Val())
				}
				if x, _ := rdb.Exists(ctx, k.Drained(), k.Stats()).Result(); x != 2 {
					t.Fatalf("the kept layout's keys: %d of 2 left", x)
				}
				tc.settle(t, rdb, l, k, rids)
				if n, err := s.Retire(ctx, a.ID); err != nil || n != 1 || namesLayout(t, rdb, a.ID, "0:1") {
					t.Fatalf("once the %s is settled: retired %d, %v, want 1", tc.name, n, err)
				}
			})
		}
	})
}

// confirm confirms the reservations as the writer does once their orders are committed.
func confirm(t *testing.T, l *Ledger, rids []string) {
	t.Helper()
	cs := make([]Confirmation, len(rids))
	for i, r := range rids {
		cs[i] = Confirmation{ReservationID: r, OrderID: int64(i + 1)}
	}
	res, err := l.Confirm(ctxT(t), cs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r != Confirmed {
			t.Fatalf("confirm %s: %v", rids[i], r)
		}
	}
}

// waitStampOld waits until the retire stamp of epoch 0 is older than age by Redis time.
func waitStampOld(t *testing.T, rdb redis.UniversalClient, id string, age time.Duration) {
	t.Helper()
	ctx := context.Background()
	testwait.Eventually(t, 30*time.Second, func() bool {
		at, err := rdb.HGet(ctx, Meta(id), "retire.0").Int64()
		if err != nil {
			return false
		}
		now, err := rdb.Time(ctx).Result()
		return err == nil && time.Duration(now.UnixMilli()-at)*time.Millisecond >= age
	}, "the retire stamp of epoch 0 older than %v", age)
}

// namesLayout reports whether meta's layouts names lay.
func namesLayout(t *testing.T, rdb redis.UniversalClient, id, lay string) bool {
	t.Helper()
	for _, p := range strings.Split(rdb.HGet(ctxT(t), Meta(id), "layouts").Val(), ",") {
		if p == lay {
			return true
		}
	}
	return false
}
