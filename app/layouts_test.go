package app

import (
	"fmt"
	"testing"
	"time"
)

// TestLayoutFollowsConfigApply: an applied snapshot that changes activities.<id>.shards
// starts the reshard at once (runReshard waits on the reloader's Changed, there is no poll),
// and once runReshard reports the snapshot followed the activity has that layout, with no
// further wait. Embedded mode: miniredis, no server needed.
func TestLayoutFollowsConfigApply(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "follow")
	ta.createActivity(t, id, 100, 1, 4, time.Now().Add(-time.Second))

	for i, n := range []int{2, 5} {
		ta.setConfig(t, testConfig+fmt.Sprintf("activities:\n  %s:\n    shards: %d\n", id, n))
		snap := ta.cfg.Current()
		appliedAt := ta.cfg.Status().AppliedAt
		if n2, ok := snap.Cfg.ShardsOverride(id); !ok || n2 != n {
			t.Fatalf("applied snapshot has shards %d, %v; want %d", n2, ok, n)
		}
		deadline := time.Now().Add(10 * time.Second)
		for ta.layouts.followed.Load() != snap {
			if time.Now().After(deadline) {
				t.Fatalf("snapshot with shards %d not followed within 10 s of its apply", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
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
	ta.setConfig(t, testConfig+fmt.Sprintf("activities:\n  %s:\n    shards: 2\n", id))
	snap := ta.cfg.Current()
	deadline := time.Now().Add(10 * time.Second)
	for !ta.layouts.retrying.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the pass after the apply did not report a reshard to retry within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ta.layouts.followed.Load() == snap {
		t.Fatal("snapshot followed although its reshard failed")
	}
	if v, _ := ta.inv.Activity(id); v.Shards != 4 {
		t.Fatalf("resharded to %d while the activity reads as loading", v.Shards)
	}
	ta.mini.HSet(meta, "loaded", "1")
	deadline = time.Now().Add(10 * time.Second)
	for ta.layouts.followed.Load() != snap {
		if time.Now().After(deadline) {
			t.Fatal("failed reshard not retried within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, ok := ta.inv.Activity(id); !ok || v.Shards != 2 || v.Epoch != 1 {
		t.Fatalf("after the retry: %+v (known %v), want 2 shards at epoch 1", v, ok)
	}
	if ta.layouts.retrying.Load() {
		t.Fatal("still retrying after the reshard succeeded")
	}
}
