//go:build integration

package order

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// activityRow writes the MySQL row of test activity a at incarnation 0.
func activityRow(t *testing.T, a *testActivity, stock int64) sql.Activity {
	t.Helper()
	db := testsvc.MySQL(t)
	row := sql.Activity{ID: a.id, Stock: stock, PerUserLimit: 100, OpensAt: time.Now().UTC(), Shards: a.shards, Generation: "g0"}
	if err := db.Save(&row).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DELETE FROM activities WHERE id = ?", a.id) })
	return row
}

// TestCompensationOfAnOlderIncarnationChangesNothing: once a restore claimed a newer
// incarnation, it rebuilt Redis from the orders and counted every reservation of the older
// one without an order as unsold. A message of the older incarnation that reaches the
// compensation (a row MySQL refuses, max_attempts) must give nothing back: its unit is on
// sale already, and returning it (to the old shard, or in transit to the new layout once the
// old shard is closed) counts it twice; lowering the buyer's count lets him buy past the
// limit. The writer's dead-letter path acknowledges it and changes nothing in Redis or MySQL.
func TestCompensationOfAnOlderIncarnationChangesNothing(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	activityRow(t, a, 10)
	m := a.reserveFor([]string{"buyer-" + a.id}, 1)[0]
	k, _ := keysOf(m)
	stockBefore, _ := rdb.Get(ctx, k.Stock()).Int64()
	held := func() int64 {
		u, _, err := inventory.ReadUserState(ctx, rdb, k, m.UserHash)
		if err != nil {
			t.Fatal(err)
		}
		return u.Held
	}
	countBefore := held()
	// The restore's claim.
	if err := db.Model(&sql.Activity{}).Where("id = ?", a.id).Update("incarnation", 1).Error; err != nil {
		t.Fatal(err)
	}
	if err := w.deadLetter(ctx, m, causeMaxAttempts, "test"); err != nil {
		t.Fatalf("dead letter of an older incarnation: %v, want it acknowledged", err)
	}
	if st := recordOf(t, rdb, m).Status; st != "PENDING" {
		t.Errorf("record %s, want PENDING: the compensation failed a reservation of a replaced incarnation", st)
	}
	if got, _ := rdb.Get(ctx, k.Stock()).Int64(); got != stockBefore {
		t.Errorf("stock %d -> %d: the unit the restore counted unsold was given back again (sold twice)", stockBefore, got)
	}
	if got := held(); got != countBefore {
		t.Errorf("buyer's count %d -> %d: lowered for a reservation the restore never counted", countBefore, got)
	}
	var comps int64
	if err := db.Model(&sql.Compensation{}).Where("reservation_id = ?", m.ReservationID).Count(&comps).Error; err != nil {
		t.Fatal(err)
	}
	if comps != 0 {
		t.Errorf("%d compensations rows for a reservation of a replaced incarnation, want 0", comps)
	}
}
