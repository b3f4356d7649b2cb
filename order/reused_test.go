//go:build integration

package order

import (
	"context"
	"strconv"
	"testing"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/sql"
)

// TestReusedReservationIDIsNotADuplicate: Redis forgot its counter and handed a reservation id
// that a MySQL order already carries to another buyer. The writer must not take that
// buyer's reservation for a duplicate and confirm it with the other buyer's order: a
// mismatch of user or sequence is a conflict, the reservation fails for good and its unit
// goes back.
func TestReusedReservationIDIsNotADuplicate(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	first := a.reserveFor([]string{"alice-" + a.id}, 1)
	if err := w.Handle(ctx, first); err != nil {
		t.Fatal(err)
	}
	var alice sql.Order
	if err := db.Where("reservation_id = ?", first[0].ReservationID).First(&alice).Error; err != nil {
		t.Fatal(err)
	}
	// Redis forgets the shard's counter: the next buyer gets the same id.
	k, _ := keysOf(first[0])
	if err := rdb.Set(ctx, k.Seq(), 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	second := a.reserveFor([]string{"bob-" + a.id}, 1)
	if second[0].ReservationID != first[0].ReservationID {
		t.Fatalf("setup: ids %s and %s differ", second[0].ReservationID, first[0].ReservationID)
	}
	stockBefore, _ := rdb.Get(ctx, k.Stock()).Int64()
	if err := w.Handle(ctx, second); err != nil {
		t.Fatal(err)
	}
	rec := recordOf(t, rdb, second[0])
	if rec.Status == "CONFIRMED" && rec.OrderID == strconv.FormatInt(alice.ID, 10) {
		t.Fatalf("bob's reservation was confirmed with alice's order %d: %v", alice.ID, rec)
	}
	if rec.Status != "FAILED" {
		t.Fatalf("bob's record %v, want FAILED (the id conflict fails it for good)", rec)
	}
	if after, _ := rdb.Get(ctx, k.Stock()).Int64(); after != stockBefore+1 {
		t.Fatalf("stock %d after the conflict, want %d (bob's unit back)", after, stockBefore+1)
	}
	var rows []sql.Order
	if err := db.Where("activity_id = ?", a.id).Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].UserID != "alice-"+a.id {
		t.Fatalf("orders %+v, want alice's only", rows)
	}
}
