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

	"github.com/seckill/seckill/internal/syncbuf"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
)

func TestDuplicateDeliveryMakesOneOrder(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 2, 10, 1)
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
	rec := recordOf(t, rdb, msgs[0])
	if rec.Status != "CONFIRMED" || rec.OrderID == "" {
		t.Fatalf("record %v", rec)
	}
	k, _ := keysOf(msgs[0])
	if got, _ := rdb.HGet(context.Background(), k.Stats(), "confirmed").Int(); got != 1 {
		t.Fatalf("stats.confirmed = %d, want 1", got)
	}
}

func TestCompensateTwiceReturnsStockOnce(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 10)
	msgs := a.reserveFor([]string{"buyer-" + a.id}, 3)
	ctx := context.Background()
	k, _ := keysOf(msgs[0])
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
	if st := recordOf(t, rdb, msgs[0]).Status; st != "FAILED" {
		t.Fatalf("status %q", st)
	}
	if u, _, err := inventory.ReadUserState(ctx, rdb, k, msgs[0].UserHash); err != nil || u.Held != 0 {
		t.Fatal("the buyer still holds units")
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
	rdb, _, a, msgs := reservedOn(t, 1, 10, 1)
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
	if st := recordOf(t, rdb, msgs[0]).Status; st != "CONFIRMED" {
		t.Fatalf("status %q, want CONFIRMED", st)
	}
}

func TestSeqConflictIsCompensated(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 10)
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
	rdb, db, a, msgs := reservedOn(t, 2, 100, 50)
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	var logged syncbuf.Buffer
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
	for _, rec := range logged.Records(t) {
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

func TestDataErrorIsDeadLettered(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 1, 10, 1)
	// A seq beyond the INT column is a permanent data error (strict mode): the writer
	// isolates the row, dead-letters it and compensates the reservation; the good one in
	// the same batch still becomes an order.
	good := a.reserve(1)
	bad := msgs[0]
	bad.Seq = 1 << 40
	m := testMetrics()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
	if err := w.Handle(context.Background(), []Message{bad, good[0]}); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(m.WriterErrors.WithLabelValues("poison")); got != 1 {
		t.Fatalf("order_writer_errors_total{class=poison} = %v, want 1", got)
	}
	if err := w.Healthy(); err != nil {
		t.Fatalf("a poison row made the writer unhealthy: %v", err)
	}
	if st := a.statuses(); st["FAILED"] != 1 || st["CONFIRMED"] != 1 {
		t.Fatalf("statuses %v", st)
	}
	if c := countOrders(t, db, a.id); c.rows != 1 {
		t.Fatalf("orders %+v", c)
	}
}

// A reservation sold by a shard that a reshard has since drained: compensation credits its
// units to the user's home shard of the current layout (sellable again), exactly once, and
// never recreates the drained shard's stock.
func TestCompensateAfterReshardCreditsTheCurrentLayout(t *testing.T) {
	t.Parallel()
	rdb, _, a := activityOn(t, 1, 10)
	msgs := a.reserveFor([]string{"moved-" + a.id}, 2)
	ctx := context.Background()
	old, _ := keysOf(msgs[0])
	// What a reshard 1 -> 2 leaves behind: the old shard drained (stock key gone, marker set),
	// its 8 remaining units on the new layout, meta on epoch 1.
	remaining, _ := rdb.Get(ctx, old.Stock()).Int64()
	newShards := []inventory.ShardKeys{inventory.Shard(a.id, 1, 0), inventory.Shard(a.id, 1, 1)}
	pipe := rdb.TxPipeline()
	pipe.Del(ctx, old.Stock())
	pipe.Set(ctx, old.Drained(), remaining, 0)
	pipe.Set(ctx, newShards[0].Stock(), remaining/2, 0)
	pipe.Set(ctx, newShards[1].Stock(), remaining-remaining/2, 0)
	pipe.HSet(ctx, inventory.Meta(a.id), "epoch", 1, "shards", 2, "layouts", "0:1,1:2")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, k := range newShards {
			rdb.Del(context.Background(), k.Stock())
		}
		rdb.Del(context.Background(), old.Drained())
	})
	home := newShards[inventory.HomeShard(msgs[0].UserHash, 2)]
	before, _ := rdb.Get(ctx, home.Stock()).Int64()
	c := must(NewCompensator(writerDB(t, testsvc.MySQLDSN), rdb, testMetrics(), testLogger(t)))
	for i := 0; i < 3; i++ {
		if err := c.Compensate(ctx, msgs[0], "test"); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := rdb.Get(ctx, home.Stock()).Int64()
	if after-before != 2 {
		t.Fatalf("home shard of the current layout went from %d to %d, want +2", before, after)
	}
	if n, _ := rdb.Exists(ctx, old.Stock()).Result(); n != 0 {
		t.Fatal("compensation recreated the drained shard's stock")
	}
	if st := recordOf(t, rdb, msgs[0]).Status; st != "FAILED" {
		t.Fatalf("status %q", st)
	}
	stats, _ := rdb.HGetAll(ctx, old.Stats()).Result()
	if stats["failed"] != "2" || stats["compensated"] != "2" {
		t.Fatalf("stats %v", stats)
	}
}
