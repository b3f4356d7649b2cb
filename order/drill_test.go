//go:build integration

package order

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestWriterKilledMidStream closes the writer's consumer abruptly mid-stream and starts a
// new one in the same group: exactly the reserved count of orders.
func TestWriterKilledMidStream(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 4, 3000)
	a.reserve(3000)
	log := testLogger(t)
	m := testMetrics()
	opts := rmqOptions(t, a)
	pub, err := NewRocketMQ(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	startRelay(t, context.Background(), must(NewRelay(rdb, pub, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals}, m, log)))

	consume := func() *RocketMQ {
		o := opts
		o.InstanceName = uniq("otw")
		q, err := NewRocketMQ(o)
		if err != nil {
			t.Fatal(err)
		}
		w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{BatchSize: 100, MaxOrdersPerSecond: 1500}, m, log))
		if err := q.Subscribe(w.Handle); err != nil {
			t.Fatal(err)
		}
		return q
	}
	first := consume()
	testwait.Eventually(t, 60*time.Second, func() bool { return countOrders(t, db, a.id).rows >= 500 }, "first orders")
	first.Close() // abrupt: in-flight batches are dropped and come again
	mid := countOrders(t, db, a.id).rows
	second := consume()
	t.Cleanup(func() { second.Close() })
	waitOrders(t, db, a, 3000, 120*time.Second)
	c := countOrders(t, db, a.id)
	if c.rows != 3000 || c.distinct != 3000 {
		t.Fatalf("orders %+v, want 3000 distinct", c)
	}
	if mid >= 3000 {
		t.Logf("note: the first writer finished before it was killed (%d)", mid)
	}
	assertReconciled(t, must(NewReconciler(db, rdb, ReconcileOptions{}, m, log)), a, 3000)
}

// stallingPublisher publishes the first n batches, then blocks until ctx ends: a relay
// that dies in the middle of a send.
type stallingPublisher struct {
	inner   Publisher
	n       atomic.Int32
	stalled chan struct{}
	once    sync.Once
}

func (p *stallingPublisher) Publish(ctx context.Context, msgs []Message) error {
	if p.n.Add(-1) < 0 {
		p.once.Do(func() { close(p.stalled) })
		<-ctx.Done()
		return ctx.Err()
	}
	return p.inner.Publish(ctx, msgs)
}

// TestRelayKilledMidStream stops a relay while it holds read-but-unacknowledged entries;
// a second relay claims them after ClaimIdle: exact count, nothing doubled.
func TestRelayKilledMidStream(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 4, 2000)
	a.reserve(2000)
	log := testLogger(t)
	m := testMetrics()
	q := NewMemQueue(4096, nil)
	t.Cleanup(func() { q.Close() })
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, log))
	if err := q.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	sp := &stallingPublisher{inner: q, stalled: make(chan struct{})}
	sp.n.Store(3)
	stop := startRelay(t, context.Background(), must(NewRelay(rdb, sp, RelayOptions{InstanceID: uniq("dying"), Batch: 100,
		ClaimIdle: time.Second, JournalsKey: a.journals}, m, log)))
	select {
	case <-sp.stalled:
	case <-time.After(20 * time.Second):
		t.Fatal("relay never stalled")
	}
	stop()
	left := a.pendingEntries()
	if left == 0 {
		t.Fatal("the killed relay left nothing pending; the drill proves nothing")
	}
	t.Logf("killed relay left %d entries pending", left)
	startRelay(t, context.Background(), must(NewRelay(rdb, q, RelayOptions{InstanceID: uniq("heir"), Batch: 100,
		ClaimIdle: time.Second, JournalsKey: a.journals}, m, log)))
	waitOrders(t, db, a, 2000, 60*time.Second)
	c := countOrders(t, db, a.id)
	if c.rows != 2000 || c.distinct != 2000 {
		t.Fatalf("orders %+v", c)
	}
	assertReconciled(t, must(NewReconciler(db, rdb, ReconcileOptions{}, m, log)), a, 2000)
}

// switchPublisher sends through down while the switch is off and through up once it is on.
type switchPublisher struct {
	down, up Publisher
	on       atomic.Bool
	failures atomic.Int32
}

func (p *switchPublisher) Publish(ctx context.Context, msgs []Message) error {
	if !p.on.Load() {
		err := p.down.Publish(ctx, msgs)
		if err != nil {
			p.failures.Add(1)
		}
		return err
	}
	return p.up.Publish(ctx, msgs)
}

// TestQueueUnavailable relays while the queue is unreachable (a real RocketMQ producer
// pointed at a dead name server), then switches to the live RocketMQ: nothing lost,
// nothing doubled, and nothing acknowledged in the journal while the queue was down.
func TestQueueUnavailable(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 4, 1000)
	a.reserve(1000)
	log := testLogger(t)
	m := testMetrics()
	deadProducer, err := rocketmq.NewProducer(producer.WithNameServer([]string{"127.0.0.1:1"}),
		producer.WithGroupName("otp-dead-"+a.id), producer.WithInstanceName(uniq("otdead")),
		producer.WithRetry(0), producer.WithSendMsgTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := deadProducer.Start(); err != nil {
		t.Fatal(err)
	}
	dead := &RocketMQ{opts: RocketMQOptions{Topic: "ot-" + a.id}, producer: deadProducer}
	t.Cleanup(func() { dead.Close() })
	live, err := NewRocketMQ(rmqOptions(t, a))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, log))
	if err := live.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	sw := &switchPublisher{down: dead, up: live}
	startRelay(t, context.Background(), must(NewRelay(rdb, sw, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals,
		MaxBackoff: 300 * time.Millisecond, ClaimIdle: 2 * time.Second}, m, log)))
	// Several delivery rounds fail (the relay backs off up to 300 ms between them).
	testwait.Eventually(t, 10*time.Second, func() bool { return sw.failures.Load() >= 5 }, "five failed publishes to the dead queue")
	rep, err := must(NewReconciler(db, rdb, ReconcileOptions{}, m, log)).Report(context.Background(), a.id)
	if err != nil {
		t.Fatal(err)
	}
	if sw.failures.Load() == 0 || rep.JournalPending != 1000 || rep.OrdersInDB != 0 {
		t.Fatalf("while down: %d failed publishes, report %+v; want failures and everything pending", sw.failures.Load(), rep)
	}
	sw.on.Store(true)
	waitOrders(t, db, a, 1000, 60*time.Second)
	if c := countOrders(t, db, a.id); c.rows != 1000 || c.distinct != 1000 {
		t.Fatalf("orders %+v", c)
	}
	assertReconciled(t, must(NewReconciler(db, rdb, ReconcileOptions{}, m, log)), a, 1000)
}

// TestMySQLUnavailable cuts the writer off MariaDB (a fault proxy) mid-stream, then lets it
// back: nothing lost, nothing doubled, connections never above the pool.
func TestMySQLUnavailable(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 4, 2000)
	a.reserve(2000)
	log := testLogger(t)
	m := testMetrics()
	proxy, err := faultproxy.New("127.0.0.1:0", "127.0.0.1:3306")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	dsn := strings.Replace(testsvc.MySQLDSN, "127.0.0.1:3306", proxy.Addr(), 1) + "&timeout=1s&readTimeout=3s&writeTimeout=3s"
	w := must(NewWriter(openDB(t, dsn), rdb, WriterOptions{BatchSize: 50, MaxOrdersPerSecond: 500, PoolSize: 3}, m, log))
	peak := poolWatch(t, w)
	q := NewMemQueue(4096, nil)
	t.Cleanup(func() { q.Close() })
	if err := q.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	startRelay(t, context.Background(), must(NewRelay(rdb, q, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals}, m, log)))
	testwait.Eventually(t, 30*time.Second, func() bool { return countOrders(t, db, a.id).rows >= 300 }, "first orders")
	if err := proxy.Disable(); err != nil {
		t.Fatal(err)
	}
	down := countOrders(t, db, a.id).rows
	var n int64
	testwait.Never(t, 4*time.Second, func() bool { n = countOrders(t, db, a.id).rows; return n > down+50 },
		"orders grew from %d to %v with MySQL down", down, testwait.Lazy(func() string { return fmt.Sprint(n) }))
	if err := proxy.Enable(); err != nil {
		t.Fatal(err)
	}
	waitOrders(t, db, a, 2000, 60*time.Second)
	if c := countOrders(t, db, a.id); c.rows != 2000 || c.distinct != 2000 {
		t.Fatalf("orders %+v", c)
	}
	if p := peak(); p > 3 {
		t.Fatalf("writer pool peaked at %d, pool size 3", p)
	}
	assertReconciled(t, must(NewReconciler(db, rdb, ReconcileOptions{}, m, log)), a, 2000)
}

// pendingEntries counts journal entries read by some relay but not acknowledged.
func (a *testActivity) pendingEntries() int64 {
	ctx := context.Background()
	streams, err := a.rdb.SMembers(ctx, a.journals).Result()
	if err != nil {
		a.t.Fatal(err)
	}
	var n int64
	for _, s := range streams {
		p, err := a.rdb.XPending(ctx, s, RelayGroup).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			a.t.Fatal(err)
		}
		if p != nil {
			n += p.Count
		}
	}
	return n
}
