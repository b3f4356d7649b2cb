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
