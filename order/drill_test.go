//go:build integration

package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestWriterKilledMidStream closes the writer's consumer abruptly mid-stream and starts a
// new one in the same group: exactly the reserved count of orders.
func TestWriterKilledMidStream(t *testing.T) {
	t.Parallel()
	rdb, db, a, m, log := reservedPipeline(t, 4, 3000, 3000)
	opts := rmqOptions(t, a)
	pub, err := NewRocketMQ(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	relayJournals(t, rdb, pub, a, m, log)

	consume := func() *RocketMQ {
		o := opts
		o.InstanceName = uniq("otw")
		q, err := NewRocketMQ(o)
		if err != nil {
			t.Fatal(err)
		}
		subscribeWriter(t, q, rdb, WriterOptions{BatchSize: 100, MaxOrdersPerSecond: 1500}, m, log)
		return q
	}
	first := consume()
	testwait.Eventually(t, 60*time.Second, func() bool { return countOrders(t, db, a.id).rows >= 500 }, "first orders")
	first.Close() // abrupt: in-flight batches are dropped and come again
	mid := countOrders(t, db, a.id).rows
	second := consume()
	t.Cleanup(func() { second.Close() })
	assertExactOrders(t, rdb, db, a, 3000, 120*time.Second, m, log)
	if mid >= 3000 {
		t.Logf("note: the first writer finished before it was killed (%d)", mid)
	}
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
	rdb, db, a, m, log := reservedPipeline(t, 4, 2000, 2000)
	q := memQueue(t, 4096)
	subscribeWriter(t, q, rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, log)
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
	assertExactOrders(t, rdb, db, a, 2000, 60*time.Second, m, log)
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
	rdb, db, a, m, log := reservedPipeline(t, 4, 1000, 1000)
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
	subscribeWriter(t, live, rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, log)
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
	assertExactOrders(t, rdb, db, a, 1000, 60*time.Second, m, log)
}

// TestMySQLUnavailable cuts the writer off MariaDB (a fault proxy) mid-stream, then lets it
// back: nothing lost, nothing doubled, connections never above the pool.
func TestMySQLUnavailable(t *testing.T) {
	t.Parallel()
	rdb, db, a, m, log := reservedPipeline(t, 4, 2000, 2000)
	proxy, err := faultproxy.New("127.0.0.1:0", "127.0.0.1:3306")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	dsn := strings.Replace(testsvc.MySQLDSN, "127.0.0.1:3306", proxy.Addr(), 1) + "&timeout=1s&readTimeout=3s&writeTimeout=3s"
	w := must(NewWriter(openDB(t, dsn), rdb, WriterOptions{BatchSize: 50, MaxOrdersPerSecond: 500, PoolSize: 3}, m, log))
	peak := testsvc.PoolPeak(t, w.db)
	q := memQueue(t, 4096)
	if err := q.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	relayJournals(t, rdb, q, a, m, log)
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
	assertExactOrders(t, rdb, db, a, 2000, 60*time.Second, m, log)
	if p := peak(); p > 3 {
		t.Fatalf("writer pool peaked at %d, pool size 3", p)
	}
}

// assertExactOrders waits (up to timeout) for want orders of a in MySQL, none PENDING, checks
// that each reservation became one order, and that the reconciliation of a finds no drift.
func assertExactOrders(t *testing.T, rdb redis.UniversalClient, db *gorm.DB, a *testActivity, want int64, timeout time.Duration, m *Metrics, log *slog.Logger) {
	t.Helper()
	waitOrders(t, db, a, want, timeout)
	if c := countOrders(t, db, a.id); c.rows != want || c.distinct != want {
		t.Fatalf("orders %+v, want %d distinct", c, want)
	}
	assertReconciled(t, must(NewReconciler(db, rdb, ReconcileOptions{}, m, log)), a, want)
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
