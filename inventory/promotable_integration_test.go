//go:build integration

package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestReplicasModeCoversEveryPromotableReplica: in mode replicas:N a 202 is kept by a failover
// only onto a replica that acknowledged it, and Sentinel orders its candidates by
// replica-priority before replication offset, so it may promote any replica whose priority is
// not 0. A master with two such replicas does not provide replicas:1 (the start is refused,
// saying what to set); it does once the second replica can never be promoted (priority 0),
// and it provides replicas:2 as is.
func TestReplicasModeCoversEveryPromotableReplica(t *testing.T) {
	master := testsvc.PrivateRedis(t)
	r1 := testsvc.PrivateReplica(t, master)
	r2 := testsvc.PrivateReplica(t, master)
	rdb := redis.NewClient(&redis.Options{Addr: master, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	testwait.Eventually(t, 20*time.Second, func() bool {
		ms, err := CheckDurability(ctx, rdb, Durability{Replicas: 2})
		return err == nil && len(ms) == 1 && ms[0].Replicas == 2
	}, "both replicas of %s online", master)

	one := Durability{Replicas: 1}
	_, err := CheckDurability(ctx, rdb, one)
	if !IsNotProvided(err) || !strings.Contains(err.Error(), "2 replicas that may be promoted") || !strings.Contains(err.Error(), "replica-priority 0") {
		t.Fatalf("replicas:1 with two promotable replicas: %v, want not provided, naming the promotable replicas and replica-priority 0", err)
	}
	if _, err := CheckDurability(ctx, rdb, Durability{Replicas: 2}); err != nil {
		t.Fatalf("replicas:2 with two replicas: %v", err)
	}
	c2 := redis.NewClient(&redis.Options{Addr: r2, DisableIdentity: true})
	t.Cleanup(func() { c2.Close() })
	if err := c2.ConfigSet(ctx, "replica-priority", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckDurability(ctx, rdb, one); err != nil {
		t.Fatalf("replicas:1 once %s can never be promoted (priority 0), %s can: %v", r2, r1, err)
	}
}
