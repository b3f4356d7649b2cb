//go:build integration

package inventory

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// privateCluster starts a Redis Cluster of two masters of its own (slots 0-8191 and
// 8192-16383) on free ports, killed when the test ends: a slot move must not disturb the
// shared test cluster other suites run on. It returns the node clients (by address) and a
// cluster client.
func privateCluster(t *testing.T) (map[string]*redis.Client, *redis.ClusterClient) {
	t.Helper()
	ctx := ctxT(t)
	nodes := map[string]*redis.Client{}
	var addrs []string
	for i := 0; i < 2; i++ {
		addr := testsvc.PrivateRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() { c.Close() })
		nodes[addr] = c
		addrs = append(addrs, addr)
	}
	a, b := nodes[addrs[0]], nodes[addrs[1]]
	if err := a.Do(ctx, "cluster", "addslotsrange", 0, 8191).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Do(ctx, "cluster", "addslotsrange", 8192, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addrs[1])
	if err := a.Do(ctx, "cluster", "meet", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, func() bool {
		for _, c := range nodes {
			info, _ := c.ClusterInfo(ctx).Result()
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:2") {
				return false
			}
		}
		return true
	}, "private cluster ok")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DisableIdentity: true, PoolSize: 64})
	t.Cleanup(func() { cc.Close() })
	return nodes, cc
}

// moveSlot moves the slot of key from its node to the other one the way an operator does:
// SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE of the keys first (one
// call: the shard's own keys move together), hold (the slot is half moved: the rush meets ASK
// redirects and TRYAGAIN there), MIGRATE of every other key of the slot in batches until none
// is left, then SETSLOT NODE on both.
func moveSlot(t *testing.T, nodes map[string]*redis.Client, key string, first []string, hold func()) {
	t.Helper()
	ctx := ctxT(t)
	var one *redis.Client
	for _, c := range nodes {
		one = c
		break
	}
	slot, err := one.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var src, dst *redis.Client
	var srcAddr, dstAddr string
	for addr, c := range nodes {
		owns := false
		shards, err := c.ClusterShards(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		myID, err := c.Do(ctx, "cluster", "myid").Text()
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start <= slot && slot <= r.End {
					for _, n := range sh.Nodes {
						owns = owns || n.ID == myID && n.Role == "master"
					}
				}
			}
		}
		if owns {
			src, srcAddr = c, addr
		} else {
			dst, dstAddr = c, addr
		}
	}
	if src == nil || dst == nil {
		t.Fatalf("slot %d: no owner found", slot)
	}
	srcID, _ := src.Do(ctx, "cluster", "myid").Text()
	dstID, _ := dst.Do(ctx, "cluster", "myid").Text()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err())
	must(src.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err())
	host, port, _ := net.SplitHostPort(dstAddr)
	migrate := func(keys []string) {
		t.Helper()
		args := []any{"migrate", host, port, "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err())
	}
	var present []string
	for _, k := range first {
		if src.Exists(ctx, k).Val() == 1 {
			present = append(present, k)
		}
	}
	migrate(present)
	hold()
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		migrate(keys)
	}
	must(dst.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	must(src.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	t.Logf("moved slot %d (%s) from %s to %s", slot, key, srcAddr, dstAddr)
}

// TestSlotMoveCostsAtMostARetry is issue 19's defect 3: while the slot of a shard migrates
// (the test's own cluster: SETSLOT MIGRATING/IMPORTING, MIGRATE of the shard's keys), the
// reservations of that shard must go on, each at the cost of one retry at most: none is
// refused with an error (a 503), and the stock stays exact (ground truth: stock keys, transit
// entries and the reservations taken).
func TestSlotMoveCostsAtMostARetry(t *testing.T) {
	nodes, rdb := privateCluster(t)
	s, a, ctx := storeWith(t, rdb, Options{MaxOtherShards: -1}, openActivity(t, 4000, 1, 4))
	const home = 0
	// Every key the shard's reservations touch exists before the move (a first reservation).
	if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: userOn(s, "warm", home, 4), Quantity: 1}); err != nil || r.Code != Reserved {
		t.Fatalf("warm-up reserve: %v %v", r.Code, err)
	}
	var reserved, failures atomic.Int64
	reserved.Add(1)
	var errMu sync.Mutex
	var errs []string
	stop := make(chan struct{})
	var next atomic.Int64
	wait := workers(16, stop, func() bool {
		u := userOn(s, fmt.Sprintf("rush%d-", next.Add(1)), home, 4)
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
		switch {
		case err != nil:
			failures.Add(1)
			errMu.Lock()
			if len(errs) < 5 {
				errs = append(errs, err.Error())
			}
			errMu.Unlock()
		case r.Code == Reserved:
			reserved.Add(1)
		}
		return true
	})
	testwait.Eventually(t, 10*time.Second, func() bool { return reserved.Load() > 50 }, "the rush is under way")
	before := reserved.Load()
	k := Shard(a.ID, 0, home)
	moveSlot(t, nodes, k.Stock(), []string{k.Stock(), k.Users(), k.Seq(), k.Journal(), k.Stats(), k.Gen(), k.Drained(), k.XOut(), k.XIn()}, func() {
		at := reserved.Load()
		testwait.Eventually(t, 10*time.Second, func() bool { return reserved.Load() > at+50 }, "reservations while the slot is half moved (%v failed: %v)",
			testwait.Lazy(func() string { return strconv.FormatInt(failures.Load(), 10) }),
			testwait.Lazy(func() string { errMu.Lock(); defer errMu.Unlock(); return strings.Join(errs, "; ") }))
	})
	at := reserved.Load()
	testwait.Eventually(t, 10*time.Second, func() bool { return reserved.Load() > at+50 }, "reservations after the move")
	close(stop)
	wait()
	t.Logf("%d reservations, %d during and after the move, %d failed, %d sent a second time", reserved.Load(),
		reserved.Load()-before, failures.Load(), s.slotRetries.Load())
	if n := failures.Load(); n > 0 {
		t.Errorf("%d reservations of the moving shard failed (a 503 each), e.g. %q", n, errs)
	}
	if got := groundUnits(t, rdb, a.ID) + reserved.Load(); got != a.Stock {
		t.Fatalf("stock keys + transit + reserved = %d, want %d", got, a.Stock)
	}
}
