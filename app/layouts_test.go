package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// withShards is testConfig with activities.<id>.shards set to n.
func withShards(id string, n int) string {
	return testConfig + fmt.Sprintf("activities:\n  %s:\n    shards: %d\n", id, n)
}

// waitFollowed waits up to 10 s until every activity of ta has the layout snap names (its
// layouts report snap followed); what says what the wait was for.
func waitFollowed(t *testing.T, ta *testApp, snap *Snapshot, what string, args ...any) {
	t.Helper()
	testwait.Eventually(t, 10*time.Second, func() bool { return ta.layouts.followed.Load() == snap }, what, args...)
}

// TestLayoutFollowsConfigApply: an applied snapshot that changes activities.<id>.shards
// starts the reshard at once (runReshard waits on the reloader's Changed, there is no poll),
// and once runReshard reports the snapshot followed the activity has that layout, with no
// further wait. Embedded mode: miniredis, no server needed.
func TestLayoutFollowsConfigApply(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "follow")
	ta.createActivity(t, id, 100, 1, 4, time.Now().Add(-time.Second))

	for i, n := range []int{2, 5} {
		ta.setConfig(t, withShards(id, n))
		snap := ta.cfg.Current()
		appliedAt := ta.cfg.Status().AppliedAt
		if n2, ok := snap.Cfg.ShardsOverride(id); !ok || n2 != n {
			t.Fatalf("applied snapshot has shards %d, %v; want %d", n2, ok, n)
		}
		waitFollowed(t, ta, snap, "snapshot with shards %d followed after its apply", n)
		v, ok := ta.inv.Activity(id)
		if !ok || v.Shards != n || v.Epoch != i+1 {
			t.Fatalf("after following shards %d: view %+v (known %v), want %d shards at epoch %d", n, v, ok, n, i+1)
		}
		t.Logf("shards %d: layout in place %v after the apply", n, time.Since(appliedAt).Round(time.Millisecond))
	}
	// The stock moved exactly: every unit is still there.
	if err := ta.inv.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v, _ := ta.inv.Activity(id); v.Remaining != 100 {
		t.Fatalf("remaining after two reshards = %d, want 100", v.Remaining)
	}
}

// TestLayoutRetriesAFailedReshard: a reshard that fails after the apply (here: the activity
// reads as still loading) is tried again by the retry timer, with no further config edit, and
// the snapshot counts as followed only once it succeeded.
func TestLayoutRetriesAFailedReshard(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "retry")
	ta.createActivity(t, id, 50, 1, 4, time.Now().Add(-time.Second))
	meta := "sk:{" + id + "}:meta"
	ta.mini.HDel(meta, "loaded")
	ta.setConfig(t, withShards(id, 2))
	snap := ta.cfg.Current()
	testwait.Eventually(t, 10*time.Second, ta.layouts.retrying.Load, "the pass after the apply reports a reshard to retry")
	if ta.layouts.followed.Load() == snap {
		t.Fatal("snapshot followed although its reshard failed")
	}
	if v, _ := ta.inv.Activity(id); v.Shards != 4 {
		t.Fatalf("resharded to %d while the activity reads as loading", v.Shards)
	}
	ta.mini.HSet(meta, "loaded", "1")
	waitFollowed(t, ta, snap, "failed reshard retried")
	if v, ok := ta.inv.Activity(id); !ok || v.Shards != 2 || v.Epoch != 1 {
		t.Fatalf("after the retry: %+v (known %v), want 2 shards at epoch 1", v, ok)
	}
	if ta.layouts.retrying.Load() {
		t.Fatal("still retrying after the reshard succeeded")
	}
}

// TestLayoutFollowsAnActivityCreatedAfterTheApply: the configuration names a shard count
// for an activity before the activity is created (an operator prepares the sale's config,
// then posts the activity, whose body says 4 shards by default). runReshard's pass at the
// apply skips the unknown activity and reports nothing pending, so no later pass comes until
// the next config edit: the activity keeps 4 shards while the applied configuration says 2.
func TestLayoutFollowsAnActivityCreatedAfterTheApply(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "later")
	ta.setConfig(t, withShards(id, 2))
	snap := ta.cfg.Current()
	if n, ok := snap.Cfg.ShardsOverride(id); !ok || n != 2 {
		t.Fatalf("applied snapshot has shards %d, %v; want 2", n, ok)
	}
	waitFollowed(t, ta, snap, "snapshot followed") // the pass of the apply is over
	ta.createActivity(t, id, 100, 1, 4, time.Now().Add(-time.Second))
	var v inventory.ActivityView
	var known bool
	testwait.Eventually(t, 5*time.Second, func() bool {
		v, known = ta.inv.Activity(id)
		return known && v.Shards == 2
	}, "5 s after its creation the activity has %v shards (known %v); the applied configuration says 2",
		testwait.Lazy(func() string { return fmt.Sprint(v.Shards) }), testwait.Lazy(func() string { return fmt.Sprint(known) }))
}
