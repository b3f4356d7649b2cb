//go:build integration

package order

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

func TestDuplicateDeliveryMakesOneOrder(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 2, 10)
	msgs := a.reserve(1)
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	// Three deliveries, two of them concurrent, one in a batch with itself.
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Handle(context.Background(), msgs); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := w.Handle(context.Background(), append(msgs, msgs...)); err != nil {
		t.Fatal(err)
	}
	if c := countOrders(t, db, a.id); c.rows != 1 {
		t.Fatalf("orders %+v, want 1", c)
	}
	k, n := keysOf(msgs[0])
	rec, _ := rdb.HGetAll(context.Background(), k.Record(n)).Result()
	if rec["status"] != "CONFIRMED" || rec["orderId"] == "" {
		t.Fatalf("record %v", rec)
	}
	if got, _ := rdb.HGet(context.Background(), k.Stats(), "confirmed").Int(); got != 1 {
		t.Fatalf("stats.confirmed = %d, want 1", got)
	}
}

func TestCompensateTwiceReturnsStockOnce(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 1, 10)
	msgs := a.reserveFor([]string{"buyer-" + a.id}, 3)
	ctx := context.Background()
	k, n := keysOf(msgs[0])
	before, _ := rdb.Get(ctx, k.Stock()).Int64()
	c := must(NewCompensator(writerDB(t, testsvc.MySQLDSN), rdb, testMetrics(), testLogger(t)))
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Compensate(ctx, msgs[0], "test"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := c.Compensate(ctx, msgs[0], "test again"); err != nil {
		t.Fatal(err)
	}
	after, _ := rdb.Get(ctx, k.Stock()).Int64()
	if after-before != 3 {
		t.Fatalf("stock went from %d to %d, want +3", before, after)
	}
	if st, _ := rdb.HGet(ctx, k.Record(n), "status").Result(); st != "FAILED" {
		t.Fatalf("status %q", st)
	}
	if _, err := rdb.HGet(ctx, k.Users(), msgs[0].UserHash).Result(); err == nil {
		t.Fatal("buyer record still there")
	}
	stats, _ := rdb.HGetAll(ctx, k.Stats()).Result()
	if stats["failed"] != "3" || stats["compensated"] != "3" {
		t.Fatalf("stats %v", stats)
	}
	var rows int64
	if err := db.Table("compensations").Where("reservation_id = ?", msgs[0].ReservationID).Count(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Fatalf("%d compensation rows", rows)
	}
	// A late delivery of the failed reservation never becomes an order.
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	if err := w.Handle(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if c := countOrders(t, db, a.id); c.rows != 0 {
		t.Fatalf("orders %+v for a compensated reservation", c)
	}
	rep, err := must(NewReconciler(db, rdb, ReconcileOptions{}, testMetrics(), testLogger(t))).Report(ctx, a.id)
	if err != nil {
		t.Fatal(err)
	}
	// Never relayed in this test, so journalPending still counts the 3 units that the
	// compensation already returned: drift is -3 by construction.
	if rep.Compensated != 3 || rep.RedisRemaining != 10 || rep.OrdersInDB != 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestCompensateRefusesWhenOrderExists(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 1, 10)
	msgs := a.reserve(1)
	ctx := context.Background()
	wdb := writerDB(t, testsvc.MySQLDSN)
	// Order committed but the confirm step "crashed": insert the row directly.
	if err := wdb.Exec("INSERT INTO orders (reservation_id, activity_id, user_id, quantity, seq) VALUES (?,?,?,?,?)",
		msgs[0].ReservationID, a.id, msgs[0].UserID, 1, 1).Error; err != nil {
		t.Fatal(err)
	}
	err := must(NewCompensator(wdb, rdb, testMetrics(), testLogger(t))).Compensate(ctx, msgs[0], "test")
	if !errors.Is(err, ErrOrderExists) {
		t.Fatalf("err = %v, want ErrOrderExists", err)
	}
	k, n := keysOf(msgs[0])
	if st, _ := rdb.HGet(ctx, k.Record(n), "status").Result(); st != "CONFIRMED" {
		t.Fatalf("status %q, want CONFIRMED", st)
	}
}

func TestSeqConflictIsCompensated(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 1, 10)
	user := "twice-" + a.id
	first := a.reserveFor([]string{user}, 1)
	a.users[user] = 0 // a buggy upstream hands out seq 1 twice
	second := a.reserveFor([]string{user}, 1)
	m := testMetrics()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
	if err := w.Handle(context.Background(), append(first, second...)); err != nil {
		t.Fatal(err)
	}
	if c := countOrders(t, db, a.id); c.rows != 1 {
		t.Fatalf("orders %+v, want 1", c)
	}
	if st := a.statuses(); st["CONFIRMED"] != 1 || st["FAILED"] != 1 {
		t.Fatalf("statuses %v", st)
	}
}

func TestPanicInHandlerIsRedelivered(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 2, 100)
	msgs := a.reserve(50)
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	var logged syncBuffer
	q := NewMemQueue(100, slog.New(slog.NewJSONHandler(&logged, nil)))
	var panics atomic.Int32
	if err := q.Subscribe(func(ctx context.Context, ms []Message) error {
		if panics.Add(1) <= 2 {
			panic("boom")
		}
		return w.Handle(ctx, ms)
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if err := q.Publish(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	waitOrders(t, db, a, 50, 20*time.Second)
	if c := countOrders(t, db, a.id); c.rows != 50 {
		t.Fatalf("orders %+v", c)
	}
	// Each panic is logged once, by the queue, with the panic and where it happened.
	var lines int
	for _, rec := range logged.lines(t) {
		if rec["msg"] != "message handler panicked; the batch will be delivered again" {
			continue
		}
		lines++
		if stack, _ := rec["stack"].(string); rec["panic"] != "boom" || !strings.Contains(stack, "TestPanicInHandlerIsRedelivered") {
			t.Fatalf("panic logged as %v, want the value and a stack through the handler", rec)
		}
	}
	if lines != 2 {
		t.Fatalf("%d panic lines logged, want 2", lines)
	}
}
