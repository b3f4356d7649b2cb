//go:build integration

package sql_test

import (
	"testing"

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
