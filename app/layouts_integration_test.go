//go:build integration

package app

import (
	"fmt"
	"testing"
	"time"
)

// TestLayoutFollowedByAStartingInstance: an instance whose first configuration already names
// a shard count for an activity another instance created reshards it at its first apply,
// whether or not its inventory cache has met the activity yet (runReshard looks it up), and
// the first instance serves the new layout too.
func TestLayoutFollowedByAStartingInstance(t *testing.T) {
	opts := realOptions(t)
	opts.Namespace = fmt.Sprintf("t%d", time.Now().UnixNano())
	first := startApp(t, opts, testConfig)
	id := uniq(t, "starting")
	first.createActivity(t, id, 60, 1, 4, time.Now().Add(-time.Second))

	second := startApp(t, opts, testConfig+fmt.Sprintf("activities:\n  %s:\n    shards: 3\n", id))
	snap := second.cfg.Current()
	deadline := time.Now().Add(10 * time.Second)
	for second.layouts.followed.Load() != snap {
		if time.Now().After(deadline) {
			t.Fatalf("the starting instance did not follow its first snapshot within 10 s (retrying %v)", second.layouts.retrying.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, ok := second.inv.Activity(id); !ok || v.Shards != 3 || v.Epoch != 1 {
		t.Fatalf("starting instance: %+v (known %v), want 3 shards at epoch 1", v, ok)
	}
	// The first instance learns it from the layout event or its next refresh (250 ms).
	deadline = time.Now().Add(5 * time.Second)
	for {
		v, _ := first.inv.Activity(id)
		if v.Shards == 3 && v.Epoch == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first instance still shows %+v 5 s after the reshard", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
