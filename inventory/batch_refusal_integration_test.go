//go:build integration

package inventory

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// TestBatchServerRefusalFailsTheCall: a node that refuses writes for its state (here too few
// replicas, NOREPLICAS; a replica's READONLY, MISCONF and OOM alike) refuses a script without
// flags at its first write, before anything is written. The batch script's per-reservation
// pcall must not answer that refusal reservation by reservation: the whole call fails with
// the server's error, as the single script's does, so the client sees it (go-redis retries
// it, and drops the connection on READONLY after a failover). Nothing is written.
func TestBatchServerRefusalFailsTheCall(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: testsvc.PrivateRedis(t)})
	t.Cleanup(func() { rdb.Close() })
	s, a, ctx := storeWith(t, rdb, Options{ReserveBatch: 8}, openActivity(t, 20, 2, 2))
	e, err := s.entryFor(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	l := e.layout.Load()
	users := []string{userOnShard(s, "ra", 0, 2), userOnShard(s, "rb", 1, 2), userOnShard(s, "rc", 1, 2)}
	before := []shardTruth{readShardTruth(t, ctx, rdb, l.keys[0], ""), readShardTruth(t, ctx, rdb, l.keys[1], "")}
	if err := rdb.ConfigSet(ctx, "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	items := make([]*batchItem, len(users))
	for i, u := range users {
		items[i] = faultItem(s, e, l, u, "", tokenbucket.Limit{})
	}
	s.runBatch(ctx, e, l, items)
	for i, it := range items {
		if it.err == nil || !redis.HasErrorPrefix(it.err, "NOREPLICAS") {
			t.Errorf("%s: %v %v, want the server's NOREPLICAS for the whole call", users[i], it.res, it.err)
		} else if strings.Contains(it.err.Error(), "reservation of") {
			t.Errorf("%s: %v: answered per reservation, want the call's error", users[i], it.err)
		}
	}
	if err := rdb.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for h := range before {
		checkSold(t, fmt.Sprintf("shard %d", h), before[h], readShardTruth(t, ctx, rdb, l.keys[h], ""), 0, "")
	}
}
