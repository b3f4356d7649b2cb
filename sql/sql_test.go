package sql_test

import (
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

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
	db.Raw(`SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE()
		AND table_name = 'orders' AND index_name = 'uk_orders_user_seq' AND non_unique = 0`).Scan(&n)
	if n != 3 {
		t.Fatalf("uk_orders_user_seq has %d columns, want 3", n)
	}
}

func TestMigrateSQLiteMatchesModels(t *testing.T) {
	db, err := gorm.Open(sqlite.Open("file::memory:"), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sql.Migrate(db); err != nil {
		t.Fatal(err)
	}
	o := sql.Order{ReservationID: "a.0.0.1", ActivityID: "a", UserID: "u", Quantity: 1, Seq: 1, Status: "CONFIRMED"}
	if err := db.Create(&o).Error; err != nil {
		t.Fatal(err)
	}
	dup := sql.Order{ReservationID: "a.0.0.2", ActivityID: "a", UserID: "u", Quantity: 1, Seq: 1, Status: "CONFIRMED"}
	if err := db.Create(&dup).Error; err == nil {
		t.Fatal("second order with the same (activity, user, seq) was accepted")
	}
}
