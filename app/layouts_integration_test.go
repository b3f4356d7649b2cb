//go:build integration

package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
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

	second := startApp(t, opts, withShards(id, 3))
	waitFollowed(t, second, second.cfg.Current(), "the starting instance follows its first snapshot (retrying %v)",
		testwait.Lazy(func() string { return fmt.Sprint(second.layouts.retrying.Load()) }))
	if v, ok := second.inv.Activity(id); !ok || v.Shards != 3 || v.Epoch != 1 {
		t.Fatalf("starting instance: %+v (known %v), want 3 shards at epoch 1", v, ok)
	}
	// The first instance learns it from the layout event or its next refresh (250 ms).
	var v inventory.ActivityView
	testwait.Eventually(t, 5*time.Second, func() bool {
		v, _ = first.inv.Activity(id)
		return v.Shards == 3 && v.Epoch == 1
	}, "first instance shows the reshard (last %+v)", testwait.Lazy(func() string { return fmt.Sprintf("%+v", v) }))
}
