//go:build integration

package app

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
)

// A WAIT that fails after the write succeeded (refused: an ACL without WAIT, a proxy, a
// renamed command) is a write not known to be durable, never a success (found in review:
// the WAIT's own error went back unwrapped and a reservation was answered 202).
func TestWaitRefusedIsNotDurable(t *testing.T) {
	r := startRedisProc(t, false, "--rename-command", "WAIT", "")
	rdb := redis.NewClient(&redis.Options{Addr: r.addr(), DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	d := inventory.Durability{Replicas: 1}
	var set *redis.StatusCmd
	err := d.Acked(ctx, rdb, "k", func(p redis.Pipeliner) { set = p.Set(ctx, "k", "v", 0) })
	if !errors.Is(err, inventory.ErrNotDurable) {
		t.Fatalf("Acked with WAIT refused: %v, want ErrNotDurable", err)
	}
	if set.Err() != nil {
		t.Fatalf("the write itself: %v", set.Err())
	}
}
