//go:build integration

package sql_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/sql"
)

func TestMigrateMariaDBTwice(t *testing.T) {
	db := testsvc.MySQL(t)
	for i := 0; i < 2; i++ {
		if err := sql.Migrate(db); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
	}
	for _, tbl := range []string{"activities", "orders", "compensations"} {
		if !db.Migrator().HasTable(tbl) {
			t.Errorf("table %s missing", tbl)
		}
	}
	var n int64
	if err := db.Raw(`SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE()
		AND table_name = 'orders' AND index_name = 'uk_orders_user_seq' AND non_unique = 0`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("uk_orders_user_seq has %d columns, want 3", n)
	}
	for _, c := range [][2]string{{"activities", "generation"}, {"activities", "incarnation"}, {"orders", "idem_hash"}} {
		if !db.Migrator().HasColumn(c[0], c[1]) {
			t.Errorf("column %s.%s missing after 002_generation.sql", c[0], c[1])
		}
	}
}

// The widest reservation id (inventory/keys.go maxReservationIDLen: a 64-byte activity id,
// every number at its widest, the issuer) fits the orders' and compensations' columns after
// 003_issuer.sql, and reads back whole (strict mode refuses a longer one rather than cut it).
func TestWidestReservationIDFitsTheColumns(t *testing.T) {
	db := testsvc.MySQL(t)
	if err := sql.Migrate(db); err != nil {
		t.Fatal(err)
	}
	act := fmt.Sprintf("w%063d", time.Now().UnixNano())
	rid := act + ".999999999.9999.9223372036854775807.0123456789abcdef-9223372036854775807"
	if len(act) != 64 || len(rid) != 136 {
		t.Fatalf("test id of %d bytes (activity %d), want 136 (64)", len(rid), len(act))
	}
	t.Cleanup(func() {
		db.Where("activity_id = ?", act).Delete(&sql.Order{})
		db.Where("activity_id = ?", act).Delete(&sql.Compensation{})
	})
	if err := db.Create(&sql.Order{ReservationID: rid, ActivityID: act, UserID: "u", Quantity: 1, Seq: 1, Status: "CONFIRMED"}).Error; err != nil {
		t.Fatalf("order with the widest reservation id: %v", err)
	}
	if err := db.Create(&sql.Compensation{ReservationID: rid, ActivityID: act, UserID: "u", Quantity: 1, Reason: "test"}).Error; err != nil {
		t.Fatalf("compensation with the widest reservation id: %v", err)
	}
	var o sql.Order
	var c sql.Compensation
	if err := db.Where("activity_id = ?", act).First(&o).Error; err != nil || o.ReservationID != rid {
		t.Fatalf("order read back: %q, %v; want %q", o.ReservationID, err, rid)
	}
	if err := db.Where("activity_id = ?", act).First(&c).Error; err != nil || c.ReservationID != rid {
		t.Fatalf("compensation read back: %q, %v; want %q", c.ReservationID, err, rid)
	}
}

// Several instances starting at once take turns under the advisory lock: every Apply
// succeeds, and schema_migrations ends with each file once.
func TestApplyConcurrentlyOnMariaDB(t *testing.T) {
	db := testsvc.MySQL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = sql.Apply(db)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Apply #%d: %v", i, err)
		}
	}
	ms, err := sql.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := sql.Applied(db)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, r := range rows {
		got[r.Version]++
	}
	for _, m := range ms {
		if got[m.Version] != 1 {
			t.Errorf("schema_migrations holds %s %d times, want once", m.Name, got[m.Version])
		}
	}
}
