//go:build integration

package order

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/sql"
)

// TestLateMessageOfAnOlderIncarnationIsRefused: a restore rebuilt the activity from the
// orders MySQL held and moved it to incarnation 1 (its units were counted unsold for every
// reservation without an order). A RocketMQ redelivery of an incarnation-0 message that comes
// after must never become an order: its unit is on sale again in the new incarnation. The
// writer drops it (acknowledged, counted), while an incarnation-0 message whose order already
// existed stays confirmed and a message of the current incarnation is written.
func TestLateMessageOfAnOlderIncarnationIsRefused(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	m := testMetrics()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
	row := sql.Activity{ID: a.id, Stock: 10, PerUserLimit: 100, OpensAt: time.Now().UTC(), Shards: 1, Generation: "g0"}
	if err := db.Save(&row).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DELETE FROM activities WHERE id = ?", a.id) })
	early := a.reserveFor([]string{"early-" + a.id}, 1)
	if err := w.Handle(ctx, early); err != nil {
		t.Fatal(err)
	}
	late := a.reserveFor([]string{"late-" + a.id}, 1)
	// The restore: generation and incarnation move on in MySQL.
	if err := db.Model(&sql.Activity{}).Where("id = ?", a.id).
		Updates(map[string]any{"generation": "g1", "incarnation": 1}).Error; err != nil {
		t.Fatal(err)
	}
	if err := w.Handle(ctx, append(late, early...)); err != nil {
		t.Fatalf("a late message of an older incarnation must be acknowledged (dropped), got %v", err)
	}
	var rows []sql.Order
	if err := db.Where("activity_id = ?", a.id).Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ReservationID != early[0].ReservationID {
		t.Fatalf("orders %+v, want only the early one (%s): the late incarnation-0 message was written after the restore",
			rows, early[0].ReservationID)
	}
	if got := metricValue(m.WriterStale); got != 1 {
		t.Fatalf("stale messages counted %v, want 1", got)
	}
	// A message of the current incarnation is written as usual.
	cur := early[0]
	cur.ReservationID, cur.Epoch, cur.UserID, cur.Seq = a.id+".1000000.0.1", 1_000_000, "now-"+a.id, 1
	if err := w.Handle(ctx, []Message{cur}); err != nil {
		t.Fatal(err)
	}
	if c := countOrders(t, db, a.id); c.rows != 2 {
		t.Fatalf("%d orders after a message of the current incarnation, want 2", c.rows)
	}
}
