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
		for ta.shardsFollowed.Load() != snap {
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
