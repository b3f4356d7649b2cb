package app

import (
	"fmt"
	"testing"
	"time"
)

// TestLayoutFollowsAnActivityCreatedAfterTheApply: the configuration names a shard count
// for an activity before the activity is created (an operator prepares the sale's config,
// then posts the activity, whose body says 4 shards by default). runReshard's pass at the
// apply skips the unknown activity and reports nothing pending, so no later pass comes until
// the next config edit: the activity keeps 4 shards while the applied configuration says 2.
func TestLayoutFollowsAnActivityCreatedAfterTheApply(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "later")
	ta.setConfig(t, testConfig+fmt.Sprintf("activities:\n  %s:\n    shards: 2\n", id))
	snap := ta.cfg.Current()
	if n, ok := snap.Cfg.ShardsOverride(id); !ok || n != 2 {
		t.Fatalf("applied snapshot has shards %d, %v; want 2", n, ok)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ta.layouts.followed.Load() != snap { // the pass of the apply is over
		if time.Now().After(deadline) {
			t.Fatal("snapshot not followed within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ta.createActivity(t, id, 100, 1, 4, time.Now().Add(-time.Second))
	deadline = time.Now().Add(5 * time.Second)
	for {
		v, ok := ta.inv.Activity(id)
		if ok && v.Shards == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after its creation the activity has %d shards (known %v); the applied configuration says 2", v.Shards, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
