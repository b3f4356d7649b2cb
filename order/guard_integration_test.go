//go:build integration

package order

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/sql"
)

// TestGuardHoldsUnderAnyInterleaving is the MySQL guard's randomized test (insert.go): a Redis
// that lost or duplicated state journals more reservations than the stock, and buyers past
// their limit; per seed, three writers (pools of their own) and a compensator race over
// shuffled batches of them, with redeliveries, then everything is delivered once more. From
// MySQL's rows, on every seed: the orders hold at most the stock and activities.sold is their
// sum, no buyer holds more than the limit, and every reservation ends as exactly one of an
// order (record CONFIRMED), a compensation (FAILED, units back) or a refusal (FAILED, why
// REFUSED). Seeds 1..SECKILL_GUARD_SEEDS (default 4), on MariaDB and the embedded SQLite.
func TestGuardHoldsUnderAnyInterleaving(t *testing.T) {
	seeds := 4
	if v := os.Getenv("SECKILL_GUARD_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SECKILL_GUARD_SEEDS=%q: want a positive integer", v)
		}
		seeds = n
	}
	for _, backend := range []string{"mariadb", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			var refused, total int
			for seed := 1; seed <= seeds; seed++ {
				var db func() *gorm.DB
				if backend == "mariadb" {
					db = func() *gorm.DB { return writerDB(t, testsvc.MySQLDSN) }
				} else {
					shared := embeddedDB(t, 4)
					db = func() *gorm.DB { return shared }
				}
				r, n := guardSeed(t, uint64(seed), db)
				refused += r
				total += n
			}
			t.Logf("%d seeds: %d reservations journalled, %d refused (broken promises: Redis answered 202, MySQL said no)", seeds, total, refused)
		})
	}
}

// guardSeed runs one seed; it returns the refusals and the reservations.
func guardSeed(t *testing.T, seed uint64, open func() *gorm.DB) (int, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 42))
	rdb := testsvc.Redis(t)
	db := open()
	stock := int64(5 + rng.IntN(10))
	limit := 1 + rng.IntN(3)
	a := newTestActivity(t, rdb, db, 1+rng.IntN(2), stock)
	if err := db.Model(&sql.Activity{}).Where("id = ?", a.id).Update("per_user_limit", limit).Error; err != nil {
		t.Fatal(err)
	}
	// Demand past the stock, from few buyers, so that both the stock and the limits bind.
	var users []string
	buyers := 3 + rng.IntN(8)
	for i := 0; i < int(stock)*2; i++ {
		users = append(users, fmt.Sprintf("u%d-%s", rng.IntN(buyers), a.id))
	}
	msgs := a.reserveFor(users, 1)
	for i := range msgs {
		if rng.IntN(4) == 0 {
			msgs[i].Quantity = 2 // the journal's qty; the record's stays 1 (only MySQL's checks read it)
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 3; w++ {
		wdb := open()
		wr := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1, BatchSize: 1 + rng.IntN(8)}, testMetrics(), testLogger(t)))
		order := rng.Perm(len(msgs))
		take := len(msgs) / 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch []Message
			for _, i := range order[:take] {
				batch = append(batch, msgs[i])
			}
			if err := wr.Handle(ctx, batch); err != nil {
				errs <- fmt.Errorf("writer: %w", err)
			}
		}()
	}
	comp := must(NewCompensator(open(), rdb, testMetrics(), testLogger(t)))
	victims := rng.Perm(len(msgs))[:len(msgs)/4]
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, i := range victims {
			err := comp.Compensate(ctx, msgs[i], "seeded race")
			if err != nil && !errors.Is(err, ErrOrderExists) && !errors.Is(err, ErrAlreadyConfirmed) {
				errs <- fmt.Errorf("compensate %s: %w", msgs[i].ReservationID, err)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("seed %d: %v", seed, err)
	}
	last := must(NewWriter(open(), rdb, WriterOptions{MaxOrdersPerSecond: -1}, testMetrics(), testLogger(t)))
	if err := last.Handle(ctx, msgs); err != nil {
		t.Fatalf("seed %d: the final delivery: %v", seed, err)
	}
	return checkGuard(t, seed, db, a, msgs, stock, limit), len(msgs)
}

// checkGuard checks the guard's invariant and every reservation's end from MySQL's rows and
// the records; it returns the refusals.
func checkGuard(t *testing.T, seed uint64, db *gorm.DB, a *testActivity, msgs []Message, stock int64, limit int) int {
	t.Helper()
	var orders []sql.Order
	if err := db.Where("activity_id = ?", a.id).Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	var comps []sql.Compensation
	if err := db.Where("activity_id = ?", a.id).Find(&comps).Error; err != nil {
		t.Fatal(err)
	}
	var row sql.Activity
	if err := db.Where("id = ?", a.id).Take(&row).Error; err != nil {
		t.Fatal(err)
	}
	var units int64
	perUser := map[string]int{}
	ordered := map[string]bool{}
	for _, o := range orders {
		units += int64(o.Quantity)
		perUser[o.UserID] += o.Quantity
		ordered[o.ReservationID] = true
	}
	if units > stock || row.Sold != units {
		t.Fatalf("seed %d: orders hold %d units, stock %d, activities.sold %d", seed, units, stock, row.Sold)
	}
	for u, n := range perUser {
		if n > limit {
			t.Fatalf("seed %d: buyer %s holds %d units, limit %d", seed, u, n, limit)
		}
	}
	why := map[string]string{}
	for _, c := range comps {
		why[c.ReservationID] = c.Reason
	}
	refused := 0
	for _, m := range msgs {
		rec := recordOf(t, a.rdb, m)
		st, w := rec.Status, rec.Why
		reason, comped := why[m.ReservationID]
		switch {
		case ordered[m.ReservationID] && !comped && st == "CONFIRMED":
		case !ordered[m.ReservationID] && comped && st == "FAILED" && len(reason) > len(refusedPrefix) && reason[:len(refusedPrefix)] == refusedPrefix && w == "REFUSED":
			refused++
		case !ordered[m.ReservationID] && comped && st == "FAILED" && w == "":
		default:
			t.Fatalf("seed %d: %s: order %v, compensation %q, record %s why %q", seed, m.ReservationID, ordered[m.ReservationID], reason, st, w)
		}
	}
	return refused
}

// TestPoisonedRowTakesNoUnit: a row MySQL cannot store (here two buyers whose ids share the
// unique key's 255-character prefix, with the same sequence) is poison, and takes no unit
// from the count the batch's later messages are judged by: with a stock of 2, the first
// buyer's order and the third's fit, and nothing is refused.
func TestPoisonedRowTakesNoUnit(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 2)
	prefix := strings.Repeat("p", 255)
	msgs := a.reserveFor([]string{prefix + "-a-" + a.id, prefix + "-b-" + a.id, "c-" + a.id}, 1)
	m := testMetrics()
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1}, m, testLogger(t)))
	if err := w.Handle(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	var orders []sql.Order
	if err := db.Where("activity_id = ?", a.id).Order("id").Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	var comps []sql.Compensation
	if err := db.Where("activity_id = ?", a.id).Find(&comps).Error; err != nil {
		t.Fatal(err)
	}
	if len(orders) != 2 || orders[0].ReservationID != msgs[0].ReservationID || orders[1].ReservationID != msgs[2].ReservationID {
		t.Fatalf("orders %+v, want the first and the third buyer's", orders)
	}
	if len(comps) != 1 || comps[0].ReservationID != msgs[1].ReservationID || strings.HasPrefix(comps[0].Reason, refusedPrefix) {
		t.Fatalf("compensations %+v, want the second buyer's dead letter only (no refusal)", comps)
	}
	if got := metricValue(m.DeadLetters.WithLabelValues(string(causeInsert))); got != 1 {
		t.Fatalf("dead letters (insert) %v, want 1", got)
	}
}

// TestReservationOfAnActivityWithoutARowWaits: the admin create writes Redis, then MySQL; a
// reservation made in between (or while the MySQL write fails and the create is retried) is
// neither written nor refused: the batch comes back (ErrNoActivityRow), and once the row
// exists the order is written.
func TestReservationOfAnActivityWithoutARowWaits(t *testing.T) {
	t.Parallel()
	rdb, db, a := activityOn(t, 1, 5)
	if err := db.Exec("DELETE FROM activities WHERE id = ?", a.id).Error; err != nil {
		t.Fatal(err)
	}
	msgs := a.reserve(2)
	w := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1, Retries: 1, MaxBackoff: 10 * time.Millisecond}, testMetrics(), testLogger(t)))
	ctx := context.Background()
	if err := w.Handle(ctx, msgs); !errors.Is(err, ErrNoActivityRow) {
		t.Fatalf("Handle without the activity's row: %v, want ErrNoActivityRow", err)
	}
	if c := countOrders(t, db, a.id); c.rows != 0 || compensationRows(t, db, a.id) != 0 {
		t.Fatalf("orders %+v, %d compensations: want none while MySQL does not know the activity", c, compensationRows(t, db, a.id))
	}
	row := sql.Activity{ID: a.id, Stock: 5, PerUserLimit: 1, OpensAt: time.Now().UTC(), Shards: 1, Generation: "g0"}
	if err := db.Create(&row).Error; err != nil {
		t.Fatal(err)
	}
	if err := w.Handle(ctx, msgs); err != nil {
		t.Fatalf("Handle once the row exists: %v", err)
	}
	if c := countOrders(t, db, a.id); c.rows != 2 {
		t.Fatalf("orders %+v once the row exists, want 2", c)
	}
	// Still no row NoRowWait after the writer first found none: dead-lettered, so the queue
	// moves on. The wait counts from that first look, not from the reservation (a message
	// older than NoRowWait, held up by a MySQL outage, still waits).
	b := newTestActivity(t, rdb, db, 1, 5)
	if err := db.Exec("DELETE FROM activities WHERE id = ?", b.id).Error; err != nil {
		t.Fatal(err)
	}
	old := b.reserve(1)
	old[0].TS = time.Now().Add(-2 * time.Minute).UnixMilli()
	w2 := must(NewWriter(writerDB(t, testsvc.MySQLDSN), rdb, WriterOptions{MaxOrdersPerSecond: -1, Retries: 1,
		MaxBackoff: 10 * time.Millisecond, NoRowWait: 300 * time.Millisecond}, testMetrics(), testLogger(t)))
	if err := w2.Handle(ctx, old); !errors.Is(err, ErrNoActivityRow) {
		t.Fatalf("first Handle of a 2-minute-old message without the row: %v, want ErrNoActivityRow", err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := w2.Handle(ctx, old); err != nil {
		t.Fatalf("Handle NoRowWait after the first look: %v, want nil (dead-lettered)", err)
	}
	var reasons []string
	if err := db.Model(&sql.Compensation{}).Where("activity_id = ?", b.id).Pluck("reason", &reasons).Error; err != nil {
		t.Fatal(err)
	}
	if c := countOrders(t, db, b.id); c.rows != 0 || len(reasons) != 1 || !strings.HasPrefix(reasons[0], string(causeNoActivity)) {
		t.Fatalf("orders %+v, compensations %v: want none and one %s dead letter", c, reasons, causeNoActivity)
	}
}
