//go:build integration

package app

// Durability drills (issue 18, docs/DESIGN.md "Durability"): a Redis of the drill's own is
// SIGKILLed mid-rush, standalone with appendfsync always (mode aof) and as the master of a
// Sentinel group (mode replicas:1). Every 202 must become an order, nothing is sold over the
// stock or over a user's limit, and the instance follows the failover without a restart.
// The shared test servers are never touched: each drill runs its own redis-server processes
// on free ports, with their own data dirs.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// redisProc is a redis-server (or sentinel) process of a drill, on its own port and data
// dir, killed when the test ends: the one way a drill gets a Redis it may kill (the shared
// servers are never touched).
type redisProc struct {
	t    *testing.T
	port int
	dir  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedisProc starts redis-server on a free port with its own dir; extra are more
// arguments (a config file first for a sentinel: sentinel=true).
func startRedisProc(t *testing.T, sentinel bool, extra ...string) *redisProc {
	t.Helper()
	r := &redisProc{t: t, port: freePort(t), dir: t.TempDir()}
	if sentinel {
		conf := filepath.Join(r.dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(strings.Join(extra, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r.args = []string{conf, "--sentinel"}
		extra = nil
	}
	r.args = append(r.args, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--logfile", filepath.Join(r.dir, "redis.log"), "--daemonize", "no")
	if !sentinel {
		r.args = append(r.args, "--save", "")
	}
	r.args = append(r.args, extra...)
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *redisProc) start() {
	r.t.Helper()
	cmd := exec.Command("redis-server", r.args...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	c := redis.NewClient(&redis.Options{Addr: r.addr(), DisableIdentity: true})
	defer c.Close()
	testwait.Eventually(r.t, 15*time.Second, func() bool { return c.Ping(context.Background()).Err() == nil },
		"redis-server on %d answers PING; its log: %v", r.port, testwait.Lazy(func() string { return tail(filepath.Join(r.dir, "redis.log"), 20) }))
}

// kill sends SIGKILL and waits until the process is gone.
func (r *redisProc) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Kill()
	<-done
}

// client is a plain client of the process, closed when the test ends.
func (r *redisProc) client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.addr(), DisableIdentity: true})
	r.t.Cleanup(func() { c.Close() })
	return c
}

// sentinelGroup is one master, one replica and three sentinels (quorum 2) watching it
// under the name "drill".
type sentinelGroup struct {
	master, replica *redisProc
	sentinels       []*redisProc
}

func startSentinelGroup(t *testing.T) *sentinelGroup {
	t.Helper()
	g := &sentinelGroup{}
	persist := []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	g.master = startRedisProc(t, false, persist...)
	g.replica = startRedisProc(t, false, append(persist, "--replicaof", "127.0.0.1", strconv.Itoa(g.master.port))...)
	mc := g.master.client()
	testwait.Eventually(t, 15*time.Second, func() bool {
		info, err := mc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "state=online")
	}, "the replica is online")
	for i := 0; i < 3; i++ {
		g.sentinels = append(g.sentinels, startRedisProc(t, true,
			"sentinel monitor drill 127.0.0.1 "+strconv.Itoa(g.master.port)+" 2",
			"sentinel down-after-milliseconds drill 1000",
			"sentinel failover-timeout drill 5000",
			"sentinel parallel-syncs drill 1"))
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.sentinels[0].addr()})
	t.Cleanup(func() { sc.Close() })
	testwait.Eventually(t, 15*time.Second, func() bool {
		s, err := sc.Sentinels(context.Background(), "drill").Result()
		return err == nil && len(s) == 2
	}, "every sentinel knows the two others")
	// A sentinel that has not yet listed the replica has nobody to promote: the kill would
	// find no candidate and the failover wait for the failover timeout's retry.
	testwait.Eventually(t, 30*time.Second, func() bool {
		for _, s := range g.sentinels {
			if !strings.Contains(g.sentinelReplicas(s), "127.0.0.1:"+strconv.Itoa(g.replica.port)+" slave\n") {
				return false
			}
		}
		return true
	}, "every sentinel lists the replica as a healthy slave: %v", testwait.Lazy(g.diag))
	return g
}

// sentinelReplicas is the replicas of "drill" as sentinel s lists them, one "ip:port flags"
// per line (or the error).
func (g *sentinelGroup) sentinelReplicas(s *redisProc) string {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr()})
	defer sc.Close()
	rs, err := sc.Replicas(context.Background(), "drill").Result()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s:%s %s\n", r["ip"], r["port"], r["flags"])
	}
	return b.String()
}

// diag is each sentinel's account of the failover: its INFO sentinel (tilt, the master's
// status), its replicas and the end of its log.
func (g *sentinelGroup) diag() string {
	var b strings.Builder
	for _, s := range g.sentinels {
		c := redis.NewClient(&redis.Options{Addr: s.addr(), DisableIdentity: true})
		info, err := c.Info(context.Background(), "sentinel").Result()
		c.Close()
		if err != nil {
			info = err.Error()
		}
		fmt.Fprintf(&b, "\n--- sentinel %s:\n%s\nreplicas:\n%s\nlog:\n%s\n", s.addr(), strings.TrimSpace(info),
			g.sentinelReplicas(s), tail(filepath.Join(s.dir, "redis.log"), 15))
	}
	return b.String()
}

func (g *sentinelGroup) addrs() string {
	a := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		a[i] = s.addr()
	}
	return strings.Join(a, ",")
}

// masterPort is the master's port as the first sentinel that answers says.
func (g *sentinelGroup) masterPort() int {
	for _, s := range g.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr()})
		a, err := sc.GetMasterAddrByName(context.Background(), "drill").Result()
		sc.Close()
		if err == nil && len(a) == 2 {
			p, _ := strconv.Atoi(a[1])
			return p
		}
	}
	return 0
}

// The start is refused, with a message that says what to set, when the Redis does not
// provide the durability mode: aof on a Redis with appendonly no, replicas:1 on one without
// a replica, appendfsync no under aof.
func TestStartRefusedWithoutTheDurabilityMode(t *testing.T) {
	plain := startRedisProc(t, false, "--appendonly", "no")
	lazy := startRedisProc(t, false, "--appendonly", "yes", "--appendfsync", "no")
	for _, tc := range []struct {
		give string
		addr string
		want []string
	}{
		{give: "aof", addr: plain.addr(), want: []string{"appendonly no", "set appendonly yes", "SECKILL_REDIS_DURABILITY=none"}},
		{give: "replicas:1", addr: plain.addr(), want: []string{"0 replica(s) online, want 1", "add a replica"}},
		{give: "aof", addr: lazy.addr(), want: []string{"appendfsync no", "set appendfsync always or everysec"}},
	} {
		t.Run(tc.give, func(t *testing.T) {
			opts := realOptions(t)
			opts.RedisAddr = tc.addr
			d, err := inventory.ParseDurability(tc.give)
			if err != nil {
				t.Fatal(err)
			}
			opts.RedisDurability = d
			opts.DataDir = t.TempDir()
			opts.ConfigFile = filepath.Join(t.TempDir(), "seckill.yaml")
			if err := os.WriteFile(opts.ConfigFile, []byte(testConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			a, err := New(context.Background(), opts, discardLog())
			if err == nil {
				a.Close()
				t.Fatalf("started in mode %s on %s", tc.give, tc.addr)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// The same Redis with what the mode needs: the start goes on.
	opts := realOptions(t)
	opts.RedisAddr = startRedisProc(t, false, "--appendonly", "yes", "--appendfsync", "always").addr()
	opts.RedisDurability = inventory.Durability{AOF: true}
	startApp(t, opts, testConfig)
}

// Redis SIGKILLed mid-rush and started again on the same AOF, mode aof with appendfsync
// always: every 202 is an order, nothing over the stock, nobody over the limit.
func TestDrillRedisKilledAOFAlways(t *testing.T) {
	t.Parallel()
	const stock = 300
	rp := startRedisProc(t, false, "--appendonly", "yes", "--appendfsync", "always")
	opts := realOptions(t)
	opts.RedisAddr = rp.addr()
	opts.RedisDurability = inventory.Durability{AOF: true}
	ta := startApp(t, opts, testConfig)
	if ta.relayHorizon() != 0 {
		t.Errorf("relay fsync horizon %v with appendfsync always, want 0", ta.relayHorizon())
	}
	id := uniq(t, "aofkill")
	ta.createActivity(t, id, stock, 1, 4, time.Now().Add(-time.Second))

	var once sync.Once
	var killedAt atomic.Int64
	var acceptedAtKill atomic.Int64
	restarted := make(chan struct{})
	res := drillRush(t, drillClient{base: func(int) string { return ta.base }, ramp: 6 * time.Second}, id, 2*stock, 16, func(r *drillResult) {
		if r.acceptedN.Load() < stock/3 {
			return
		}
		once.Do(func() {
			rp.kill()
			acceptedAtKill.Store(r.acceptedN.Load())
			killedAt.Store(time.Now().UnixNano())
			go func() {
				defer close(restarted)
				time.Sleep(time.Second)
				rp.start()
			}()
		})
	})
	if killedAt.Load() == 0 {
		t.Fatal("Redis was never killed")
	}
	<-restarted
	if n := int64(len(res.accepted)); n <= acceptedAtKill.Load() {
		t.Errorf("no reservation accepted after the restart (%d at the kill, %d at the end)", acceptedAtKill.Load(), n)
	}
	t.Logf("redis SIGKILLed after %d accepted reservations and restarted 1 s later on its AOF", acceptedAtKill.Load())
	assertOrdersMatch(t, id, stock, 1, res)
	waitDriftZero(t, ta, id)
}

// The Sentinel master SIGKILLed mid-rush, mode replicas:1: the sentinels promote the replica,
// the instance follows without a restart and reservations resume; the old master, started
// again (as a supervisor would), becomes the new master's replica. Every 202 is an order,
// nothing over the stock, nobody over the limit, and an OUTCOME_UNKNOWN retried with its key
// (the crowd always retries so) resolves to the reservation or to nothing, never to two.
func TestDrillSentinelMasterKilled(t *testing.T) {
	t.Parallel()
	const stock = 300
	g := startSentinelGroup(t)
	opts := realOptions(t)
	opts.RedisAddr = g.addrs()
	opts.RedisSentinelMaster = "drill"
	opts.RedisDurability = inventory.Durability{Replicas: 1}
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "sentkill")
	ta.createActivity(t, id, stock, 1, 4, time.Now().Add(-time.Second))

	// 60 s: a sentinel starved of CPU enters TILT mode for 30 s and fails nothing over in it.
	killMasterDuringRush(t, ta, id, stock, g.master, 60*time.Second, "the sentinels' master", func() bool {
		return g.masterPort() == g.replica.port
	}, g.diag)
}

// In mode replicas:1 a reservation whose WAIT falls short (the replica is gone) is not a
// 202: it is 503 OUTCOME_UNKNOWN with the idempotency key, and its retry with that key
// while the replica is still gone is not a 200 either; once the replica is back, the retry
// answers the one reservation (or makes it), never a second one.
func TestReplicasModeWithoutReplicaIsOutcomeUnknown(t *testing.T) {
	master := startRedisProc(t, false)
	replica := startRedisProc(t, false, "--replicaof", "127.0.0.1", strconv.Itoa(master.port))
	mc := master.client()
	online := func() bool {
		info, err := mc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "state=online")
	}
	testwait.Eventually(t, 15*time.Second, online, "the replica is online")
	opts := realOptions(t)
	opts.RedisAddr = master.addr()
	opts.RedisDurability = inventory.Durability{Replicas: 1, Timeout: 100 * time.Millisecond}
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "nowait")
	ta.createActivity(t, id, 5, 1, 1, time.Now().Add(-time.Second))
	if a := ta.reserve(t, id, "u-before", "k-before"); a.status != 202 {
		t.Fatalf("with the replica online: %d %v", a.status, a.body)
	}

	replica.kill()
	testwait.Eventually(t, 15*time.Second, func() bool { return !online() }, "the master sees its replica gone")
	a := ta.reserve(t, id, "u1", "k1")
	if a.status != 503 || a.body["code"] != "OUTCOME_UNKNOWN" || a.body["idempotencyKey"] != "k1" {
		t.Fatalf("reservation without its replica: %d %v, want 503 OUTCOME_UNKNOWN with the key", a.status, a.body)
	}
	if a := ta.reserve(t, id, "u1", "k1"); a.status != 503 || a.body["code"] != "OUTCOME_UNKNOWN" {
		t.Fatalf("retry while the replica is still gone: %d %v, want 503 OUTCOME_UNKNOWN", a.status, a.body)
	}
	replica.start()
	testwait.Eventually(t, 15*time.Second, online, "the replica is back")
	var first string
	for i := 0; i < 2; i++ {
		a := ta.reserve(t, id, "u1", "k1")
		if a.status != 200 && a.status != 202 {
			t.Fatalf("retry %d with the replica back: %d %v", i, a.status, a.body)
		}
		rid := fmt.Sprint(a.body["reservationId"])
		if first == "" {
			first = rid
		} else if rid != first {
			t.Fatalf("the key answered two reservations: %s and %s", first, rid)
		}
	}
	if a := ta.reserve(t, id, "u1", "k2"); a.status != 409 {
		t.Fatalf("another key of the same user (limit 1): %d %v, want 409", a.status, a.body)
	}
}

// TestDrillRedisRolledBackEverysec: Redis with appendfsync everysec (mode aof) loses the last
// moment of its writes: the drill copies its AOF mid-rush, lets the crowd go on for up to 1 s
// (what a crash of the machine under everysec loses), SIGKILLs it and starts it on the copy.
// The reservations of that moment are gone from Redis (their units and the buyers' counts are
// back, their reservation numbers too) while the relay, which publishes an entry only once it
// is older than the fsync horizon (3 s) and still in the stream, sent none of them. The
// instance notices the rollback at the first reservation number it hands out a second time
// (answered 503 OUTCOME_UNKNOWN, never 202) and fences the activity: RECOVERING until the
// operator's restore, which reopens it. Nothing is sold twice and nobody goes over the limit,
// counted from MySQL's rows and Redis's keys: exactly the stock in orders, each order a
// reservation the crowd saw accepted for that buyer, nobody above the limit, Redis's stock
// keys at 0 and the reconciliation at zero drift. Counted and logged: the 202s lost with the
// rollback (everysec allows them) and the reservation ids the rolled-back Redis handed out
// again before the fence (those in flight when it was noticed, each answered OUTCOME_UNKNOWN).
func TestDrillRedisRolledBackEverysec(t *testing.T) {
	t.Parallel()
	const stock, shards, conns = 300, 4, 16
	rp := startRedisProc(t, false, "--appendonly", "yes", "--appendfsync", "everysec")
	opts := realOptions(t)
	opts.RedisAddr = rp.addr()
	opts.RedisDurability = inventory.Durability{AOF: true}
	ta := startApp(t, opts, testConfig)
	if ta.relayHorizon() != inventory.EverysecHorizon {
		t.Fatalf("relay fsync horizon %v with appendfsync everysec, want %v", ta.relayHorizon(), inventory.EverysecHorizon)
	}
	id := uniq(t, "aofroll")
	ta.createActivity(t, id, stock, 1, shards, time.Now().Add(-time.Second))

	aof := filepath.Join(rp.dir, "appendonlydir")
	snap := filepath.Join(t.TempDir(), "appendonlydir")
	var once sync.Once
	var acceptedAtCopy, acceptedAtKill atomic.Int64
	more := make(chan struct{}, 1)
	restored := make(chan struct{})
	var restoreResp answer
	res := drillRush(t, drillClient{base: func(int) string { return ta.base }, ramp: 4 * time.Second}, id, 2*stock, conns, func(r *drillResult) {
		if n := acceptedAtCopy.Load(); n > 0 && r.acceptedN.Load() >= n+40 {
			select {
			case more <- struct{}{}:
			default:
			}
		}
		if r.acceptedN.Load() < stock/3 {
			return
		}
		once.Do(func() {
			if err := os.CopyFS(snap, os.DirFS(aof)); err != nil {
				t.Errorf("copy the AOF: %v", err)
			}
			acceptedAtCopy.Store(r.acceptedN.Load())
			go func() {
				defer close(restored)
				select { // the moment everysec may lose: 40 more reservations, 1 s at most
				case <-more:
				case <-time.After(time.Second):
				}
				rp.kill()
				acceptedAtKill.Store(r.acceptedN.Load())
				if err := os.RemoveAll(aof); err != nil {
					t.Error(err)
				}
				if err := os.Rename(snap, aof); err != nil {
					t.Error(err)
				}
				rp.start()
				var last answer
				testwait.Eventually(t, 60*time.Second, func() bool {
					last = ta.do(t, "GET", "/api/v1/activities/"+id, nil, "")
					return last.body["status"] == "RECOVERING"
				}, "the rolled-back activity noticed and fenced (last %v)", testwait.Lazy(func() string { return fmt.Sprint(last.status, last.body) }))
				restoreResp = restoreAndWait(t, ta, id)
			}()
		})
	})
	if acceptedAtCopy.Load() == 0 {
		t.Fatal("Redis was never rolled back")
	}
	<-restored
	if restoreResp.status != http.StatusOK {
		t.Fatalf("restore after the rollback: %d %v", restoreResp.status, restoreResp.body)
	}
	waitOrders(t, id, stock, 1)
	orders := ordersOf(t, id)
	pairs := len(res.accepted)
	for rid, user := range orders {
		if got, ok := res.accepted[rid]; !ok || got != user {
			t.Errorf("order %s of %s: the crowd never saw that reservation accepted for that buyer (first for %q)", rid, user, got)
		}
	}
	// No id went to two buyers (drillRush fails on DUPLICATE_RID): a number the rollback
	// handed out again is another id (its issuer and call parts), a new sale of a unit the
	// rollback gave back (MySQL's guard has the last word on it). Numbers are handed out again
	// only by calls in flight when the first one met the floor and fenced: at most one per
	// connection of the crowd.
	numbers := map[string]int{}
	again := 0
	for rid := range res.accepted {
		k, n, ok := inventory.ParseReservationID(rid)
		if !ok {
			t.Fatalf("accepted reservation id %q does not parse", rid)
		}
		if numbers[inventory.ReservationNumber(id, k.Epoch, k.Shard, n)]++; numbers[inventory.ReservationNumber(id, k.Epoch, k.Shard, n)] == 2 {
			again++
		}
	}
	if again > conns {
		t.Errorf("%d reservation numbers handed out again with %d connections: the rollback went unnoticed", again, conns)
	}
	ctx := context.Background()
	rdb := rp.client()
	var left int64
	epoch := int(restoreResp.body["epoch"].(float64))
	for i := 0; i < shards; i++ {
		n, err := rdb.Get(ctx, inventory.Shard(id, epoch, i).Stock()).Int64()
		if err != nil {
			t.Fatalf("stock key of shard %d: %v", i, err)
		}
		left += n
	}
	if left != 0 {
		t.Errorf("Redis's stock keys hold %d units with %d units in orders of a stock of %d", left, len(orders), stock)
	}
	waitDriftZero(t, ta, id)
	t.Logf("AOF copied after %d accepted, Redis killed after %d and started on the copy; restore: %v; %d reservations accepted in all, %d orders: %d 202s lost with the rollback; %d reservation numbers handed out again before the fence (under other ids)",
		acceptedAtCopy.Load(), acceptedAtKill.Load(), restoreResp.body, pairs, len(orders), pairs-len(orders), again)
}

// freeClusterPort is a free port whose cluster bus port (+10000) is free too.
func freeClusterPort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		p := freePort(t)
		if p+10000 > 65535 {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

// startPrivateCluster starts a Redis Cluster of its own: three masters, a replica each
// (node timeout 2 s, so a replica takes over a dead master within seconds).
func startPrivateCluster(t *testing.T) []*redisProc {
	t.Helper()
	var nodes []*redisProc
	var addrs []string
	for i := 0; i < 6; i++ {
		r := &redisProc{t: t, port: freeClusterPort(t), dir: t.TempDir()}
		r.args = []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
			"--logfile", filepath.Join(r.dir, "redis.log"), "--daemonize", "no", "--save", "", "--appendonly", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"}
		r.start()
		t.Cleanup(r.kill)
		nodes = append(nodes, r)
		addrs = append(addrs, r.addr())
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DisableIdentity: true})
	defer c.Close()
	testwait.Eventually(t, 60*time.Second, func() bool {
		ms, err := inventory.CheckDurability(context.Background(), c, inventory.Durability{Replicas: 1})
		if err != nil || len(ms) != 3 {
			c.ReloadState(context.Background())
			return false
		}
		for _, n := range nodes {
			info, err := n.client().ClusterInfo(context.Background()).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	}, "the private cluster up: 3 masters with a replica each")
	return nodes
}

// TestDrillClusterMasterKilled: the Redis Cluster master of one of the activity's shards
// SIGKILLed mid-rush, mode replicas:1: its replica takes over, the instance follows without a
// restart (slot map reloaded) and reservations resume; the old master, started again (as a
// supervisor would), rejoins as the new master's replica, which gives WAIT its replica back.
// Every 202 is an order, nothing over the stock, nobody over the limit, and an OUTCOME_UNKNOWN
// retried with its key resolves to the reservation or to nothing, never to two.
func TestDrillClusterMasterKilled(t *testing.T) {
	t.Parallel()
	const stock = 300
	nodes := startPrivateCluster(t)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.addr())
	}
	opts := realOptions(t)
	opts.RedisAddr = strings.Join(addrs, ",")
	opts.RedisDurability = inventory.Durability{Replicas: 1}
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "clkill")
	ta.createActivity(t, id, stock, 1, 4, time.Now().Add(-time.Second))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DisableIdentity: true})
	t.Cleanup(func() { cc.Close() })
	master, err := cc.MasterForKey(context.Background(), inventory.Shard(id, 0, 0).Stock())
	if err != nil {
		t.Fatal(err)
	}
	var victim *redisProc
	for _, n := range nodes {
		if n.addr() == master.Options().Addr {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("the master of shard 0 (%s) is not one of the drill's nodes", master.Options().Addr)
	}

	key := inventory.Shard(id, 0, 0).Stock()
	killMasterDuringRush(t, ta, id, stock, victim, 40*time.Second, "the master of shard 0 ("+victim.addr()+")", func() bool {
		cc.ReloadState(context.Background())
		m, err := cc.MasterForKey(context.Background(), key)
		return err == nil && m.Options().Addr != victim.addr() && m.Ping(context.Background()).Err() == nil
	}, func() string {
		var b strings.Builder
		for _, n := range nodes {
			if n == victim {
				continue
			}
			c := n.client()
			out, err := c.ClusterNodes(context.Background()).Result()
			if err != nil {
				out = err.Error()
			}
			fmt.Fprintf(&b, "\n--- node %s:\n%s\nlog:\n%s\n", n.addr(), strings.TrimSpace(out), tail(filepath.Join(n.dir, "redis.log"), 10))
		}
		return b.String()
	})
}

// killMasterDuringRush is the kill drill of a Redis master (victim, named what in the log)
// under a rush of 2 * stock users on activity id: once a third of the stock is accepted it
// SIGKILLs victim, waits up to wait for failedOver to hold (polled every 100 ms), then starts
// victim again (it rejoins as the new master's replica, as under a supervisor). The failover
// must have come, reservations must have been accepted after it, nobody twice, and every
// 202 must be an order (assertOrdersMatch, then zero drift). When the failover does not come
// within wait, the crowd is stopped at once and the test fails with diag's account of the
// failover's parts (a Redis that is never failed over only answers RECOVERING, and 600
// users each retrying for their whole patience would hold the suite for most of an hour).
func killMasterDuringRush(t *testing.T, ta *testApp, id string, stock int, victim *redisProc, wait time.Duration, what string, failedOver func() bool, diag func() string) {
	t.Helper()
	var once sync.Once
	var acceptedAtFailover atomic.Int64
	var sawFailover atomic.Bool
	done := make(chan struct{})
	quit := make(chan struct{})
	var codesAtKill map[string]int
	res := drillRush(t, drillClient{base: func(int) string { return ta.base }, ramp: 8 * time.Second, quit: quit}, id, 2*stock, 16, func(r *drillResult) {
		if r.acceptedN.Load() < int64(stock/3) {
			return
		}
		once.Do(func() {
			codesAtKill = r.snapshot()
			victim.kill()
			go func() {
				defer close(done)
				deadline := time.Now().Add(wait)
				for !failedOver() && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
				}
				if !failedOver() {
					close(quit)
					return
				}
				sawFailover.Store(true)
				acceptedAtFailover.Store(r.acceptedN.Load())
				victim.start() // rejoins as the new master's replica
			}()
		})
	})
	select {
	case <-done:
	case <-time.After(wait + 20*time.Second):
		t.Fatal("no failover")
	}
	if !sawFailover.Load() {
		t.Fatalf("%s is still the master %v after the kill (the crowd was stopped then: %v); %s", what, wait, res.snapshot(), diag())
	}
	if n := int64(len(res.accepted)); n <= acceptedAtFailover.Load() {
		t.Errorf("no reservation accepted after the failover (%d then, %d at the end)", acceptedAtFailover.Load(), n)
	}
	assertOneReservationPerUser(t, res)
	final := res.snapshot()
	t.Logf("%s SIGKILLed at %v; failover seen after %d accepted; outcome unknown answers since the kill: %d",
		what, codesAtKill, acceptedAtFailover.Load(), final["503 OUTCOME_UNKNOWN"]-codesAtKill["503 OUTCOME_UNKNOWN"])
	assertOrdersMatch(t, id, stock, 1, res)
	waitDriftZero(t, ta, id)
}

// assertOneReservationPerUser fails the test for every user the drill's crowd was answered
// two accepted reservations (the drills run with a per-user limit of 1).
func assertOneReservationPerUser(t *testing.T, res *drillResult) {
	t.Helper()
	users := map[string]string{}
	for rid, u := range res.accepted {
		if prev, dup := users[u]; dup {
			t.Errorf("user %s was answered two reservations, %s and %s", u, prev, rid)
		}
		users[u] = rid
	}
}
