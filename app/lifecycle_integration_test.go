//go:build integration

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// A sale has an end: an operator ends it (closed at once on every instance), archives it once
// its orders are all in MySQL (MySQL keeps the final counts and report, Redis's keys go), and
// the archived activity is never taken for a Redis loss, on this instance or a new one.
func TestLifecycleEndAndArchive(t *testing.T) {
	t.Parallel() // with the drills (see drills_test.go): states and counts, no latency
	t.Run("mariadb", func(t *testing.T) { lifecycleDrill(t, realOptions(t), true) })
	t.Run("embedded", func(t *testing.T) { lifecycleDrill(t, Options{}, false) })
}

func lifecycleDrill(t *testing.T, opts Options, fresh bool) {
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "life")
	ta.createActivity(t, id, 10, 1, 2, time.Now().Add(-time.Second))
	const buyers = 4
	for i := 0; i < buyers; i++ {
		if r := ta.reserve(t, id, fmt.Sprintf("u%d", i), ""); r.status != http.StatusAccepted {
			t.Fatalf("setup: reserve u%d: %d %v", i, r.status, r.body)
		}
	}
	testwait.Eventually(t, 30*time.Second, func() bool {
		return guardCount(t, ta, "SELECT COUNT(*) FROM orders WHERE activity_id = ?", id) == buyers
	}, "the %d orders in the database", buyers)

	if a := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/archive", ""); a.status != http.StatusConflict || a.body["code"] != CodeNotEnded {
		t.Fatalf("archive of a running sale: %d %v, want 409 %s", a.status, a.body, CodeNotEnded)
	}
	end := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/end", "")
	if end.status != http.StatusOK || end.body["state"] != stateEnded || end.body["endedAt"] == nil {
		t.Fatalf("end: %d %v", end.status, end.body)
	}
	if again := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/end", ""); again.status != http.StatusOK || again.body["endedAt"] != end.body["endedAt"] {
		t.Fatalf("end again: %d %v, want the first end %v to stand", again.status, again.body, end.body["endedAt"])
	}
	// The instance that ended the sale refuses at once (the others within a refresh).
	if r := ta.reserve(t, id, "late", ""); r.status != http.StatusGone || r.body["code"] != "CLOSED" {
		t.Fatalf("a reservation after the end: %d %v, want 410 CLOSED", r.status, r.body)
	}
	if g := ta.do(t, "GET", "/api/v1/activities/"+id, nil, ""); g.status != http.StatusOK || g.body["status"] != "CLOSED" {
		t.Fatalf("status after the end: %d %v", g.status, g.body)
	}

	arch := archiveWhenSettled(t, ta, id, "")
	if arch.status != http.StatusOK || arch.body["state"] != stateArchived || arch.body["archivedAt"] == nil {
		t.Fatalf("archive: %d %v", arch.status, arch.body)
	}
	rep, _ := arch.body["report"].(map[string]any)
	orders, _ := rep["orders"].(map[string]any)
	if rep["sold"] != float64(buyers) || orders["count"] != float64(buyers) || rep["redisLost"] != false || rep["report"] == nil || rep["reconciliation"] == nil {
		t.Fatalf("archive's final report: %v, want %d sold in %d orders with the report and reconciliation", rep, buyers, buyers)
	}
	if n := guardCount(t, ta, "SELECT COUNT(*) FROM activities WHERE id = ? AND archived_at IS NOT NULL AND final_report IS NOT NULL AND sold = ?", id, buyers); n != 1 {
		t.Fatalf("MySQL row of %s: archived with its report and sold %d: %d rows", id, buyers, n)
	}
	if keys := activityKeys(t, ta.rdb, id); len(keys) != 1 || keys[0] != inventory.ArchivedKey(id) {
		t.Fatalf("Redis keys of the archived %s: %v, want only its archive mark", id, keys)
	}

	// Read the storefront a while: unknown (404), never recovering, and no key comes back.
	for i := 0; i < 6; i++ {
		if g := ta.do(t, "GET", "/api/v1/activities/"+id, nil, ""); g.status != http.StatusNotFound {
			t.Fatalf("storefront GET of the archived activity: %d %v, want 404", g.status, g.body)
		}
		if ids, _ := ta.inv.Recovering(); slices.Contains(ids, id) {
			t.Fatalf("%s recovering after the archive", id)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if keys := activityKeys(t, ta.rdb, id); len(keys) != 1 {
		t.Fatalf("Redis keys of the archived %s came back: %v", id, keys)
	}
	if g := ta.admin(t, "GET", "/admin/v1/activities/"+id, ""); g.status != http.StatusOK || g.body["state"] != stateArchived || g.body["final"] == nil {
		t.Fatalf("admin GET of the archived activity: %d %v", g.status, g.body)
	}
	if g := ta.admin(t, "GET", "/admin/v1/activities/"+id+"/report", ""); g.status != http.StatusOK || g.body["activityId"] != id {
		t.Fatalf("report of the archived activity: %d %v", g.status, g.body)
	}
	if g := ta.admin(t, "GET", "/admin/v1/activities/"+id+"/reconciliation", ""); g.status != http.StatusOK || g.body["ordersInDb"] != float64(buyers) {
		t.Fatalf("reconciliation of the archived activity: %d %v", g.status, g.body)
	}
	body := fmt.Sprintf(`{"activityId":%q,"stock":10,"perUserLimit":1,"shards":2}`, id)
	if c := ta.admin(t, "POST", "/admin/v1/activities", body); c.status != http.StatusConflict || c.body["code"] != CodeArchived {
		t.Fatalf("create under the archived id: %d %v, want 409 %s", c.status, c.body, CodeArchived)
	}
	if c := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/restore?force=true", ""); c.status != http.StatusConflict || c.body["code"] != CodeArchived {
		t.Fatalf("restore of the archived activity: %d %v, want 409 %s", c.status, c.body, CodeArchived)
	}
	if again := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/archive", ""); again.status != http.StatusOK || again.body["archivedAt"] != arch.body["archivedAt"] {
		t.Fatalf("archive again: %d %v, want the first archive %v", again.status, again.body, arch.body["archivedAt"])
	}
	if n := guardCount(t, ta, "SELECT COUNT(*) FROM orders WHERE activity_id = ?", id); n != buyers {
		t.Fatalf("orders after the archive: %d, want %d", n, buyers)
	}
	if !fresh {
		return
	}
	// A new instance on the same MySQL and a Redis without the keys: not a loss.
	tb := startApp(t, opts, testConfig)
	time.Sleep(time.Second)
	if ids, _ := tb.inv.Recovering(); slices.Contains(ids, id) {
		t.Fatalf("a new instance takes the archived %s for lost", id)
	}
	if v := scrapeSum(t, tb, `seckill_activity_recovering{activity="`+id+`"}`); v != 0 {
		t.Fatalf("seckill_activity_recovering of the archived %s on a new instance: %v", id, v)
	}
}

// An activity whose Redis keys are gone (a fresh Redis beside the MySQL of past sales) is
// recovering; once its sale ended, an operator archives it as it is (?force=true) and every
// instance stops taking it for lost: the one that archived at once, another that missed the
// event (a namespace of its own) within its recheck.
func TestArchiveOfALostSale(t *testing.T) {
	opts := realOptions(t)
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "lostlife")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	if r := ta.reserve(t, id, "u0", ""); r.status != http.StatusAccepted {
		t.Fatalf("setup: reserve: %d %v", r.status, r.body)
	}
	testwait.Eventually(t, 30*time.Second, func() bool {
		return guardCount(t, ta, "SELECT COUNT(*) FROM orders WHERE activity_id = ?", id) == 1
	}, "the order in the database")
	if end := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/end", ""); end.status != http.StatusOK {
		t.Fatalf("end: %d %v", end.status, end.body)
	}
	other := opts
	other.Namespace = fmt.Sprintf("other%d", time.Now().UnixNano())
	tb := startApp(t, other, testConfig)
	if g := tb.do(t, "GET", "/api/v1/activities/"+id, nil, ""); g.status != http.StatusOK || g.body["status"] != "CLOSED" {
		t.Fatalf("setup: the other instance: %d %v", g.status, g.body)
	}
	for _, k := range activityKeys(t, ta.rdb, id) { // a fresh Redis
		if err := ta.rdb.Del(context.Background(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range []*testApp{ta, tb} {
		testwait.Eventually(t, 5*time.Second, func() bool {
			ids, _ := x.inv.Recovering()
			return slices.Contains(ids, id)
		}, "%s recovering once its keys are gone", id)
	}
	if rz := ta.do(t, "GET", "/readyz", nil, ""); rz.status != http.StatusOK || rz.body["recovering"] != nil {
		t.Fatalf("storefront /readyz names activities: %d %v", rz.status, rz.body)
	}
	if rz := adminReadyz(t, ta); !containsAny(anyList(rz.body["recovering"]), id) {
		t.Fatalf("admin /readyz does not name the recovering %s: %v", id, rz.body)
	}
	if a := archiveWhenSettled(t, ta, id, ""); a.status != http.StatusConflict || a.body["code"] != CodeRecovering {
		t.Fatalf("archive of a lost sale without force: %d %v, want 409 %s", a.status, a.body, CodeRecovering)
	}
	a := ta.admin(t, "POST", "/admin/v1/activities/"+id+"/archive?force=true", "")
	rep, _ := a.body["report"].(map[string]any)
	if a.status != http.StatusOK || rep["redisLost"] != true || rep["sold"] != float64(1) {
		t.Fatalf("forced archive of a lost sale: %d %v", a.status, a.body)
	}
	if ids, _ := ta.inv.Recovering(); slices.Contains(ids, id) {
		t.Fatalf("the archiving instance still takes %s for lost", id)
	}
	testwait.Eventually(t, archiveRecheckBound, func() bool {
		ids, _ := tb.inv.Recovering()
		return !slices.Contains(ids, id)
	}, "the instance that missed the event stops taking the archived sale for lost")
	if v := scrapeSum(t, tb, `seckill_activity_recovering{activity="`+id+`"}`); v != 0 {
		t.Fatalf("seckill_activity_recovering of the archived %s: %v", id, v)
	}
	if g := ta.admin(t, "GET", "/admin/v1/activities/"+id+"/report", ""); g.status != http.StatusGone || g.body["code"] != CodeArchived {
		t.Fatalf("report of a sale archived without Redis: %d %v, want 410 %s", g.status, g.body, CodeArchived)
	}
}

// archiveWhenSettled POSTs the archive until it no longer answers that the end is too
// recent (archiveAfterEnd).
func archiveWhenSettled(t *testing.T, ta *testApp, id, query string) answer {
	t.Helper()
	var a answer
	for i := 0; ; i++ {
		a = ta.admin(t, "POST", "/admin/v1/activities/"+id+"/archive"+query, "")
		if a.status != http.StatusConflict || a.body["code"] != CodeNotDrained {
			break
		}
		if i > 50 {
			t.Fatalf("archive of %s: still %d %v after 5 s", id, a.status, a.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return a
}

// adminReadyz is the admin listener's /readyz (the one that names recovering activities).
func adminReadyz(t *testing.T, ta *testApp) answer {
	t.Helper()
	a, raw, err := send("GET", ta.adminBase+"/readyz", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("admin /readyz: %v", err)
	}
	return a
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// archiveRecheckBound is how long an instance that missed the archive's event may still take
// the activity for lost: inventory's recheck (10 s) and a refresh, with room for a slow run.
const archiveRecheckBound = 15 * time.Second

// activityKeys lists every Redis key of the activity (its tag and its shards' tags).
func activityKeys(t *testing.T, rdb redis.UniversalClient, id string) []string {
	t.Helper()
	var out []string
	for _, p := range []string{"sk:{" + id + "}:*", "sk:{" + id + ":*"} {
		iter := rdb.Scan(context.Background(), 0, p, 1000).Iterator()
		for iter.Next(context.Background()) {
			out = append(out, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatalf("scan %s: %v", p, err)
		}
	}
	return out
}

// An end POSTed while a restore starts (after the restore read the activity's row, before it
// fenced it: the end's check finds no restore yet) stays in Redis: the rebuild wrote meta from
// the row as read, without the end, so an instance started afterwards (or one that restarts)
// read no end and sold until the archive, while MySQL and the end's answer said ended.
func TestAnEndWrittenAsARestoreStartsStaysInRedis(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "end-restore")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	if r := ta.reserve(t, id, "u1", ""); r.status != http.StatusAccepted {
		t.Fatalf("setup: reserve: %d %v", r.status, r.body)
	}
	ended := make(chan answer, 1)
	var once atomic.Bool
	ta.rec.AfterRestoreRead(func() {
		if once.CompareAndSwap(false, true) {
			ended <- ta.admin(t, "POST", "/admin/v1/activities/"+id+"/end", "")
		}
	})
	path := "/admin/v1/activities/" + id + "/restore"
	if a := ta.admin(t, "POST", path+"?force=true", ""); a.status != http.StatusAccepted {
		t.Fatalf("POST restore: %d %v", a.status, a.body)
	}
	if last := waitRestoreJob(t, ta, path); last.body["state"] != "DONE" {
		t.Fatalf("restore job: %v, want DONE", last.body)
	}
	e := <-ended
	if e.status != http.StatusOK || e.body["endedAt"] == nil {
		t.Fatalf("the end POSTed as the restore started: %d %v, want 200 with endedAt", e.status, e.body)
	}
	// what an instance started now reads
	got, err := ta.rdb.HGet(context.Background(), inventory.Meta(id), "ended").Result()
	if err != nil || got == "" || got == "0" {
		t.Fatalf("Redis's meta after the restore: ended %q (%v), want the end MySQL has (%v)", got, err, e.body["endedAt"])
	}
	if a := ta.reserve(t, id, "u2", ""); a.status != http.StatusGone || a.body["code"] != "CLOSED" {
		t.Fatalf("a reservation after the end: %d %v, want 410 CLOSED", a.status, a.body)
	}
}
