//go:build integration

package order

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// compensationRows counts the compensations rows of the activity.
func compensationRows(t testing.TB, db *gorm.DB, activity string) int64 {
	t.Helper()
	var n int64
	if err := db.Table("compensations").Where("activity_id = ?", activity).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// assertWaiting checks that none of the activity's n reservations was compensated or
// became an order: they are all PENDING, waiting for MySQL.
func assertWaiting(t testing.TB, db *gorm.DB, a *testActivity, n int) {
	t.Helper()
	if st := a.statuses(); st["PENDING"] != n || st["FAILED"] != 0 {
		t.Fatalf("statuses %v, want %d PENDING and none FAILED", st, n)
	}
	if c := compensationRows(t, db, a.id); c != 0 {
		t.Fatalf("%d compensation rows while MySQL was sick", c)
	}
}

// late returns copies of msgs delivered attempts times (past the writer's attempt limit).
func late(msgs []Message, attempts int) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Attempt = attempts
		out[i] = m
	}
	return out
}

// TestStatementTimeoutWaitsForMySQL produces a real MariaDB 1969 (max_statement_time
// exceeded): another transaction holds the unique key of one order, so the writer's insert
// waits past the 1 s statement limit of its session. The reservations, first deliveries and
// deliveries past the attempt limit alike, are neither compensated nor dead-lettered; once
// the blocking transaction ends they become orders.
func TestStatementTimeoutWaitsForMySQL(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 1, 10, 3)
	blocker := db.Begin()
	if err := blocker.Exec("INSERT INTO orders (reservation_id, activity_id, user_id, quantity, seq) VALUES (?,?,?,?,?)",
		msgs[0].ReservationID, a.id, "blocker-"+a.id, 1, 1).Error; err != nil {
		t.Fatal(err)
	}
	rolledBack := false
	t.Cleanup(func() {
		if !rolledBack {
			blocker.Rollback()
		}
	})
	m := testMetrics()
	wdb := openDB(t, testsvc.MySQLDSN+"&max_statement_time=1")
	w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1, Retries: 1}, m, testLogger(t)))
	ctx := context.Background()
	var last error
	for _, batch := range [][]Message{msgs, late(msgs, 100)} {
		last = w.Handle(ctx, batch)
		var me *mysql.MySQLError
		if !errors.As(last, &me) || me.Number != 1969 {
			t.Fatalf("Handle: %v, want MySQL error 1969", last)
		}
		assertWaiting(t, db, a, 3)
	}
	if err := w.Healthy(); err == nil {
		t.Fatal("Healthy() = nil while every commit times out")
	}
	if got := metricValue(m.WriterErrors.WithLabelValues("timeout")); got < 2 {
		t.Fatalf("order_writer_errors_total{class=timeout} = %v, want >= 2", got)
	}
	if err := blocker.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	rolledBack = true
	if err := w.Handle(ctx, late(msgs, 101)); err != nil {
		t.Fatalf("Handle after MySQL healed: %v", err)
	}
	if c := countOrders(t, db, a.id); c.rows != 3 {
		t.Fatalf("orders %+v, want 3", c)
	}
	if st := a.statuses(); st["CONFIRMED"] != 3 {
		t.Fatalf("statuses %v", st)
	}
	if err := w.Healthy(); err != nil {
		t.Fatalf("Healthy() after a commit: %v", err)
	}
}

// injector fails the writer's statements that write orders while its error is set: a thin
// wrapper at the statement boundary for the MySQL failures that cannot be produced on demand
// here (a full disk, a read-only server, an unknown code).
type injector struct {
	err atomic.Pointer[error]
	hit atomic.Int32
}

func (in *injector) set(err error) {
	if err == nil {
		in.err.Store(nil)
		return
	}
	in.err.Store(&err)
}

func (in *injector) install(t testing.TB, db *gorm.DB) {
	t.Helper()
	fail := func(tx *gorm.DB) {
		writes := tx.Statement.Table == "orders" || strings.HasPrefix(tx.Statement.SQL.String(), "INSERT INTO orders")
		if p := in.err.Load(); p != nil && writes {
			in.hit.Add(1)
			tx.AddError(*p)
		}
	}
	if err := db.Callback().Create().Before("gorm:create").Register("test:inject", fail); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Raw().Before("gorm:raw").Register("test:inject", fail); err != nil {
		t.Fatal(err)
	}
}

// TestSickMySQLIsNeverCompensated fails the orders insert with every class of error that
// is not about the order's own data: each must leave the reservations waiting (first
// deliveries and deliveries past the attempt limit), show in the metric and Healthy, and
// let them reach MySQL once it heals.
func TestSickMySQLIsNeverCompensated(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	tests := []struct {
		name  string
		give  error
		class string
	}{
		{"table full", &mysql.MySQLError{Number: 1114, Message: "The table 'orders' is full"}, "resource"},
		{"disk full", &mysql.MySQLError{Number: 1021, Message: "Disk full; waiting for someone to free some space"}, "resource"},
		{"out of memory", &mysql.MySQLError{Number: 1041, Message: "Out of memory"}, "resource"},
		{"statement timeout", &mysql.MySQLError{Number: 1969, Message: "Query execution was interrupted (max_statement_time exceeded)"}, "timeout"},
		{"engine error", &mysql.MySQLError{Number: 1180, Message: "Got error 1 during COMMIT"}, "server"},
		{"unknown command", &mysql.MySQLError{Number: 1047, Message: "Unknown command"}, "server"},
		{"read only", &mysql.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option"}, "read_only"},
		{"read only transaction", &mysql.MySQLError{Number: 1792, Message: "Cannot execute statement in a READ ONLY transaction"}, "read_only"},
		{"lock wait", &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, "lock"},
		{"deadlock", &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, "lock"},
		{"schema missing", &mysql.MySQLError{Number: 1146, Message: "Table 'seckill.orders' doesn't exist"}, "server"},
		{"unknown code", &mysql.MySQLError{Number: 9999, Message: "something new"}, "unknown"},
		{"bad connection", driver.ErrBadConn, "connection"},
		{"invalid connection", mysql.ErrInvalidConn, "connection"},
		{"deadline", fmt.Errorf("insert: %w", context.DeadlineExceeded), "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestActivity(t, rdb, db, 2, 10)
			msgs := a.reserve(4)
			var in injector
			wdb := writerDB(t, testsvc.MySQLDSN)
			in.install(t, wdb)
			in.set(tt.give)
			m := testMetrics()
			w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1, Retries: 1, MaxBackoff: 100 * time.Millisecond}, m, testLogger(t)))
			ctx := context.Background()
			for _, batch := range [][]Message{msgs, late(msgs, 1), late(msgs, 100)} {
				if err := w.Handle(ctx, batch); err == nil {
					t.Fatal("Handle = nil while every insert fails")
				}
				assertWaiting(t, db, a, 4)
			}
			if in.hit.Load() == 0 {
				t.Fatal("the injected error never hit a statement")
			}
			if err := w.Healthy(); err == nil {
				t.Fatal("Healthy() = nil while every commit fails")
			}
			if got := metricValue(m.WriterErrors.WithLabelValues(tt.class)); got == 0 {
				t.Fatalf("order_writer_errors_total{class=%q} = 0", tt.class)
			}
			if got := metricValue(m.WriterFailing); got < 3 {
				t.Fatalf("order_writer_consecutive_failures = %v, want >= 3", got)
			}
			in.set(nil)
			if err := w.Handle(ctx, late(msgs, 101)); err != nil {
				t.Fatalf("Handle after MySQL healed: %v", err)
			}
			if c := countOrders(t, db, a.id); c.rows != 4 {
				t.Fatalf("orders %+v, want 4", c)
			}
			if st := a.statuses(); st["CONFIRMED"] != 4 {
				t.Fatalf("statuses %v", st)
			}
			if err := w.Healthy(); err != nil {
				t.Fatalf("Healthy() after a commit: %v", err)
			}
			if got := metricValue(m.WriterFailing); got != 0 {
				t.Fatalf("order_writer_consecutive_failures = %v after a commit", got)
			}
		})
	}
}

// TestLateDuplicateOfCompensatedReservation delivers a reservation again after it was
// compensated and its Redis record expired: the compensations row alone must keep it from
// becoming an order.
func TestLateDuplicateOfCompensatedReservation(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 1, 10, 2)
	ctx := context.Background()
	wdb := writerDB(t, testsvc.MySQLDSN)
	compensated(t, wdb, rdb, msgs[0])
	k, n := keysOf(msgs[0])
	if err := rdb.HDel(ctx, k.Users(), inventory.RecordField(n)).Err(); err != nil { // the record's TTL ran out
		t.Fatal(err)
	}
	m := testMetrics()
	w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
	if err := w.Handle(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := db.Table("orders").Where("activity_id = ?", a.id).Pluck("reservation_id", &got).Error; err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != msgs[1].ReservationID {
		t.Fatalf("orders for %v, want only %s (the other was compensated)", got, msgs[1].ReservationID)
	}
	if c := compensationRows(t, db, a.id); c != 1 {
		t.Fatalf("%d compensation rows, want 1", c)
	}
}

// TestStalledWriterDoesNotCommitOverCompensation stalls a writer before its insert for
// longer than the (activity, user) lock's TTL (the writer it replaced held that lock; this
// one relies on MySQL's row lock). Meanwhile the reservation is failed for good: fully, or
// only its first step (the compensations row committed, the record still PENDING: the
// compensator is between its steps). When the writer resumes, no order may be written for it,
// and the record ends FAILED (the writer finishes a compensation cut short).
func TestStalledWriterDoesNotCommitOverCompensation(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	for _, full := range []bool{true, false} {
		t.Run(fmt.Sprintf("compensation row %v", full), func(t *testing.T) {
			a := newTestActivity(t, rdb, db, 1, 10)
			msgs := a.reserve(1)
			ctx := context.Background()
			wdb := writerDB(t, testsvc.MySQLDSN)
			w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
			stalled, resume := make(chan struct{}), make(chan struct{})
			var first sync.Once
			w.beforeInsert = func([]Message) {
				// Only the first insert stalls: a retry (a dropped idle MySQL connection
				// makes the writer try again) goes straight through.
				first.Do(func() {
					close(stalled)
					<-resume
				})
			}
			done := make(chan error, 1)
			go func() { done <- w.Handle(ctx, msgs) }()
			<-stalled // the writer is stalled before its insert; the compensation runs meanwhile
			c := must(NewCompensator(wdb, rdb, testMetrics(), testLogger(t)))
			c.lockWait = 100 * time.Millisecond
			if full {
				if err := c.Compensate(ctx, msgs[0], "test"); err != nil {
					t.Fatal(err)
				}
			} else {
				m := msgs[0]
				if err := db.Create(&sql.Compensation{ReservationID: m.ReservationID, ActivityID: m.ActivityID,
					UserID: m.UserID, Quantity: m.Quantity, Reason: "test"}).Error; err != nil {
					t.Fatal(err)
				}
			}
			close(resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if c := countOrders(t, db, a.id); c.rows != 0 {
				t.Fatalf("orders %+v for a reservation failed for good", c)
			}
			if st := recordOf(t, rdb, msgs[0]).Status; st != "FAILED" {
				t.Fatalf("record %s after the writer met the compensations row, want FAILED", st)
			}
		})
	}
}

// TestWriterRacingCompensatorIsExact races a writer against a compensator on the same
// reservations, then delivers everything once more: each reservation ends as exactly one
// of an order with a CONFIRMED record, or a FAILED record with a compensations row and no
// order.
func TestWriterRacingCompensatorIsExact(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 2, 300, 300)
	ctx := context.Background()
	wdb := writerDB(t, testsvc.MySQLDSN)
	w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1, BatchSize: 20}, testMetrics(), testLogger(t)))
	c := must(NewCompensator(wdb, rdb, testMetrics(), testLogger(t)))
	done := make(chan error, 2)
	go func() { done <- w.Handle(ctx, msgs) }()
	go func() {
		var errs []error
		for i := len(msgs) - 1; i >= 0; i -= 2 {
			err := c.Compensate(ctx, msgs[i], "race")
			if err != nil && !errors.Is(err, ErrOrderExists) && !errors.Is(err, ErrAlreadyConfirmed) {
				errs = append(errs, err)
			}
		}
		done <- errors.Join(errs...)
	}()
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Handle(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	var orders, comps []string
	if err := db.Table("orders").Where("activity_id = ?", a.id).Pluck("reservation_id", &orders).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Table("compensations").Where("activity_id = ?", a.id).Pluck("reservation_id", &comps).Error; err != nil {
		t.Fatal(err)
	}
	ordered, compensated := map[string]bool{}, map[string]bool{}
	for _, r := range orders {
		ordered[r] = true
	}
	for _, r := range comps {
		compensated[r] = true
	}
	for _, m := range msgs {
		st := recordOf(t, rdb, m).Status
		switch {
		case ordered[m.ReservationID] && !compensated[m.ReservationID] && st == "CONFIRMED":
		case !ordered[m.ReservationID] && compensated[m.ReservationID] && st == "FAILED":
		default:
			t.Fatalf("%s: order %v, compensation %v, status %s", m.ReservationID, ordered[m.ReservationID],
				compensated[m.ReservationID], st)
		}
	}
	if len(orders)+len(comps) != 300 || len(comps) == 0 {
		t.Fatalf("%d orders + %d compensations, want 300 with some of each", len(orders), len(comps))
	}
	t.Logf("%d orders, %d compensations", len(orders), len(comps))
}

// TestPanickingMessageIsIsolated: a write that panics because of one message hands the
// batch back; once that message was delivered MaxAttempts times it is written alone and,
// panicking alone, dead-lettered, while the others of its batch become orders.
func TestPanickingMessageIsIsolated(t *testing.T) {
	t.Parallel()
	rdb, db, a, msgs := reservedOn(t, 2, 10, 4)
	bad := msgs[2].ReservationID
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1, MaxAttempts: 3}, testMetrics(), testLogger(t)))
	w.beforeInsert = func(batch []Message) {
		for _, m := range batch {
			if m.ReservationID == bad {
				panic("cannot write " + bad)
			}
		}
	}
	ctx := context.Background()
	var pe *PanicError
	if err := w.Handle(ctx, late(msgs, 1)); !errors.As(err, &pe) {
		t.Fatalf("Handle = %v, want a *PanicError", err)
	}
	if st := a.statuses(); st["PENDING"] != 4 {
		t.Fatalf("statuses %v after a first delivery, want all PENDING", st)
	}
	if err := w.Handle(ctx, late(msgs, 3)); err != nil {
		t.Fatalf("Handle = %v, want nil: every message is an order or dead-lettered", err)
	}
	if st := a.statuses(); st["CONFIRMED"] != 3 || st["FAILED"] != 1 {
		t.Fatalf("statuses %v, want 3 CONFIRMED and the panicking one FAILED", st)
	}
	if c := compensationRows(t, db, a.id); c != 1 {
		t.Fatalf("%d compensation rows, want 1", c)
	}
}

// TestPoisonErrorsAreDeadLettered is the counterpart of TestSickMySQLIsNeverCompensated:
// errors that say the row itself can never be stored dead-letter and compensate it at once.
func TestPoisonErrorsAreDeadLettered(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	db := mysqlDB(t)
	for _, code := range []uint16{1406, 1048, 4025, 3819} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			a := newTestActivity(t, rdb, db, 1, 10)
			msgs := a.reserve(2)
			var in injector
			wdb := writerDB(t, testsvc.MySQLDSN)
			in.install(t, wdb)
			in.set(&mysql.MySQLError{Number: code, Message: "injected"})
			m := testMetrics()
			w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
			if err := w.Handle(context.Background(), msgs); err != nil {
				t.Fatal(err)
			}
			if st := a.statuses(); st["FAILED"] != 2 {
				t.Fatalf("statuses %v, want both FAILED", st)
			}
			if c := compensationRows(t, db, a.id); c != 2 {
				t.Fatalf("%d compensation rows, want 2", c)
			}
			if got := metricValue(m.WriterErrors.WithLabelValues("poison")); got != 2 {
				t.Fatalf("order_writer_errors_total{class=poison} = %v, want 2", got)
			}
		})
	}
}
