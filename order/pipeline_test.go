//go:build integration

package order

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
)

// activityOn is the start of most tests: the test Redis and MySQL, and an activity of stock
// units on shards in both.
func activityOn(t *testing.T, shards int, stock int64) (redis.UniversalClient, *gorm.DB, *testActivity) {
	t.Helper()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	return rdb, db, newTestActivity(t, rdb, db, shards, stock)
}

// reservedOn is activityOn with n reservations of one unit made, for n distinct users: their
// messages, as the relay would publish them.
func reservedOn(t *testing.T, shards int, stock int64, n int) (redis.UniversalClient, *gorm.DB, *testActivity, []Message) {
	t.Helper()
	rdb, db, a := activityOn(t, shards, stock)
	return rdb, db, a, a.reserve(n)
}

// reservedPipeline is the start of a pipeline test: the test Redis and MySQL, an activity of
// stock units on shards of which reserved are reserved (their entries in its journals), fresh
// metrics and a logger.
func reservedPipeline(t *testing.T, shards int, stock int64, reserved int) (redis.UniversalClient, *gorm.DB, *testActivity, *Metrics, *slog.Logger) {
	t.Helper()
	rdb, db, a, _ := reservedOn(t, shards, stock, reserved)
	return rdb, db, a, testMetrics(), testLogger(t)
}

// subscribeWriter subscribes to q a writer (opts) with a pool of its own on the test MySQL.
func subscribeWriter(t testing.TB, q Subscriber, rdb redis.UniversalClient, opts WriterOptions, m *Metrics, log *slog.Logger) *Writer {
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, opts, m, log))
	if err := q.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	return w
}

// memQueue is a MemQueue of n messages, closed when the test ends.
func memQueue(t testing.TB, n int) *MemQueue {
	q := NewMemQueue(n, nil)
	t.Cleanup(func() { q.Close() })
	return q
}

// relayJournals starts a relay (the default options) of a's journals to pub.
func relayJournals(t testing.TB, rdb redis.UniversalClient, pub Publisher, a *testActivity, m *Metrics, log *slog.Logger) (stop func()) {
	return startRelay(t, context.Background(), must(NewRelay(rdb, pub, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals}, m, log)))
}

func startRelay(t testing.TB, ctx context.Context, r *Relay) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func assertReconciled(t *testing.T, rec *Reconciler, a *testActivity, wantOrders int64) Report {
	t.Helper()
	rep, err := rec.Report(context.Background(), a.id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift != 0 || rep.JournalPending != 0 || rep.InFlight != 0 || rep.OrdersInDB != wantOrders ||
		rep.Stock != a.stock || rep.Reserved-rep.Compensated != wantOrders {
		t.Fatalf("reconciliation: %+v, want drift 0, %d orders", rep, wantOrders)
	}
	return rep
}

func TestRocketMQBrokerDiscovery(t *testing.T) {
	ns := testsvc.RocketMQ(t)
	got, err := masterBrokers(context.Background(), []string{ns})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0] != testsvc.RocketMQBroker {
		t.Fatalf("masterBrokers = %v, want [%s]", got, testsvc.RocketMQBroker)
	}
}

// TestPipeline5000 sends 5,000 reservations through journal -> relay -> RocketMQ -> writer
// -> MySQL and checks exactly 5,000 orders, all CONFIRMED, drift 0, pool never exceeded.
func TestPipeline5000(t *testing.T) {
	t.Parallel()
	rdb, db, a, m, log := reservedPipeline(t, 8, 6000, 5000)

	q, err := NewRocketMQ(rmqOptions(t, a))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{BatchSize: 200, MaxOrdersPerSecond: -1, PoolSize: 4}, m, log))
	peak := testsvc.PoolPeak(t, w.db)
	if err := q.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	relayJournals(t, rdb, q, a, m, log)

	waitOrders(t, db, a, 5000, 90*time.Second)
	c := countOrders(t, db, a.id)
	if c.rows != 5000 || c.distinct != 5000 || c.units != 5000 {
		t.Fatalf("orders %+v, want 5000 distinct", c)
	}
	if st := a.statuses(); st["CONFIRMED"] != 5000 {
		t.Fatalf("statuses %v", st)
	}
	rec := must(NewReconciler(db, rdb, ReconcileOptions{}, m, log))
	assertReconciled(t, rec, a, 5000)
	if p := peak(); p > 4 {
		t.Fatalf("writer pool peaked at %d connections, pool size 4", p)
	}
	t.Logf("writer pool peak %d of 4", peak())
}
