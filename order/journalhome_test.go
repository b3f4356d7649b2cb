//go:build integration

package order

import (
	"context"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// TestEntryWithoutHomeBecomesAnOrder: a journal entry without the home field (the script of
// the next release stops writing it: home always equals shard) is relayed and written as an
// order, and its record confirmed, like any other.
func TestEntryWithoutHomeBecomesAnOrder(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	a := newTestActivity(t, rdb, db, 4, 50)
	a.noHome = true
	a.reserve(20)
	log := testLogger(t)
	m := testMetrics()
	q := NewMemQueue(64, nil)
	t.Cleanup(func() { q.Close() })
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1, PoolSize: 2}, m, log))
	if err := q.Subscribe(w.Handle); err != nil {
		t.Fatal(err)
	}
	startRelay(t, context.Background(), must(NewRelay(rdb, q, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals}, m, log)))
	waitOrders(t, db, a, 20, 60*time.Second)
	if c := countOrders(t, db, a.id); c.rows != 20 || c.distinct != 20 || c.units != 20 {
		t.Fatalf("orders %+v, want 20 distinct", c)
	}
	if st := a.statuses(); st["CONFIRMED"] != 20 {
		t.Fatalf("statuses %v, want 20 CONFIRMED", st)
	}
}
