//go:build integration

package order

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// countStatements counts the statements a GORM handle sends.
func countStatements(db *gorm.DB) *atomic.Int64 {
	var n atomic.Int64
	inc := func(*gorm.DB) { n.Add(1) }
	cb := db.Callback()
	cb.Create().After("gorm:create").Register("test:count_create", inc)
	cb.Query().After("gorm:query").Register("test:count_query", inc)
	cb.Raw().After("gorm:raw").Register("test:count_raw", inc)
	cb.Row().After("gorm:row").Register("test:count_row", inc)
	return &n
}

func questions(t testing.TB, db *gorm.DB) int64 {
	var name string
	var v int64
	if err := db.Raw("SHOW GLOBAL STATUS LIKE 'Questions'").Row().Scan(&name, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestThroughputReport measures orders/s from journal to committed rows through relay and
// writer (in-process queue and RocketMQ) against a plain INSERT loop into the same table,
// and statements per order. It runs only with SECKILL_ORDER_BENCH=1 (figures for
// docs/BENCHMARKS.md); Questions is the server-wide counter, so run it on a quiet server.
func TestThroughputReport(t *testing.T) {
	if os.Getenv("SECKILL_ORDER_BENCH") == "" {
		t.Skip("set SECKILL_ORDER_BENCH=1")
	}
	n := 5000 // SECKILL_ORDER_BENCH_N orders per phase instead
	if v, err := strconv.Atoi(os.Getenv("SECKILL_ORDER_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	log := testLogger(t)

	pipeline := func(name string, pub Publisher, sub Subscriber) {
		a := newTestActivity(t, rdb, db, 8, int64(n))
		a.reserve(n)
		m := testMetrics()
		wdb := writerDB(t, testsvc.MySQLDSN+"&interpolateParams=true")
		stmts := countStatements(wdb)
		w := must(NewWriter(wdb, rdb, WriterOptions{BatchSize: 200, MaxOrdersPerSecond: -1, PoolSize: 8}, m, log))
		q0 := questions(t, db)
		start := time.Now()
		if err := sub.Subscribe(w.Handle); err != nil {
			t.Fatal(err)
		}
		relayJournals(t, rdb, pub, a, m, log)
		// The stats' confirmed units (a few HMGETs), not every record: a poll that reads
		// each record would cost more Redis and CPU than the pipeline it waits for.
		led := must(inventory.NewLedger(rdb))
		testwait.Eventually(t, 120*time.Second, func() bool {
			c, err := led.Counts(context.Background(), a.id)
			return err == nil && c.Confirmed == int64(n)
		}, "all orders")
		el := time.Since(start)
		q1 := questions(t, db)
		if st := a.statuses(); st["CONFIRMED"] != n {
			t.Fatalf("records after the pipeline: %v", st)
		}
		t.Logf("%-28s %5d orders in %6.2fs = %7.0f orders/s (unix %.1f-%.1f); writer statements/order %.3f; server Questions/order %.3f (includes the test's polling of the counts)",
			name, n, el.Seconds(), float64(n)/el.Seconds(), unixSec(start), unixSec(start.Add(el)), float64(stmts.Load())/float64(n), float64(q1-q0)/float64(n))
	}
	q := NewMemQueue(8192, nil)
	pipeline("relay+memqueue+writer", q, q)
	q.Close()

	a := newTestActivity(t, rdb, db, 8, int64(n))
	rq, err := NewRocketMQ(rmqOptions(t, a))
	if err != nil {
		t.Fatal(err)
	}
	pipeline("relay+rocketmq+writer", rq, rq)
	rq.Close()

	// The writer alone (no relay, no queue): Handle on batches of 200 from 4 goroutines.
	{
		a := newTestActivity(t, rdb, db, 8, int64(n))
		msgs := a.reserve(n)
		wdb := writerDB(t, testsvc.MySQLDSN+"&interpolateParams=true")
		stmts := countStatements(wdb)
		w := must(NewWriter(wdb, rdb, WriterOptions{BatchSize: 200, MaxOrdersPerSecond: -1, PoolSize: 8}, testMetrics(), log))
		q0 := questions(t, db)
		start := time.Now()
		var next atomic.Int64
		errs := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				for {
					i := int(next.Add(200)) - 200
					if i >= n {
						errs <- nil
						return
					}
					if err := w.Handle(context.Background(), msgs[i:min(i+200, n)]); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		el := time.Since(start)
		q1 := questions(t, db)
		if c := countOrders(t, db, a.id); c.rows != int64(n) {
			t.Fatalf("orders %+v", c)
		}
		t.Logf("%-28s %5d orders in %6.2fs = %7.0f orders/s (unix %.1f-%.1f); writer statements/order %.3f; server Questions/order %.3f",
			"writer.Handle x4, batch 200", n, el.Seconds(), float64(n)/el.Seconds(), unixSec(start), unixSec(start.Add(el)), float64(stmts.Load())/float64(n), float64(q1-q0)/float64(n))
	}

	// Plain INSERT loop, one autocommit INSERT per order, same table, same run.
	for _, conns := range []int{1, 8} {
		act := uniq("otplain")
		pdb := writerDB(t, testsvc.MySQLDSN+"&interpolateParams=true")
		sdb, _ := pdb.DB()
		sdb.SetMaxOpenConns(conns)
		q0 := questions(t, db)
		start := time.Now()
		errs := make(chan error, conns)
		var next atomic.Int64
		for c := 0; c < conns; c++ {
			go func() {
				for {
					i := next.Add(1)
					if i > int64(n) {
						errs <- nil
						return
					}
					if err := pdb.Exec("INSERT INTO orders (reservation_id, activity_id, user_id, quantity, seq, status) VALUES (?,?,?,?,?,?)",
						fmt.Sprintf("%s.0.0.%d", act, i), act, fmt.Sprintf("u%d", i), 1, 1, "CONFIRMED").Error; err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for c := 0; c < conns; c++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		el := time.Since(start)
		q1 := questions(t, db)
		db.Exec("DELETE FROM orders WHERE activity_id = ?", act)
		t.Logf("plain INSERT loop, %d conn(s)   %5d orders in %6.2fs = %7.0f orders/s (unix %.1f-%.1f); server Questions/order %.3f",
			conns, n, el.Seconds(), float64(n)/el.Seconds(), unixSec(start), unixSec(start.Add(el)), float64(q1-q0)/float64(n))
	}
}

// unixSec is t in seconds since the epoch, to match the phases with a per-process CPU sampler.
func unixSec(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
