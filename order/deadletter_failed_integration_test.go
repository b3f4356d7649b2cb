//go:build integration

package order

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
)

// TestDeadLetterOverFailedRecordUndoesTheOrder: a dead-letter compensation is cut short
// after the fail step (record FAILED, unit back in stock, no compensations row). The
// redelivery inserts the order and then panics again (after its insert) past MaxAttempts,
// so it is dead-lettered: Compensate finds the order and its record FAILED. The order must
// go and the compensation be finished; before, Compensate ignored the FAILED answer, returned
// ErrOrderExists and the message was acked with the order standing beside returned stock.
func TestDeadLetterOverFailedRecordUndoesTheOrder(t *testing.T) {
	rdb, db, a, msgs := reservedOn(t, 1, 10, 1)
	ctx := context.Background()
	wdb := writerDB(t, testsvc.MySQLDSN)
	var failComp, panicReadBack atomic.Bool
	failComp.Store(true)
	if err := wdb.Callback().Create().Before("gorm:create").Register("test:comp-fails", func(tx *gorm.DB) {
		if tx.Statement.Table == "compensations" && failComp.CompareAndSwap(true, false) {
			tx.AddError(errors.New("injected: connection reset while writing the compensations row"))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := wdb.Callback().Query().Before("gorm:query").Register("test:readback-panics", func(tx *gorm.DB) {
		if panicReadBack.Load() && slices.Contains(tx.Statement.Selects, "reservation_id") {
			panic("bug after the insert")
		}
	}); err != nil {
		t.Fatal(err)
	}
	w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1, MaxAttempts: 2}, testMetrics(), testLogger(t)))
	w.beforeInsert = func([]Message) { panic("transient bug") }
	if err := w.Handle(ctx, late(msgs, 2)); err == nil {
		t.Fatal("first delivery: want an error (compensation incomplete)")
	}
	t.Logf("after first delivery: statuses %v, orders %+v, comp rows %d", a.statuses(), countOrders(t, db, a.id), compensationRows(t, db, a.id))
	w.beforeInsert = nil
	panicReadBack.Store(true)
	err := w.Handle(ctx, late(msgs, 3))
	k, _ := keysOf(msgs[0])
	stock, _ := rdb.Get(ctx, k.Stock()).Int64()
	t.Logf("second delivery returned %v (nil = acked); statuses %v, orders %+v, comp rows %d, stock %d of 10",
		err, a.statuses(), countOrders(t, db, a.id), compensationRows(t, db, a.id), stock)
	if c := countOrders(t, db, a.id); err == nil && c.rows != 0 && stock == 10 {
		t.Fatalf("message acked with an order in MySQL while its unit is back in stock (record FAILED): the unit is sold twice")
	}
}
