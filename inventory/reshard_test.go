package inventory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/testwait"
)

// TestReshardUnderLoad changes the shard count 4 -> 7 -> 2 while goroutines reserve, with
// users coming back for more: exactly the stock is accounted for, no user is above the
// limit, no shard is below zero.
func TestReshardUnderLoad(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		// Enough stock and users that the crowd is still buying when the second reshard
		// ends (with batched reservations 1200 users had all bought before it began).
		const stock, users = 100_000, 60_000
		s := newStore(t, rdb, Options{})
		other := newStore(t, rdb, Options{}) // a second instance resharding at the same time
		a := mustCreate(t, s, openActivity(t, stock, 1, 4))
		ctx := ctxT(t)
		stop := make(chan struct{})
		var mu sync.Mutex
		per := map[string]int{}
		var reserved, busy atomic.Int64
		wait := workers(32, stop, func() bool {
			u := fmt.Sprint("u", rand.IntN(users))
			r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if errors.Is(err, ErrBusy) {
				busy.Add(1)
				return true
			}
			if err != nil {
				t.Error(err)
				return false
			}
			if r.Code == Reserved {
				reserved.Add(1)
				mu.Lock()
				per[u]++
				mu.Unlock()
			}
			return true
		})
		pause := func() { time.Sleep(150 * time.Millisecond) }
		pause()
		for _, n := range []int{7, 2} {
			before := reserved.Load()
			stores := []*Store{s, other}
			rush(len(stores), func(i int) {
				if err := stores[i].Reshard(ctx, a.ID, n); err != nil {
					t.Errorf("reshard to %d: %v", n, err)
				}
			})
			pause()
			if reserved.Load() == before {
				t.Errorf("no reservation while resharding to %d", n)
			}
		}
		close(stop)
		wait()
		if t.Failed() {
			return
		}
		m := rdb.HGetAll(ctx, Meta(a.ID)).Val()
		if m["epoch"] != "2" || m["shards"] != "2" || m["reshard"] != "" || m["layouts"] != "0:4,1:7,2:2" {
			t.Fatalf("meta %v", m)
		}
		st := readState(t, rdb, a.ID)
		r := reserved.Load()
		t.Logf("reserved %d, remaining %d, busy answers %d", r, st.remaining, busy.Load())
		if r+st.remaining != stock || st.journal != r || st.taken != r || st.minStock < 0 {
			t.Fatalf("reserved %d + remaining %d != %d (journal %d, taken %d, min %d)", r, st.remaining, stock, st.journal, st.taken, st.minStock)
		}
		for u, n := range per {
			if n > 1 {
				t.Fatalf("user %s holds %d, limit 1", u, n)
			}
		}
		// The journals of every epoch agree: one entry per user at most.
		seen := map[string]bool{}
		for _, lay := range []struct{ e, n int }{{0, 4}, {1, 7}, {2, 2}} {
			for i := 0; i < lay.n; i++ {
				for _, x := range rdb.XRange(ctx, Shard(a.ID, lay.e, i).Journal(), "-", "+").Val() {
					je, err := ParseJournalEntry(x.Values)
					if err != nil {
						t.Fatal(err)
					}
					uid := je.UserID
					if seen[uid] {
						t.Fatalf("user %s journaled twice", uid)
					}
					seen[uid] = true
				}
			}
		}
		// The buyer records moved: everyone who bought is at the limit on the new home shard.
		for u := range per {
			uh := s.UserHash(u)
			if v := heldOn(t, rdb, Shard(a.ID, 2, HomeShard(uh, 2)), uh); v != 1 {
				t.Fatalf("user %s record on new home = %d", u, v)
			}
		}
	})
}

// TestReshardResumes finishes a reshard that stopped half way, before starting the one asked
// for, and never moves a unit twice.
func TestReshardResumes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 1000, 2, 3))
		for i := 0; i < 30; i++ {
			if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprint("early", i), Quantity: 2}); err != nil || r.Code != Reserved {
				t.Fatalf("reserve = %+v, %v", r, err)
			}
		}
		// A crashed run: begun to 5 shards, two shards drained, one credit made.
		if _, err := s.run(ctx, s.reshard, []string{Meta(a.ID)}, "begin", 0, 5); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			k := Shard(a.ID, 0, i)
			if _, err := s.run(ctx, s.drain, []string{k.Stock(), k.Drained(), k.Stats(), k.Seq(), k.Gen()}, time.Now().UnixMilli(), time.Minute.Milliseconds()); err != nil {
				t.Fatal(err)
			}
		}
		k := Shard(a.ID, 1, 0)
		d, _ := rdb.Get(ctx, Shard(a.ID, 0, 0).Drained()).Int64()
		if _, err := s.run(ctx, s.credit, s.creditKeys(k), "credit", time.Now().UnixMilli(), time.Minute.Milliseconds(), 0, split(d, 5, 0)); err != nil {
			t.Fatal(err)
		}
		// Reserves meanwhile: drained shards answer closed, the caller waits or retries.
		if err := s.Reshard(ctx, a.ID, 4); err != nil {
			t.Fatal(err)
		}
		m := rdb.HGetAll(ctx, Meta(a.ID)).Val()
		if m["epoch"] != "2" || m["shards"] != "4" || m["layouts"] != "0:3,1:5,2:4" {
			t.Fatalf("meta %v", m)
		}
		st := readState(t, rdb, a.ID)
		if st.remaining != 1000-60 {
			t.Fatalf("remaining %d, want 940", st.remaining)
		}
		// Running it again changes nothing.
		if err := s.Reshard(ctx, a.ID, 4); err != nil {
			t.Fatal(err)
		}
		if st := readState(t, rdb, a.ID); st.remaining != 940 {
			t.Fatalf("remaining after rerun %d", st.remaining)
		}
		// Old buyers are still at their limit; a replay through a new layout still works.
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "early7", Quantity: 1})
		if err != nil || r.Code != AlreadyPurchased || r.ReservationID == "" {
			t.Fatalf("old buyer = %+v, %v", r, err)
		}
		if v, _ := s.Activity(a.ID); v.Shards != 4 || v.Epoch != 2 {
			t.Fatalf("view %+v", v)
		}
	})
}

func TestReshardRejects(t *testing.T) {
	s := newStore(t, miniRedis(t), Options{})
	ctx := ctxT(t)
	tests := []struct {
		name string
		id   string
		n    int
		want error
	}{
		{"bad id", "a b", 2, ErrInvalid},
		{"zero shards", "a", 0, ErrInvalid},
		{"too many", "a", keyspace.MaxShards + 1, ErrInvalid},
		{"unknown", "nope", 2, ErrNotFound},
	}
	for _, tt := range tests {
		if err := s.Reshard(ctx, tt.id, tt.n); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestRunLearnsAcrossInstances: an activity created on one instance, its sell-out and its
// stock coming back are seen by another instance within a second.
func TestRunLearnsAcrossInstances(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		// A namespace of their own: a refresh pass reads every activity of its namespace, and
		// the shared test Redis's default one holds every earlier test's (1,152 here: 89 ms a
		// pass, against 36 µs in a namespace of one; under load that broke the 1 s bounds).
		ns := uniqueID(t)
		a := newStore(t, rdb, Options{Namespace: ns})
		b := newStore(t, rdb, Options{Namespace: ns, RefreshEvery: 50 * time.Millisecond, MaxOtherShards: 4})
		ctx, cancel := context.WithCancel(ctxT(t))
		runErr := make(chan error, 1)
		go func() { runErr <- b.Run(ctx) }()
		time.Sleep(100 * time.Millisecond) // let the subscriber attach
		act := mustCreate(t, a, openActivity(t, 3, 1, 2))
		testwait.Eventually(t, time.Second, func() bool { _, ok := b.Activity(act.ID); return ok }, "created visible")
		testwait.Eventually(t, time.Second, func() bool { v, _ := b.Activity(act.ID); return v.Remaining == 3 && !v.SoldOut }, "remaining 3")
		for i := 0; i < 6; i++ {
			if _, err := a.Reserve(ctx, ReserveRequest{ActivityID: act.ID, UserID: fmt.Sprint("x", i), Quantity: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if v, _ := a.Activity(act.ID); !v.SoldOut {
			t.Fatal("seller did not learn its sell-out")
		}
		testwait.Eventually(t, time.Second, func() bool { v, _ := b.Activity(act.ID); return v.SoldOut && v.Remaining == 0 }, "sold out seen")
		// Compensation gives a unit back: the refresher clears the mark.
		if err := rdb.IncrBy(ctx, Shard(act.ID, 0, 1).Stock(), 1).Err(); err != nil {
			t.Fatal(err)
		}
		testwait.Eventually(t, time.Second, func() bool { v, _ := b.Activity(act.ID); return !v.SoldOut && v.Remaining == 1 }, "stock back")
		// A reshard on a is seen by b.
		if err := a.Reshard(ctx, act.ID, 5); err != nil {
			t.Fatal(err)
		}
		testwait.Eventually(t, time.Second, func() bool { v, _ := b.Activity(act.ID); return v.Shards == 5 && v.Epoch == 1 && v.Remaining == 1 }, "layout")
		if r, err := b.Reserve(ctx, ReserveRequest{ActivityID: act.ID, UserID: "late", Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("after reshard = %+v, %v", r, err)
		}
		cancel()
		select {
		case err := <-runErr:
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return")
		}
	})
}

// TestParseLayoutAndLoc: a layout "<epoch>:<shards>" and a location "<epoch>:<shard>" parse
// only as two integers in their ranges.
func TestParseLayoutAndLoc(t *testing.T) {
	top := fmt.Sprint(keyspace.MaxShards)
	tests := []struct {
		give            string
		wantLayout      [2]int
		layoutOK, locOK bool
		wantLoc         [2]int
	}{
		{give: "3:4", wantLayout: [2]int{3, 4}, layoutOK: true, wantLoc: [2]int{3, 4}, locOK: true},
		{give: "0:0", wantLoc: [2]int{0, 0}, locOK: true},
		{give: "0:" + top, wantLayout: [2]int{0, keyspace.MaxShards}, layoutOK: true},
		{give: "-1:2", wantLayout: [2]int{-1, 2}, layoutOK: true},
		{give: "1:-2"},
		{give: "1"},
		{give: "a:2"},
		{give: "1:b"},
		{give: "1:2:3"},
		{give: ""},
	}
	for _, tt := range tests {
		if e, n, ok := parseTarget(tt.give); ok != tt.layoutOK || [2]int{e, n} != tt.wantLayout {
			t.Errorf("parseTarget(%q) = %d, %d, %v; want %v, %v", tt.give, e, n, ok, tt.wantLayout, tt.layoutOK)
		}
		if e, i, ok := parseLoc(tt.give); ok != tt.locOK || [2]int{e, i} != tt.wantLoc {
			t.Errorf("parseLoc(%q) = %d, %d, %v; want %v, %v", tt.give, e, i, ok, tt.wantLoc, tt.locOK)
		}
	}
}
