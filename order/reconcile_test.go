//go:build integration

package order

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// TestReconcileDetectsDeletedOrder removes one order behind the service's back: the report
// shows a drift of exactly its units.
func TestReconcileDetectsDeletedOrder(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 2, 100)
	msgs := a.reserveFor([]string{"u1-" + a.id, "u2-" + a.id, "u3-" + a.id}, 2)
	m := testMetrics()
	log := testLogger(t)
	q := memQueue(t, 16)
	subscribeWriter(t, q, rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, log)
	relayJournals(t, rdb, q, a, m, log)
	waitOrders(t, db, a, 3, 20*time.Second)
	rec := must(NewReconciler(db, rdb, ReconcileOptions{ActivitiesKey: a.activities}, m, log))
	assertReconciled(t, rec, a, 6)
	if err := db.Exec("DELETE FROM orders WHERE reservation_id = ?", msgs[1].ReservationID).Error; err != nil {
		t.Fatal(err)
	}
	rep, err := rec.Report(context.Background(), a.id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Drift != 2 || rep.OrdersInDB != 4 {
		t.Fatalf("report %+v, want drift 2", rep)
	}
	rec.Round(context.Background())
	if got := metricValue(m.Drift.WithLabelValues(a.id)); got != 2 {
		t.Fatalf("drift metric %v, want 2", got)
	}
}

// TestReconcileRepairsOrphan: an order committed in MySQL whose confirm never ran (the
// writer died in between) is confirmed by the periodic job once older than OrphanAfter; a
// PENDING reservation with no order is only reported.
func TestReconcileRepairsOrphan(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 1, 10, 2)
	ctx := context.Background()
	if err := db.Exec("INSERT INTO orders (reservation_id, activity_id, user_id, quantity, seq) VALUES (?,?,?,?,?)",
		msgs[0].ReservationID, a.id, msgs[0].UserID, 1, 1).Error; err != nil {
		t.Fatal(err)
	}
	k, _ := keysOf(msgs[0])
	// Pretend the relay sent them.
	rdb.HIncrBy(ctx, k.Stats(), "relayed", 2)
	m := testMetrics()
	rec := must(NewReconciler(db, rdb, ReconcileOptions{OrphanAfter: time.Millisecond, Repair: true, ActivitiesKey: a.activities}, m, testLogger(t)))
	time.Sleep(5 * time.Millisecond)
	rec.Round(ctx)
	if st := recordOf(t, rdb, msgs[0]).Status; st != "CONFIRMED" {
		t.Fatalf("status %q, want CONFIRMED", st)
	}
	if got := metricValue(m.Orphans.WithLabelValues(a.id)); got != 1 {
		t.Fatalf("orphans %v, want 1", got)
	}
	rep, err := rec.Report(ctx, a.id)
	if err != nil {
		t.Fatal(err)
	}
	// One unit is still in flight (PENDING, no order): drift is 0, inFlight 1.
	if rep.Drift != 0 || rep.InFlight != 1 || rep.OrdersInDB != 1 {
		t.Fatalf("report %+v", rep)
	}
}

func TestReportUnknownActivity(t *testing.T) {
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	_, err := must(NewReconciler(db, rdb, ReconcileOptions{}, testMetrics(), testLogger(t))).Report(context.Background(), uniq("none"))
	if err == nil || !contains(err.Error(), "unknown activity") {
		t.Fatalf("err = %v", err)
	}
}
