//go:build integration

package order

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/lua"
	"github.com/seckill/seckill/sql"
)

// TestExpiredRecordCompensatedOrderIsUndone: the compensator looks up the order (none), and a
// writer's insert starts right then. The insert waits for the compensator's transaction (both
// hold the activity's row lock: insert.go, guardIncarnation), so it sees the compensations row
// and writes no order. The record expires before a redelivery, which must not leave an order
// beside the compensation either.
func TestExpiredRecordCompensatedOrderIsUndone(t *testing.T) {
	rdb, db, a, msgs := reservedOn(t, 1, 10, 1)
	x := msgs[0]
	ctx := context.Background()
	wdb := writerDB(t, testsvc.MySQLDSN)
	cdb := writerDB(t, testsvc.MySQLDSN)
	w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	var fired atomic.Bool
	inserted := make(chan error, 1)
	// After the compensator's order lookup, a writer's insert of the same reservation starts.
	if err := cdb.Callback().Query().After("gorm:query").Register("test:writer-inserts", func(tx *gorm.DB) {
		if fired.CompareAndSwap(false, true) {
			go func() {
				_, err := w.insert(ctx, []Message{x})
				inserted <- err
			}()
			select {
			case err := <-inserted:
				t.Errorf("the writer's insert ended (%v) while the compensator held the activity's row", err)
			case <-time.After(300 * time.Millisecond):
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	compensated(t, cdb, rdb, x)
	if !fired.Load() {
		t.Fatal("the compensator made no query: the hook never ran")
	}
	select {
	case err := <-inserted:
		if err != nil {
			t.Fatalf("writer insert: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer's insert still waits 10 s after the compensation")
	}
	if c := countOrders(t, db, a.id); c.rows != 0 {
		t.Fatalf("orders %+v beside %d compensation rows: the insert did not wait for the compensation", c, compensationRows(t, db, a.id))
	}
	k, n := keysOf(x)
	if err := rdb.HDel(ctx, k.Users(), inventory.RecordField(n)).Err(); err != nil { // record TTL ran out before the redelivery
		t.Fatal(err)
	}
	if err := w.Handle(ctx, msgs); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	if c := countOrders(t, db, a.id); c.rows != 0 {
		t.Fatalf("orders %+v and %d compensation rows for one reservation: the unit was returned and sold", c, compensationRows(t, db, a.id))
	}
}

// TestRedeliveryFinishesPartialCompensation: a message that panics past MaxAttempts is
// dead-lettered; the compensation is cut short after its row, at the record's fail (the
// reply lost after Redis applied it), so the batch is handed back. On the redelivery the
// write no longer panics: the insert skips the compensated reservation and the compensation
// is finished (the buyer's count lowered, the mark set). A late duplicate after the record is
// gone must not become an order for a unit that went back to stock.
func TestRedeliveryFinishesPartialCompensation(t *testing.T) {
	rdb, db, a, msgs := reservedOn(t, 1, 10, 1)
	ctx := context.Background()
	wdb := writerDB(t, testsvc.MySQLDSN)
	wrdb, h := scriptReplyLost(t, "inventory_fail.lua")
	w := must(NewWriter(wdb, wrdb, WriterOptions{MaxOrdersPerSecond: -1, MaxAttempts: 2}, testMetrics(), testLogger(t)))
	w.beforeInsert = func([]Message) { panic("transient bug") }
	if err := w.Handle(ctx, late(msgs, 2)); err == nil {
		t.Fatal("first delivery: want an error (compensation incomplete)")
	}
	if h.armed.Load() {
		t.Fatal("the record's fail was never sent")
	}
	t.Logf("after dead-letter attempt: statuses %v, comp rows %d", a.statuses(), compensationRows(t, db, a.id))
	w.beforeInsert = nil
	if err := w.Handle(ctx, late(msgs, 3)); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	t.Logf("after redelivery: statuses %v, orders %+v, comp rows %d", a.statuses(), countOrders(t, db, a.id), compensationRows(t, db, a.id))
	done, err := must(inventory.NewLedger(rdb)).Compensated(ctx, msgs[0].ReservationID)
	if err != nil || !done {
		t.Fatalf("the redelivery did not finish the compensation: compensated %v, %v", done, err)
	}
	k, n := keysOf(msgs[0])
	st, _, err := inventory.ReadUserState(ctx, rdb, k, msgs[0].UserHash)
	if err != nil || st.Held != 0 {
		t.Fatalf("the buyer holds %d units after the compensation (%v), want 0", st.Held, err)
	}
	if err := rdb.HDel(ctx, k.Users(), inventory.RecordField(n)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Handle(ctx, late(msgs, 1)); err != nil { // a late duplicate after the record is gone
		t.Fatalf("late duplicate: %v", err)
	}
	if c, r := countOrders(t, db, a.id), compensationRows(t, db, a.id); c.rows != 0 || r != 1 {
		t.Fatalf("orders %+v, compensation rows %d: want 0 orders and 1 compensation row (units were returned)", c, r)
	}
}

// scriptReplyLost returns a client on the test Redis whose first run of the embedded script
// name loses its reply after Redis applied it, and the hook (armed until then).
func scriptReplyLost(t *testing.T, name string) (redis.UniversalClient, *lostReplyHook) {
	t.Helper()
	src, err := lua.Source(name)
	if err != nil {
		t.Fatal(err)
	}
	sha := redis.NewScript(src).Hash()
	return replyLost(t, func(c redis.Cmder) bool {
		args := c.Args()
		return c.Name() == "evalsha" && len(args) > 1 && args[1] == sha
	})
}

// replyLost returns a client on the test Redis whose first command match reports true for
// runs and then reports an error, as a reply lost on the network after Redis applied the
// command, and the hook (armed until then).
func replyLost(t *testing.T, match func(redis.Cmder) bool) (redis.UniversalClient, *lostReplyHook) {
	t.Helper()
	h := &lostReplyHook{}
	h.armed.Store(true)
	rdb := testsvc.Redis(t)
	rdb.(*redis.Client).AddHook(redishook.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		err := next(ctx, cmd)
		if err == nil && match(cmd) && h.armed.CompareAndSwap(true, false) {
			err = redishook.Fail(cmd, errors.New("injected: the reply was lost after Redis applied the command"))
		}
		return err
	}})
	return rdb, h
}

// lostReplyHook is armed until its client lost the reply of the command it waits for.
type lostReplyHook struct{ armed atomic.Bool }

// TestCompensatedMarkAfterItsRow: the compensation's last step marks the record compensated
// in Redis (so a redelivery skips it). When that mark is applied but its reply is lost, the
// compensation answers an error; the compensations row must survive it or be written by the
// next attempt. Before, the mark ran inside the MySQL transaction that writes the row: the
// error rolled the row back, and the next attempt found the mark and did nothing, so the
// units were back in stock with no compensations row (a late duplicate of the message after
// the record's TTL becomes an order for a unit sold again; the protocol simulation's seed 4
// found it on SQLite once the embedded guard became a transaction).
func TestCompensatedMarkAfterItsRow(t *testing.T) {
	_, db, a := activityOn(t, 1, 10)
	msgs := a.reserve(1)
	ctx := context.Background()
	crdb, h := replyLost(t, func(c redis.Cmder) bool {
		args := c.Args()
		return c.Name() == "hset" && len(args) >= 3 && strings.HasSuffix(fmt.Sprint(args[2]), ":c")
	})
	comp := must(NewCompensator(db, crdb, testMetrics(), testLogger(t)))
	if err := comp.Compensate(ctx, msgs[0], "test"); err == nil {
		t.Fatal("compensate with the mark's reply lost: want an error")
	}
	if h.armed.Load() {
		t.Fatal("the mark was never sent")
	}
	// The message comes again: the writer finds the record FAILED and finishes the
	// compensation (Compensator.finish).
	err := comp.finish(ctx, msgs[0])
	t.Logf("finish: %v; statuses %v", err, a.statuses())
	if r := compensationRows(t, db, a.id); r != 1 {
		t.Fatalf("%d compensations rows after a compensation whose mark's reply was lost and its retry, want 1", r)
	}
}

// TestCompensationCutShortTakesNoUnitFromTheNextBuyer: a compensation fails its record (the
// unit goes back to Redis's stock) and is then cut short (the refund's reply lost). Redis
// sells the unit to the next buyer, and one batch carries both messages. Before, the
// compensation wrote its row only after the Redis steps, so the row was rolled back with the
// error: the guard counted the failed reservation's unit, refused the next buyer's order
// (stock 1: sold 1) and fenced the activity (the protocol simulation's seed 138718506). The
// compensations row is now committed before Redis hears of the compensation: the failed
// reservation takes no unit, its compensation is finished, and the next buyer gets the order.
func TestCompensationCutShortTakesNoUnitFromTheNextBuyer(t *testing.T) {
	rdb, db, a := activityOn(t, 1, 1)
	first := a.reserve(1)[0]
	ctx := context.Background()
	crdb, h := scriptReplyLost(t, "inventory_refund.lua")
	if err := must(NewCompensator(db, crdb, testMetrics(), testLogger(t))).Compensate(ctx, first, "test"); err == nil {
		t.Fatal("compensate with the refund's reply lost: want an error")
	}
	if h.armed.Load() {
		t.Fatal("the refund was never sent")
	}
	if st := a.statuses(); st["FAILED"] != 1 {
		t.Fatalf("statuses %v after the cut-short compensation, want its record FAILED", st)
	}
	// Redis has the unit back and sells it to the next buyer.
	next := a.reserveFor([]string{"next-buyer"}, 1)[0]
	m := testMetrics()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
	if err := w.Handle(ctx, []Message{first, next}); err != nil {
		t.Fatalf("handle: %v", err)
	}
	var orders []sql.Order
	if err := db.Where("activity_id = ?", a.id).Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	if len(orders) != 1 || orders[0].ReservationID != next.ReservationID {
		t.Fatalf("orders %+v, want only the next buyer's (%s); compensations %d", orders, next.ReservationID, compensationRows(t, db, a.id))
	}
	if r := testutil.ToFloat64(m.Refused.WithLabelValues(a.id, refusedStock)); r != 0 {
		t.Fatalf("%v orders refused for stock: the failed reservation's unit was counted", r)
	}
	if st := a.statuses(); st["FAILED"] != 1 || st["CONFIRMED"] != 1 {
		t.Fatalf("statuses %v, want the first FAILED and the next CONFIRMED", st)
	}
	done, err := must(inventory.NewLedger(rdb)).Compensated(ctx, first.ReservationID)
	if err != nil || !done {
		t.Fatalf("the cut-short compensation is not finished: compensated %v, %v", done, err)
	}
}

// TestCompensationOfAnotherOrAConfirmedRecordKeepsNoRow: a compensation whose record turns
// out CONFIRMED (no order in MySQL) or to hold another reservation under its number (a Redis
// that went back handed the number out again) gives nothing back, and must leave no
// compensations row: the row's removal commits with the code (before, the error rolled the
// removal back, and the row stood beside a CONFIRMED record, while a finish answered the same
// error on every redelivery). The other reservation's record is left as it was: the fail
// script checks the id, not the number alone (before, it failed the other buyer's record and
// put its unit back).
func TestCompensationOfAnotherOrAConfirmedRecordKeepsNoRow(t *testing.T) {
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		set   func(r *inventory.Record)
		want  error
		state string
	}{
		{"confirmed", func(r *inventory.Record) { r.Status = "CONFIRMED"; r.OrderID = "7" }, ErrAlreadyConfirmed, "CONFIRMED"},
		{"another id", func(r *inventory.Record) { r.ReservationID += "x" }, ErrNoRecord, "PENDING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestActivity(t, rdb, db, 1, 10)
			m := a.reserve(1)[0]
			k, n := keysOf(m)
			rec := recordOf(t, rdb, m)
			tc.set(&rec)
			if err := rdb.HSet(ctx, k.Users(), inventory.RecordField(n), rec.String()).Err(); err != nil {
				t.Fatal(err)
			}
			stock, err := rdb.Get(ctx, k.Stock()).Int64()
			if err != nil {
				t.Fatal(err)
			}
			comp := must(NewCompensator(db, rdb, testMetrics(), testLogger(t)))
			if err := comp.Compensate(ctx, m, "test"); !errors.Is(err, tc.want) {
				t.Fatalf("compensate: %v, want %v", err, tc.want)
			}
			if r := compensationRows(t, db, a.id); r != 0 {
				t.Fatalf("%d compensations rows for a reservation that gave nothing back, want 0", r)
			}
			if got := recordOf(t, rdb, m); got.Status != tc.state {
				t.Fatalf("record %s after the compensation, want it left %s", got.Status, tc.state)
			}
			if got, _ := rdb.Get(ctx, k.Stock()).Int64(); got != stock {
				t.Fatalf("stock %d -> %d: a unit went back for a record that was not failed", stock, got)
			}
			if err := comp.finish(ctx, m); err != nil {
				t.Fatalf("finish after it: %v, want nil (final)", err)
			}
		})
	}
}

// TestCompensatedMarkNamesItsReservation: the compensated mark of a number holds the id it
// finished; another id under the same number (a Redis that went back handed the number out
// again) is not compensated by it, so its own compensation is not skipped.
func TestCompensatedMarkNamesItsReservation(t *testing.T) {
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	m := a.reserve(1)[0]
	compensated(t, db, rdb, m)
	l := must(inventory.NewLedger(rdb))
	other := m.ReservationID + "7" // the same number, another call
	if _, n, ok := inventory.ParseReservationID(other); !ok || n != mustNumber(t, m.ReservationID) {
		t.Fatalf("setup: %q is not another id under the number of %s", other, m.ReservationID)
	}
	for rid, want := range map[string]bool{m.ReservationID: true, other: false} {
		if done, err := l.Compensated(ctx, rid); err != nil || done != want {
			t.Fatalf("Compensated(%s) = %v, %v; want %v", rid, done, err, want)
		}
	}
}

func mustNumber(t *testing.T, rid string) int64 {
	t.Helper()
	_, n, ok := inventory.ParseReservationID(rid)
	if !ok {
		t.Fatalf("reservation id %q does not parse", rid)
	}
	return n
}

// TestCompensatedMessageOfAReplacedIncarnationIsCounted: a message whose reservation has a
// compensations row, of an incarnation a restore replaced since, is acked with nothing done
// and counted as stale (before, the finish dropped it without a count or a line).
func TestCompensatedMessageOfAReplacedIncarnationIsCounted(t *testing.T) {
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	m := a.reserve(1)[0]
	if err := db.Create(&sql.Compensation{ReservationID: m.ReservationID, ActivityID: m.ActivityID,
		UserID: m.UserID, Quantity: m.Quantity, Reason: "test"}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("UPDATE activities SET incarnation = incarnation + 1 WHERE id = ?", a.id).Error; err != nil {
		t.Fatal(err)
	}
	met := testMetrics()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, met, testLogger(t)))
	if err := w.Handle(ctx, []Message{m}); err != nil {
		t.Fatalf("handle: %v", err)
	}
	if got := testutil.ToFloat64(met.WriterStale); got != 1 {
		t.Fatalf("seckill_order_writer_stale_dropped_total %v, want 1", got)
	}
	if st := recordOf(t, rdb, m).Status; st != "PENDING" {
		t.Fatalf("record %s, want PENDING: a replaced incarnation's record is the restore's", st)
	}
}

// TestFinishedCompensationKeepsItsRowWhenItsRecordIsGone: a compensation finished (row,
// record FAILED, units back, mark), then its record and mark went (an archive, a Redis that
// lost them). A redelivered message finishes it again: the fail finds no record, and the row
// an earlier call wrote must stay, or the next delivery becomes an order for a unit that
// went back and may be sold again.
func TestFinishedCompensationKeepsItsRowWhenItsRecordIsGone(t *testing.T) {
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	m := a.reserve(1)[0]
	compensated(t, db, rdb, m)
	k, n := keysOf(m)
	if err := rdb.HDel(ctx, k.Users(), inventory.RecordField(n), inventory.CompField(n)).Err(); err != nil {
		t.Fatal(err)
	}
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	for i := 0; i < 2; i++ {
		if err := w.Handle(ctx, []Message{m}); err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
	}
	if c, r := countOrders(t, db, a.id), compensationRows(t, db, a.id); c.rows != 0 || r != 1 {
		t.Fatalf("orders %+v, compensation rows %d: want 0 orders and the 1 row (its units went back)", c, r)
	}
}
