//go:build integration

package app

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/inventory"
)

// TestAdminCreateOfAKnownActivityNeverLoadsStockAgain: once MySQL knows an activity, the admin
// create answers its current state (same definition), 409 CONFLICT (another definition) or,
// when Redis lost it, 409 RESTORE_NEEDED; it never loads the stock again.
func TestAdminCreateOfAKnownActivityNeverLoadsStockAgain(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "known")
	opens := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	body := fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":2,"opensAt":%q}`, id, opens)
	if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
		t.Fatalf("create: %d %v", a.status, a.body)
	}
	if a := ta.reserve(t, id, "u1", ""); a.status != http.StatusAccepted {
		t.Fatalf("reserve: %d %v", a.status, a.body)
	}
	if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusOK || a.body["stock"] != float64(5) {
		t.Fatalf("same definition again: %d %v, want 200", a.status, a.body)
	}
	other := fmt.Sprintf(`{"activityId":%q,"stock":50,"perUserLimit":1,"shards":2,"opensAt":%q}`, id, opens)
	if a := ta.admin(t, "POST", "/admin/v1/activities", other); a.status != http.StatusConflict || a.body["code"] != CodeConflict {
		t.Fatalf("another definition: %d %v, want 409 CONFLICT", a.status, a.body)
	}
	// Redis forgets the activity (its keys only: the Redis is shared).
	ctx := context.Background()
	keys := []string{inventory.Meta(id)}
	for i := 0; i < 2; i++ {
		k := inventory.Shard(id, 0, i)
		keys = append(keys, k.Stock(), k.Users(), k.Seq(), k.Stats(), k.Journal())
	}
	if err := ta.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	a := ta.admin(t, "POST", "/admin/v1/activities", body)
	if a.status != http.StatusConflict || a.body["code"] != CodeRestoreNeeded {
		t.Fatalf("re-create after Redis lost it: %d %v, want 409 %s", a.status, a.body, CodeRestoreNeeded)
	}
	n, err := ta.rdb.Exists(ctx, inventory.Meta(id), inventory.Shard(id, 0, 0).Stock(), inventory.Shard(id, 0, 1).Stock()).Result()
	if err != nil || n != 0 {
		t.Fatalf("the refused create wrote %d keys (%v): stock loaded again", n, err)
	}
}
