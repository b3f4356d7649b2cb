//go:build integration

package order

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/sql"
)

// embeddedDB opens a SQLite database as the embedded mode does (app.openDB: WAL, a busy
// timeout), with a pool of pool connections (the embedded app uses 1).
func embeddedDB(t *testing.T, pool int) *gorm.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "seckill.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent), SkipDefaultTransaction: true})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(pool)
	t.Cleanup(func() { sqlDB.Close() })
	if err := sql.Migrate(db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestCompensationGuardOnSQLiteHoldsAgainstARestoresClaim: in the embedded mode (SQLite) the
// compensation's incarnation guard must do its check and its writes as one: a restore that
// claims a newer incarnation between the two (its cut then reads the compensations) must
// either wait for the compensation, and see its row, or make it refuse (ErrStale, nothing
// given back). Before, on SQLite the check was a lone SELECT: the claim and the cut's read
// went through between it and the writes, the compensation then gave the unit back that the
// cut had counted as unsold (sold twice). The hook claims from another goroutine and waits
// half a second for it; with the guard held the claim waits for the compensation instead.
func TestCompensationGuardOnSQLiteHoldsAgainstARestoresClaim(t *testing.T) {
	for _, pool := range []int{1, 4} {
		t.Run(fmt.Sprintf("pool%d", pool), func(t *testing.T) {
			rdb := testsvc.Redis(t)
			db := embeddedDB(t, pool)
			ctx := context.Background()
			a := newTestActivity(t, rdb, nil, 1, 10)
			row := sql.Activity{ID: a.id, Stock: 10, PerUserLimit: 100, OpensAt: time.Now().UTC(), Shards: a.shards, Generation: "g0"}
			if err := db.Save(&row).Error; err != nil {
				t.Fatal(err)
			}
			comp := must(NewCompensator(db, rdb, testMetrics(), testLogger(t)))
			rec := must(NewReconciler(db, rdb, ReconcileOptions{}, testMetrics(), testLogger(t)))
			m := a.reserveFor([]string{"buyer-" + a.id}, 1)[0]
			type cutResult struct {
				comps []string
				err   error
			}
			cut := make(chan cutResult, 1)
			claimedBetween := false
			comp.afterCheck = func() {
				comp.afterCheck = nil
				go func() {
					_, comps, err := rec.cut(ctx, a.id, row, 1)
					cut <- cutResult{comps, err}
				}()
				select {
				case r := <-cut:
					claimedBetween = true
					cut <- r
				case <-time.After(500 * time.Millisecond):
				}
			}
			err := comp.Compensate(ctx, m, "test")
			var r cutResult
			select {
			case r = <-cut:
			case <-time.After(15 * time.Second):
				t.Fatal("the restore's claim did not finish")
			}
			if r.err != nil {
				t.Fatalf("the restore's claim: %v", r.err)
			}
			st := recordOf(t, rdb, m).Status
			seen := slices.Contains(r.comps, m.ReservationID)
			t.Logf("compensate: %v; record %s; the cut saw the compensation: %v; claimed between check and writes: %v", err, st, seen, claimedBetween)
			if claimedBetween {
				t.Error("the restore claimed a newer incarnation between the guard's check and the compensation's writes")
			}
			if st == "FAILED" && !seen {
				t.Errorf("the unit was given back (record FAILED) after the restore's cut, which saw no compensation: counted unsold and given back, sold twice")
			}
			if st != "FAILED" && err == nil {
				t.Errorf("compensate returned nil with the record %s", st)
			}
		})
	}
}
