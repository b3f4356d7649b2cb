//go:build integration

package order

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// countingRedis returns a client of the test Redis of its own, and its command counter.
func countingRedis(t testing.TB) (redis.UniversalClient, *redishook.Counter) {
	t.Helper()
	rdb := testsvc.Redis(t)
	c := &redishook.Counter{}
	rdb.(*redis.Client).AddHook(c)
	return rdb, c
}

// TestWriterRedisCallsPerOrder: the writer confirms a batch with one script call per shard
// in it, so 1024 orders over 4 shards, delivered in batches of 128 (the in-process queue's
// batch), cost at most 0.1 Redis commands per order, and six MySQL statements per batch (the
// guarded transaction of insert.go: the activity's row lock, the orders and the compensations
// read, the insert, the sold count and the read back; BEGIN and COMMIT are not statements here).
func TestWriterRedisCallsPerOrder(t *testing.T) {
	t.Parallel()
	_, _, a := activityOn(t, 4, 1024)
	msgs := a.reserve(1024)
	wr, calls := countingRedis(t)
	wdb := writerDB(t, testsvc.MySQLDSN)
	stmts := countStatements(wdb)
	w := must(NewWriter(wdb, wr, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	ctx := context.Background()
	for len(msgs) > 0 {
		n := min(len(msgs), memBatch)
		if err := w.Handle(ctx, msgs[:n]); err != nil {
			t.Fatal(err)
		}
		msgs = msgs[n:]
	}
	if st := a.statuses(); st["CONFIRMED"] != 1024 {
		t.Fatalf("statuses %v", st)
	}
	t.Logf("%d Redis commands and %d MySQL statements for 1024 orders", calls.Load(), stmts.Load())
	if got, want := stmts.Load(), int64(6*1024/memBatch); got > want {
		t.Fatalf("%d MySQL statements for %d batches, want <= %d", got, 1024/memBatch, want)
	}
	if per := float64(calls.Load()) / 1024; per > 0.1 {
		t.Fatalf("%d Redis commands for 1024 orders: %.3f per order, want <= 0.1", calls.Load(), per)
	}
}

// TestRelayRedisCallsPerEntry: the relay reads and acknowledges a stream's entries in
// batches, so draining 2048 entries of 4 journals costs at most 0.1 Redis commands per entry.
func TestRelayRedisCallsPerEntry(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	a := newTestActivity(t, rdb, nil, 4, 2048)
	a.reserve(2048)
	rr, calls := countingRedis(t)
	q := memQueue(t, 4096)
	got := countDelivered(t, q)
	stop := startRelay(t, context.Background(), must(NewRelay(rr, q, RelayOptions{InstanceID: uniq("r"),
		JournalsKey: a.journals, Poll: time.Second}, testMetrics(), testLogger(t))))
	testwait.Eventually(t, 30*time.Second, func() bool { return got.Load() >= 2048 && a.pendingEntries() == 0 }, "2048 relayed")
	stop()
	t.Logf("%d Redis commands for 2048 entries", calls.Load())
	if per := float64(calls.Load()) / 2048; per > 0.1 {
		t.Fatalf("%d Redis commands for 2048 entries: %.3f per entry, want <= 0.1", calls.Load(), per)
	}
}

// countDelivered subscribes to q a handler that only counts the messages delivered.
func countDelivered(t *testing.T, q Subscriber) *atomic.Int64 {
	var got atomic.Int64
	if err := q.Subscribe(func(_ context.Context, ms []Message) error { got.Add(int64(len(ms))); return nil }); err != nil {
		t.Fatal(err)
	}
	return &got
}

// TestIdleRelayBacksOff: a relay that finds nothing new doubles its pause from Poll up to
// IdlePoll, so an idle relay over 4 journals sends a few Redis commands a second, not the 80
// of a read of each journal every 50 ms (the embedded mode's idle CPU); the first entry after
// the quiet spell is still relayed, and the pause is back at Poll after it.
func TestIdleRelayBacksOff(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	a := newTestActivity(t, rdb, nil, 4, 64)
	rr, calls := countingRedis(t)
	q := memQueue(t, 64)
	got := countDelivered(t, q)
	startRelay(t, context.Background(), must(NewRelay(rr, q, RelayOptions{InstanceID: uniq("r"),
		JournalsKey: a.journals}, testMetrics(), testLogger(t))))
	testwait.Eventually(t, 10*time.Second, func() bool { return calls.Load() > 4 }, "the relay reading its journals")
	time.Sleep(time.Second) // past the doubling to IdlePoll
	before := calls.Load()
	const window = 3 * time.Second
	time.Sleep(window) // the measurement window
	n := calls.Load() - before
	t.Logf("an idle relay over 4 journals sent %d Redis commands in %v", n, window)
	// At IdlePoll (500 ms): 4 reads per round, 2 rounds a second, one SMEMBERS a second; a
	// read of every journal at Poll (50 ms) would be 240.
	if n > 45 {
		t.Fatalf("an idle relay sent %d Redis commands in %v, want <= 45", n, window)
	}
	a.reserve(1)
	testwait.Eventually(t, 10*time.Second, func() bool { return got.Load() == 1 }, "the first entry after the quiet spell relayed")
}
