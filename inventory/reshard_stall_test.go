package inventory

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// stallKey marks the context of the run a stallHook pauses.
type stallKey struct{}

// stallHook is a go-redis hook (h.hook()) that pauses the first call of script sc made under a
// context carrying stallKey: it closes paused, then waits for resume. Calls of other runs pass.
type stallHook struct {
	sc     *script
	once   sync.Once
	paused chan struct{}
	resume chan struct{}
}

// hook is the go-redis hook of h.
func (h *stallHook) hook() redishook.Hook {
	return redishook.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if ctx.Value(stallKey{}) != nil && h.calls(cmd) {
			h.once.Do(func() {
				close(h.paused)
				<-h.resume
			})
		}
		return next(ctx, cmd)
	}}
}

// calls reports whether cmd is an EVALSHA or EVAL of h.sc.
func (h *stallHook) calls(cmd redis.Cmder) bool {
	a := cmd.Args()
	if len(a) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return a[1] == h.sc.s.Hash()
	case "eval":
		return a[1] == h.sc.s.Source()
	}
	return false
}

// TestStalledReshardRunAfterItsLayoutRetired: a reshard run stalls (GC, a slow machine, a
// partition) after it read meta and before its drain, for longer than RetireAfter. Meanwhile
// another instance finishes the reshard and the old layout is retired: its keys are deleted.
// The stalled run wakes and drains the old layout. It must not act on what it finds there (no
// stock, no drained marker: the keys are gone, not lost): the activity stays live, not fenced
// or recovering, the stock stays exact (counted from the keys) and the run's caller finds the
// reshard done.
func TestStalledReshardRunAfterItsLayoutRetired(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		// A run limit a busy machine's reshard run stays within (at 100 ms the other
		// instance's own runs went too old six times in a row under a load average of 14).
		opts := Options{ReshardWorkers: 1, ReshardRunLimit: time.Second, RetireAfter: 2 * time.Second}
		s := newStore(t, rdb, opts)     // the instance whose run stalls
		other := newStore(t, rdb, opts) // the instance that finishes the reshard and retires
		l, err := NewLedger(rdb)
		if err != nil {
			t.Fatal(err)
		}
		a := mustCreate(t, s, openActivity(t, 10, 2, 2))
		var reserved int64
		var rids []string
		take := func(st *Store, u string) {
			t.Helper()
			r, err := st.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
			if err != nil || r.Code != Reserved {
				t.Fatalf("reserve %s: %+v %v", u, r, err)
			}
			reserved++
			rids = append(rids, r.ReservationID)
		}
		take(s, "u1")
		take(s, "u2")
		h := &stallHook{sc: s.drain, paused: make(chan struct{}), resume: make(chan struct{})}
		rdb.AddHook(h.hook())
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				close(h.resume)
			}
		}
		t.Cleanup(resume)
		runErr := make(chan error, 1)
		go func() { runErr <- s.Reshard(context.WithValue(ctx, stallKey{}, true), a.ID, 3) }()
		select {
		case <-h.paused:
		case err := <-runErr:
			t.Fatalf("the run did not reach its drain: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("the run did not reach its drain")
		}
		// Another instance finishes the recorded reshard 0:2 -> 1:3.
		if err := other.Reshard(ctx, a.ID, 3); err != nil {
			t.Fatal(err)
		}
		// The relay's and the writer's work on epoch 0: journals acknowledged, orders confirmed.
		for i := 0; i < 2; i++ {
			if err := rdb.Del(ctx, Shard(a.ID, 0, i).Journal()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		confirm(t, l, rids)
		// Layout 0 retires: stamped, RetireAfter later retired and its keys deleted.
		if n, err := other.Retire(ctx, a.ID); err != nil || n != 0 {
			t.Fatalf("first retire pass (stamps): retired %d, %v", n, err)
		}
		waitStampOld(t, rdb, a.ID, opts.RetireAfter)
		if n, err := other.Retire(ctx, a.ID); err != nil || n != 1 {
			t.Fatalf("retire: retired %d, %v, want layout 0", n, err)
		}
		if x := rdb.Exists(ctx, Shard(a.ID, 0, 0).Drained(), Shard(a.ID, 0, 1).Drained()).Val(); x != 0 {
			t.Fatalf("layout 0 retired but %d drained markers left", x)
		}
		take(other, "u3") // the activity sells on epoch 1
		// The stalled run wakes.
		resume()
		select {
		case err = <-runErr:
		case <-time.After(20 * time.Second):
			t.Fatal("the resumed run did not return")
		}
		if err != nil {
			t.Errorf("the resumed run: %v (want it to find the reshard done)", err)
		}
		m := rdb.HGetAll(ctx, Meta(a.ID)).Val()
		if m["gen"] == generationRolledBack || m["gen"] == generationFenced {
			t.Errorf("the resumed run fenced the live activity: meta gen %q", m["gen"])
		}
		if m["epoch"] != "1" || m["shards"] != "3" || m["reshard"] != "" {
			t.Errorf("meta epoch %q shards %q reshard %q, want 1, 3, none", m["epoch"], m["shards"], m["reshard"])
		}
		for name, st := range map[string]*Store{"stalled": s, "other": other} {
			if v, ok := st.Activity(a.ID); !ok || v.Recovering {
				t.Errorf("%s instance: activity %+v known %v, want live", name, v, ok)
			}
		}
		for i := 0; i < 2; i++ {
			k := Shard(a.ID, 0, i)
			if x := rdb.Exists(ctx, k.Stock(), k.Drained(), k.Gen(), k.Stats()).Val(); x != 0 {
				t.Errorf("the resumed run wrote %d keys on retired shard %d of epoch 0", x, i)
			}
		}
		if got := groundUnits(t, rdb, a.ID) + reserved; got != a.Stock {
			t.Errorf("stock keys + transit + reserved = %d + %d, want %d", got-reserved, reserved, a.Stock)
		}
		// Both instances still sell.
		for i, st := range []*Store{s, other} {
			take(st, fmt.Sprint("after", i))
		}
		if got := groundUnits(t, rdb, a.ID) + reserved; got != a.Stock {
			t.Errorf("after selling: stock keys + transit + reserved = %d + %d, want %d", got-reserved, reserved, a.Stock)
		}
	})
}
