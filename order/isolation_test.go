//go:build integration

package order

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/sql"
)

// readCommittedDB opens a pool whose every session runs at READ COMMITTED, whatever the
// server's default: the level a deployment may run (a MySQL configured for it, a managed
// server's default). MariaDB names the session variable tx_isolation, MySQL 8
// transaction_isolation; the driver sets it on every new connection.
func readCommittedDB(t *testing.T) *gorm.DB {
	t.Helper()
	var version string
	if err := testsvc.MySQL(t).Raw("SELECT VERSION()").Scan(&version).Error; err != nil {
		t.Fatal(err)
	}
	name := "transaction_isolation"
	if strings.Contains(strings.ToLower(version), "mariadb") {
		name = "tx_isolation"
	}
	sep := "?"
	if strings.Contains(testsvc.MySQLDSN, "?") {
		sep = "&"
	}
	db := openDB(t, testsvc.MySQLDSN+sep+name+"=%27READ-COMMITTED%27")
	var level string
	if err := db.Raw("SELECT @@" + name).Scan(&level).Error; err != nil {
		t.Fatal(err)
	}
	if level != "READ-COMMITTED" {
		t.Fatalf("setup: session isolation %q, want READ-COMMITTED", level)
	}
	return db
}

// running reports whether connection conn has run a statement for a second or more (a
// statement held by a lock: InnoDB's own tables do not list every such wait).
func running(t *testing.T, db *gorm.DB, conn int64) bool {
	t.Helper()
	var n int64
	if err := db.Raw("SELECT COUNT(*) FROM information_schema.processlist WHERE id = ? AND command IN ('Query', 'Execute') AND time >= 1",
		conn).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestRestoreCutHoldsAtReadCommitted: the restore's cut (claim a new incarnation, then read
// the orders) must see every order of the older incarnations, or the rebuilt Redis counts
// that order's unit as unsold and sells it again. An insert of the writer in progress when
// the claim commits must therefore end before it (or insert nothing). At REPEATABLE READ an
// INSERT ... SELECT locks the activity's row it reads; at READ COMMITTED it reads it without
// a lock, the claim does not wait, and the order committed after the read is sold twice.
// Both the writer and the restore run at READ COMMITTED here; the writer's insert is held
// mid-statement (after its read of the activity) by an uncommitted row under the same
// reservation id, the cut runs, then the row goes.
func TestRestoreCutHoldsAtReadCommitted(t *testing.T) {
	// Not parallel: the blocking row holds a lock in the orders' unique index meanwhile.
	rdb, db, a := activityOn(t, 1, 10)
	ctx := context.Background()
	wdb, rdbc := readCommittedDB(t), readCommittedDB(t)
	// One connection each, so the test knows which server thread runs the writer's insert
	// and the restore's claim.
	w := must(NewWriter(wdb, rdb, WriterOptions{MaxOrdersPerSecond: -1, StatementTimeout: time.Minute, CompensationLockTTL: 2 * time.Minute, PoolSize: 1}, testMetrics(), testLogger(t)))
	rec := must(NewReconciler(rdbc, rdb, ReconcileOptions{}, testMetrics(), testLogger(t)))
	if sdb, err := rdbc.DB(); err == nil {
		sdb.SetMaxOpenConns(1)
	}
	var writerConn, cutConn int64
	if err := wdb.Raw("SELECT CONNECTION_ID()").Scan(&writerConn).Error; err != nil {
		t.Fatal(err)
	}
	if err := rdbc.Raw("SELECT CONNECTION_ID()").Scan(&cutConn).Error; err != nil {
		t.Fatal(err)
	}
	row := sql.Activity{ID: a.id, Stock: 10, PerUserLimit: 100, OpensAt: time.Now().UTC(), Shards: 1, Generation: "g0"}
	if err := db.Save(&row).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DELETE FROM activities WHERE id = ?", a.id) })
	msgs := a.reserveFor([]string{"buyer-" + a.id}, 1)

	blocker := db.Begin()
	if err := blocker.Exec("INSERT INTO orders (reservation_id, activity_id, user_id, quantity, seq, status, idem_hash) "+
		"VALUES (?, ?, 'blocker', 1, 1, 'CONFIRMED', '')", msgs[0].ReservationID, "blk-"+a.id).Error; err != nil {
		blocker.Rollback()
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			blocker.Rollback()
		}
	}
	t.Cleanup(release)
	werr := make(chan error, 1)
	go func() { werr <- w.Handle(ctx, msgs) }()
	// The insert waits for the blocking row: it read the activity's row before.
	testwait.Eventually(t, time.Minute, func() bool { return running(t, db, writerConn) },
		"the writer's insert waiting for the blocking row")

	type cutResult struct {
		orders []sql.Order
		err    error
	}
	cut := make(chan cutResult, 1)
	go func() {
		orders, _, err := rec.cut(ctx, a.id, row, 1)
		cut <- cutResult{orders, err}
	}()
	var got *cutResult
	testwait.Eventually(t, time.Minute, func() bool {
		select {
		case r := <-cut:
			got = &r
			return true
		default:
		}
		return running(t, db, cutConn)
	}, "the cut done or waiting for the writer's insert")
	release()
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if got == nil {
		r := <-cut
		got = &r
	}
	if got.err != nil {
		t.Fatalf("cut: %v", got.err)
	}
	counted := map[string]bool{}
	for _, o := range got.orders {
		counted[o.ReservationID] = true
	}
	var orders []sql.Order
	if err := db.Where("activity_id = ?", a.id).Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	for _, o := range orders {
		if !counted[o.ReservationID] {
			t.Errorf("order %s of incarnation 0 committed after the restore's cut, which counted its unit unsold: sold twice", o.ReservationID)
		}
	}
	t.Logf("orders: %d in MySQL, %d counted by the cut", len(orders), len(got.orders))
}
