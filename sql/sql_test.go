package sql_test

import (
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/sql"
)

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

// The schema files are numbered once each, and Apply records every one of them: a second
// Apply applies nothing.
func TestApplyRecordsEveryFileOnce(t *testing.T) {
	ms, err := sql.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 || ms[0].Name != "001_schema.sql" || len(ms[0].Statements) < 3 {
		t.Fatalf("migrations %+v", ms)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Version <= ms[i-1].Version {
			t.Fatalf("versions out of order: %d after %d", ms[i].Version, ms[i-1].Version)
		}
	}
	db, err := gorm.Open(sqlite.Open("file::memory:"), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := sql.Apply(db)
	if err != nil || len(applied) != len(ms) {
		t.Fatalf("first Apply: %d applied, %v; want %d", len(applied), err, len(ms))
	}
	again, err := sql.Apply(db)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Apply: %d applied, %v; want none", len(again), err)
	}
	rows, err := sql.Applied(db)
	if err != nil || len(rows) != len(ms) || rows[len(rows)-1].Version != ms[len(ms)-1].Version {
		t.Fatalf("schema_migrations %+v, %v", rows, err)
	}
}
