package inventory

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// groundUnits counts an activity's units from the ground truth: the stock keys of every
// layout meta names plus the units of the real transit entries (xout) of every shard, plus,
// while a reshard is recorded, the units its drained shards hand over (the drained markers
// of the layout being left; the new layout's shards are not counted until the switch).
func groundUnits(t testing.TB, rdb redis.UniversalClient, id string) int64 {
	t.Helper()
	ctx := ctxT(t)
	var sum int64
	forShards(t, rdb, id, func(m map[string]string, _ string, e, _ int, k ShardKeys) {
		cur, _ := strconv.Atoi(m["epoch"])
		moving := m["reshard"] != ""
		if !(moving && e == cur+1) {
			if v, err := rdb.Get(ctx, k.Stock()).Int64(); err == nil {
				sum += v
			}
		}
		if moving && e == cur {
			if v, err := rdb.Get(ctx, k.Drained()).Int64(); err == nil {
				sum += v
			}
		}
		all, err := rdb.HGetAll(ctx, k.XOut()).Result()
		if err != nil {
			t.Fatal(err)
		}
		for tid, v := range all {
			u, _, _ := strings.Cut(v, "|")
			n, err := strconv.ParseInt(u, 10, 64)
			if err != nil {
				t.Fatalf("transit %s on %s: bad entry %q", tid, k.XOut(), v)
			}
			sum += n
		}
	})
	return sum
}

// userOn returns a user id whose home shard among n is want.
func userOn(s *Store, prefix string, want, n int) string {
	for i := 0; ; i++ {
		u := prefix + strconv.Itoa(i)
		if HomeShard(s.UserHash(u), n) == want {
			return u
		}
	}
}

// TestRestartUnderSameInstanceIDLosesNoUnit is issue 19's defect 1: an instance restarted
// under the same instance id (fresh process, fresh counters) must not mint a transfer id
// that an earlier process already had credited; if it does, the credit answers "credited
// before", the transit entry is finished and the units are gone. Counted from the ground
// truth: stock keys + transit entries + reserved units = stock.
func TestRestartUnderSameInstanceIDLosesNoUnit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		opts := Options{InstanceID: "host-1", MaxOtherShards: 1}
		first := newStore(t, rdb, opts)
		a := mustCreate(t, first, openActivity(t, 8, 8, 2))
		var reserved int64
		take := func(s *Store, u string, q int) {
			t.Helper()
			r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: q})
			if err != nil {
				t.Fatal(err)
			}
			if r.Code == Reserved {
				reserved += int64(q)
			}
		}
		// Home shard 0 holds 4: a reservation of 5 refills it from shard 1 (one transfer).
		take(first, userOn(first, "a", 0, 2), 5)
		// The process restarts under the same id: its first refill runs the same steps.
		second := newStore(t, rdb, opts)
		take(second, userOn(second, "b", 0, 2), 1)
		take(second, userOn(second, "c", 0, 2), 1)
		if got := groundUnits(t, rdb, a.ID) + reserved; got != a.Stock {
			t.Fatalf("stock keys + transit + reserved = %d + %d, want %d (units lost by a reused transfer id)",
				got-reserved, reserved, a.Stock)
		}
	})
}

// TestCreditRecordsAreForgottenAndOldEntriesRekeyed: a target forgets the record of a
// credited id once it is older than creditKeep and its source holds no entry under the id
// (so the records do not grow with the sale), and a transit entry older than creditKeep is
// credited under a new id, never under its own (whose record may be forgotten).
func TestCreditRecordsAreForgottenAndOldEntriesRekeyed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 1, 2))
		src, dst := Shard(a.ID, 0, 0), Shard(a.ID, 0, 1)
		old := time.Now().Add(-creditKeep - time.Minute).UnixMilli()
		// A debit left in transit long ago: 2 units from shard 0 to shard 1.
		if err := rdb.DecrBy(ctx, src.Stock(), 2).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.HSet(ctx, src.XOut(), "told", "2|"+dst.Loc()+"|"+strconv.FormatInt(old, 10))
		// A forgotten record of that id must not make it "credited before".
		if err := s.mover.Settle(ctx, src, "told", ""); err != nil {
			t.Fatal(err)
		}
		if n := rdb.HLen(ctx, src.XOut()).Val(); n != 0 {
			t.Fatalf("%d transit entries left", n)
		}
		if got := groundUnits(t, rdb, a.ID); got != 10 {
			t.Fatalf("ground truth %d units, want 10", got)
		}
		if rdb.HExists(ctx, dst.XIn(), "told").Val() {
			t.Fatal("an entry older than creditKeep was credited under its own id")
		}
		// Records: one old and settled (forgotten), one old with its entry still in transit
		// (kept), one young (kept).
		rdb.HSet(ctx, dst.XIn(), "gone", "1|"+src.Loc()+"|"+strconv.FormatInt(old, 10),
			"busy", "1|"+src.Loc()+"|"+strconv.FormatInt(old, 10),
			"young", "1|"+src.Loc()+"|"+strconv.FormatInt(time.Now().UnixMilli(), 10))
		rdb.HSet(ctx, src.XOut(), "busy", "0|"+dst.Loc()+"|"+strconv.FormatInt(time.Now().UnixMilli(), 10))
		if _, err := s.Recover(ctx, a.ID, time.Hour); err != nil {
			t.Fatal(err)
		}
		for f, want := range map[string]bool{"gone": false, "busy": true, "young": true} {
			if got := rdb.HExists(ctx, dst.XIn(), f).Val(); got != want {
				t.Errorf("credit record %s kept %v, want %v", f, got, want)
			}
		}
	})
}

// TestStalledReshardRunWritesNothingOnALaterLayout is issue 19's defect 2: a run of the
// reshard 0->1 stalls before its copy; 0->1 finishes elsewhere and 1->2 drains the epoch-1
// shards; the stalled run wakes and copies and seals epoch 1. It must write nothing there:
// no users hash over the newer one, no stock re-created on a drained shard.
func TestStalledReshardRunWritesNothingOnALaterLayout(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{ReshardWorkers: 1}, openActivity(t, 10, 2, 2))
		var reserved int64
		u := userOn(s, "u", 0, 2)
		take := func() {
			t.Helper()
			r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if err != nil || r.Code != Reserved {
				t.Fatalf("reserve: %v %v", r.Code, err)
			}
			reserved++
		}
		take() // epoch 0
		if err := s.Reshard(ctx, a.ID, 1); err != nil {
			t.Fatal(err)
		}
		take() // epoch 1: the user holds 2
		if err := s.Reshard(ctx, a.ID, 2); err != nil {
			t.Fatal(err)
		}
		uh := s.UserHash(u)
		e2 := Shard(a.ID, 2, HomeShard(uh, 2))
		// The stalled run of 0->1 wakes: credit, copy and seal of epoch 1, as move does (a
		// run young enough to write: the drained markers alone must refuse it).
		st := run{e: 0, from: 2, to: 1, start: time.Now().UnixMilli(), limit: time.Minute.Milliseconds()}
		for i := 0; i < 2; i++ {
			k := Shard(a.ID, 1, 0)
			if _, err := s.run(ctx, s.credit, s.creditKeys(k), "credit", st.start, st.limit, i, 5); err != nil {
				t.Fatal(err)
			}
			if _, err := s.copyShard(ctx, a.ID, Shard(a.ID, 0, i), st); err != nil {
				t.Fatal(err)
			}
		}
		k1 := Shard(a.ID, 1, 0)
		if _, err := s.run(ctx, s.credit, s.creditKeys(k1), "seal", st.start, st.limit, 2); err != nil {
			t.Fatal(err)
		}
		if rdb.Exists(ctx, k1.Stock()).Val() == 1 {
			t.Error("the stalled run re-created stock on a drained shard")
		}
		if got := heldOn(t, rdb, k1, uh); got != 2 {
			t.Errorf("drained epoch-1 users hash counts %d units for the user, want 2 (overwritten by the stalled copy)", got)
		}
		if got := heldOn(t, rdb, e2, uh); got != 2 {
			t.Errorf("epoch-2 users hash counts %d units, want 2", got)
		}
		if got := groundUnits(t, rdb, a.ID) + reserved; got != a.Stock {
			t.Fatalf("stock keys + transit + reserved = %d, want %d", got, a.Stock)
		}
	})
}
