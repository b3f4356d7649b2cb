//go:build integration

package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
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

// TestRestoreIsAsynchronous: the restore waits for the instances, the journals and the queue
// (seconds, and on a big sale more than the admin listener's 60 s write timeout, which would
// cut a synchronous answer off): POST answers 202 with the job RUNNING and where to read it,
// a second POST meanwhile answers the same job, and GET of that address answers the job's
// state until it is DONE with the restore's report. GET of an activity never restored is 404.
func TestRestoreIsAsynchronous(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "arestore")
	ta.createActivity(t, id, 5, 1, 1, time.Now().Add(-time.Second))
	if a := ta.admin(t, "GET", "/admin/v1/activities/"+id+"/restore", ""); a.status != http.StatusNotFound || a.body["code"] != CodeNotFound {
		t.Fatalf("GET of a restore never run: %d %v, want 404", a.status, a.body)
	}
	if a := ta.reserve(t, id, "u1", ""); a.status != http.StatusAccepted {
		t.Fatalf("reserve: %d %v", a.status, a.body)
	}
	waitDriftZero(t, ta, id) // the order is in MySQL
	path := "/admin/v1/activities/" + id + "/restore"
	// A restore closes the sale while it runs: on a healthy activity it is refused, unless
	// forced, and starts nothing.
	if a := ta.admin(t, "POST", path, ""); a.status != http.StatusConflict || a.body["code"] != CodeConflict ||
		!strings.Contains(fmt.Sprint(a.body["message"]), "force=true") {
		t.Fatalf("POST restore of a healthy activity: %d %v, want 409 CONFLICT naming force=true", a.status, a.body)
	}
	if a := ta.admin(t, "GET", path, ""); a.status != http.StatusNotFound {
		t.Fatalf("GET after a refused restore: %d %v, want 404 (no job started)", a.status, a.body)
	}
	ctx := context.Background()
	k := inventory.Shard(id, 0, 0)
	if err := ta.rdb.Del(ctx, inventory.Meta(id), k.Stock(), k.Users(), k.Seq(), k.Stats(), k.Journal(), k.Gen()).Err(); err != nil {
		t.Fatal(err)
	}
	var st answer
	testwait.Eventually(t, 10*time.Second, func() bool {
		st = ta.do(t, "GET", "/api/v1/activities/"+id, nil, "")
		return st.body["status"] == "RECOVERING"
	}, "the loss noticed (last %v)", testwait.Lazy(func() string { return fmt.Sprint(st.status, st.body) }))
	first := ta.admin(t, "POST", path, "")
	// The restore waits 4.5 s at least (settle, then the quiet of the queue): an answer that
	// says RUNNING was given before it ended.
	if first.status != http.StatusAccepted || first.body["state"] != "RUNNING" || first.header.Get("Location") != path {
		t.Fatalf("POST restore: %d %v (Location %q), want 202 RUNNING at %s", first.status, first.body, first.header.Get("Location"), path)
	}
	if again := ta.admin(t, "POST", path, ""); again.status != http.StatusAccepted || again.body["startedAt"] != first.body["startedAt"] {
		t.Fatalf("second POST while running: %d %v, want 202 with the running job %v", again.status, again.body, first.body)
	}
	last := waitRestoreJob(t, ta, path)
	rep, _ := last.body["report"].(map[string]any)
	if last.body["state"] != "DONE" || rep == nil || rep["sold"] != float64(1) || rep["remaining"] != float64(4) {
		t.Fatalf("restore job: %v, want DONE with sold 1, remaining 4", last.body)
	}
	if a := ta.reserve(t, id, "u2", ""); a.status != http.StatusAccepted {
		t.Fatalf("reserve after the restore: %d %v", a.status, a.body)
	}
}

// waitRestoreJob polls the restore job at path (the Location of its POST) until it has ended,
// for up to 2 minutes, and returns the job's last answer.
func waitRestoreJob(t *testing.T, ta *testApp, path string) answer {
	t.Helper()
	var last answer
	testwait.Eventually(t, 2*time.Minute, func() bool {
		last = ta.admin(t, "GET", path, "")
		return last.status == http.StatusOK && last.body["state"] != "RUNNING"
	}, "the restore job done (last: %v)", testwait.Lazy(func() string { return fmt.Sprint(last.status, last.body) }))
	return last
}
