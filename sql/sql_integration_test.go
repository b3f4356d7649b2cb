//go:build integration

package sql_test

import (
	"sync"
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
