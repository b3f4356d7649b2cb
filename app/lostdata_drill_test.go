//go:build integration

package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// The issue-18 drill, Redis restarted empty (mode none): a rush on two instances, the
// instances' Redis SIGKILLed and started again empty. Every instance puts the activity in
// the recovering state within 1 s of Redis answering again; the admin re-create is refused;
// the restore reopens it with remaining = stock - sold; the crowd finishes; no user is over
// the limit, no reservation id is handed out twice, and the reservations the restore lists as
// lost are exactly the 202s the crowd saw that have no order (plus, at most, reservations whose
// answer was lost with Redis: 503 OUTCOME_UNKNOWN).
func TestDrillRedisRestartedEmpty(t *testing.T) {
	t.Parallel()
	const stock = 800
	rds := startRedisProc(t, false, "--appendonly", "no") // killed and started again empty
	opts := rocketOptions(t)
	opts.RedisAddr = rds.addr()
	opts.Namespace = drillNamespace()
	opts.UserHashKey = bytes.Repeat([]byte{7}, inventory.MinUserHashKey) // configured, as production must
	opts.WriterRate = 2000
	a := startApp(t, opts, testConfig)
	b := startApp(t, opts, testConfig)
	id := uniq(t, "rempty")
	a.createActivity(t, id, stock, 1, 4, time.Now().Add(-time.Second))
	db := testsvc.MySQL(t)

	var (
		killOnce              sync.Once
		restartedAt           time.Time
		detect                [2]time.Duration
		acceptedBefore        map[string]string
		outcomeUnknownAtKill  int
		recreate, restoreResp answer
		restoredAt            time.Time
	)
	restored := make(chan struct{})
	var killed atomic.Bool
	res := drillRush(t, drillClient{base: func(i int) string {
		if i%2 == 0 {
			return a.base
		}
		return b.base
	}, ramp: 6 * time.Second}, id, 2*stock, 24, func(r *drillResult) {
		if r.acceptedN.Load() < stock/3 {
			return
		}
		killOnce.Do(func() {
			killed.Store(true)
			go func() {
				defer close(restored)
				// Kill only once orders exist: a restore that counts none proves little.
				for until := time.Now().Add(20 * time.Second); time.Now().Before(until); time.Sleep(20 * time.Millisecond) {
					if o, _, err := oldOrders(db, id); err == nil && len(o) > 0 {
						break
					}
				}
				rds.kill()
				rds.start()
				restartedAt = time.Now()
				var wg sync.WaitGroup
				for i, ta := range []*testApp{a, b} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Since(restartedAt) < 10*time.Second {
							g := ta.do(t, "GET", "/api/v1/activities/"+id, nil, "")
							if g.status == http.StatusOK && g.body["status"] == "RECOVERING" {
								detect[i] = time.Since(restartedAt)
								return
							}
							time.Sleep(20 * time.Millisecond)
						}
						detect[i] = -1
					}()
				}
				wg.Wait()
				for i, ta := range []*testApp{a, b} {
					rz := adminReadyz(t, ta)
					// (The shared MySQL also knows other tests' activities, which this private
					// Redis never had: they are recovering too.)
					ids, _ := rz.body["recovering"].([]any)
					if !containsAny(ids, id) {
						t.Errorf("instance %d /readyz %d %v: does not name %s as recovering", i, rz.status, rz.body, id)
					}
					if v := scrapeSum(t, ta, fmt.Sprintf(`seckill_activity_recovering{activity=%q}`, id)); v != 1 {
						t.Errorf("instance %d: seckill_activity_recovering{activity=%q} %v while fenced, want 1", i, id, v)
					}
				}
				recreate = a.admin(t, "POST", "/admin/v1/activities", fmt.Sprintf(`{"activityId":%q,"stock":%d,"perUserLimit":1,"shards":4}`, id, stock))
				// Every answer the crowd got before the restore: the 202s it saw and the answers lost with Redis.
				time.Sleep(time.Second)
				r.mu.Lock()
				acceptedBefore = make(map[string]string, len(r.accepted))
				for rid, u := range r.accepted {
					acceptedBefore[rid] = u
				}
				outcomeUnknownAtKill = r.codes["503 OUTCOME_UNKNOWN"]
				r.mu.Unlock()
				restoreResp = restoreAndWait(t, a, id)
				restoredAt = time.Now()
			}()
		})
	})
	if !killed.Load() {
		t.Fatal("Redis was never killed")
	}
	<-restored
	for i, d := range detect {
		if d < 0 || d > time.Second {
			t.Errorf("instance %d saw the activity recovering %v after Redis came back empty, want within 1 s", i, d)
		}
	}
	t.Logf("recovering seen %v / %v after Redis answered again", detect[0], detect[1])
	if recreate.status != http.StatusConflict || recreate.body["code"] != CodeRestoreNeeded {
		t.Errorf("admin re-create while recovering: %d %v, want 409 %s", recreate.status, recreate.body, CodeRestoreNeeded)
	}
	if restoreResp.status != http.StatusOK {
		t.Fatalf("restore: %d %v", restoreResp.status, restoreResp.body)
	}
	t.Logf("restore answered after %v: %v", restoredAt.Sub(restartedAt).Round(time.Millisecond), restoreResp.body)
	// The orders the restore counted: those of the old incarnation (epoch below
	// IncarnationEpochs). Every one was in MySQL when the restore read them (it drains the
	// queue first; the Redis that could journal more came back empty), and the crowd's
	// reservations after the reopen are of the new incarnation: a cut by time would count
	// those that landed between the reopen and the poll that saw the job done.
	ordersAtRestore, unitsAtRestore, err := oldOrders(db, id)
	if err != nil {
		t.Fatal(err)
	}
	sold := restoreResp.body["sold"].(float64)
	if sold <= 0 {
		t.Errorf("restore counted %v sold: the drill killed Redis before any order reached MySQL", sold)
	}
	if int(sold) != len(ordersAtRestore) {
		t.Errorf("restore counted %v sold, MySQL holds %d orders of the old incarnation", sold, len(ordersAtRestore))
	}
	if rem := restoreResp.body["remaining"].(float64); rem != float64(stock-unitsAtRestore) {
		t.Errorf("restore remaining %v, want stock - the units of MySQL's old-incarnation orders = %d", rem, stock-unitsAtRestore)
	}
	// The restore names lost reservations by their numbers (inventory.ReservationNumber: an
	// id is its number, a dot and the issuer); Redis came back empty, so no number was handed
	// out twice and a number names one reservation here.
	wantLost := map[string]bool{}
	for rid := range acceptedBefore {
		if _, ok := ordersAtRestore[rid]; !ok {
			wantLost[numberOf(t, rid)] = true
		}
	}
	listed := map[string]bool{}
	for _, v := range restoreResp.body["lost"].([]any) {
		listed[v.(string)] = true
	}
	extra := 0
	var unlisted []string
	for rid := range wantLost {
		if !listed[rid] {
			unlisted = append(unlisted, rid)
			t.Errorf("reservation %s was answered 202, has no order, and the restore does not list it", rid)
		}
	}
	if len(unlisted) > 0 {
		// An order or a compensation that came after the restore's read (a writer held up
		// past its 3 s of quiet) tells a late message from a number no instance reported.
		defer func() {
			for _, num := range unlisted {
				var rows []struct{ Src, ReservationID, Reason string }
				err := db.Raw("SELECT 'order' AS src, reservation_id, '' AS reason FROM orders WHERE activity_id = ? AND reservation_id LIKE ? "+
					"UNION ALL SELECT 'compensation', reservation_id, reason FROM compensations WHERE activity_id = ? AND reservation_id LIKE ?",
					id, num+".%", id, num+".%").Scan(&rows).Error
				t.Logf("at the test's end, unlisted %s: %+v (%v)", num, rows, err)
			}
		}()
		// What the restore had to go on: the instances' reports, against the highest number
		// each issuer (an instance's process, the id's last part) was answered 202 for per shard.
		rep, err := rds.client().HGetAll(context.Background(), inventory.IssuedKey(id)).Result()
		t.Logf("instances %s (a) and %s (b); their reports: %v (%v)", a.opts.InstanceID, b.opts.InstanceID, rep, err)
		high := map[string]int64{}
		for rid := range acceptedBefore {
			k, n, ok := inventory.ParseReservationID(rid)
			if !ok {
				continue
			}
			issuer := rid[strings.LastIndex(rid, ".")+1:]
			if dash := strings.LastIndex(issuer, "-"); dash > 0 {
				issuer = issuer[:dash]
			}
			f := fmt.Sprintf("%d:%d:%s", k.Epoch, k.Shard, issuer)
			high[f] = max(high[f], n)
		}
		t.Logf("the highest number answered 202 per epoch:shard:issuer: %v", high)
	}
	for rid := range listed {
		if !wantLost[rid] {
			extra++
		}
	}
	if extra > outcomeUnknownAtKill {
		t.Errorf("the restore lists %d reservations the crowd never saw accepted, more than its %d OUTCOME_UNKNOWN answers", extra, outcomeUnknownAtKill)
	}
	t.Logf("lost 202s: the crowd counted %d, the restore listed %d (%d beyond, of %d OUTCOME_UNKNOWN)", len(wantLost), len(listed), extra, outcomeUnknownAtKill)
	// The reconciliation names them too, and the metric counts them.
	waitDriftZeroOrLost(t, a, id, len(listed))

	// After the restore the crowd finished: exactly the stock sold, nobody over the limit,
	// no id handed out twice (drillRush counts DUPLICATE_RID), every order a reservation the
	// crowd saw for that user.
	waitOrders(t, id, stock, 1)
	orders := ordersOf(t, id)
	for rid, u := range orders {
		if got, ok := res.accepted[rid]; !ok || got != u {
			t.Errorf("order %s of %s: the crowd saw %q", rid, u, got)
		}
		if _, before := acceptedBefore[rid]; !before {
			if k, _, ok := inventory.ParseReservationID(rid); !ok || k.Epoch < inventory.IncarnationEpochs {
				t.Errorf("reservation %s made after the restore is not of the new incarnation", rid)
			}
		}
	}
	ordered := map[string]bool{}
	for rid := range orders {
		ordered[numberOf(t, rid)] = true
	}
	for num := range listed {
		if ordered[num] {
			t.Errorf("reservation %s listed as lost has an order", num)
		}
	}
}

// numberOf is the reservation number of id rid (inventory.ReservationNumber).
func numberOf(t *testing.T, rid string) string {
	t.Helper()
	k, n, ok := inventory.ParseReservationID(rid)
	if !ok {
		t.Fatalf("reservation id %q does not parse", rid)
	}
	return inventory.ReservationNumber(k.Activity, k.Epoch, k.Shard, n)
}

// restoreAndWait starts the restore of the activity (POST: 202, a job) and waits for the job
// to end; the answer is the job's report (status 200) or its error (the status and code the
// job failed with).
func restoreAndWait(t *testing.T, ta *testApp, id string) answer {
	t.Helper()
	path := "/admin/v1/activities/" + id + "/restore"
	if a := ta.admin(t, "POST", path, ""); a.status != http.StatusAccepted {
		return a
	}
	var last answer
	testwait.Eventually(t, 6*time.Minute, func() bool {
		last = ta.admin(t, "GET", path, "")
		return last.status != http.StatusOK || last.body["state"] != "RUNNING"
	}, "the restore of %s done (last: %v)", id, testwait.Lazy(func() string { return fmt.Sprint(last.status, last.body) }))
	if last.status != http.StatusOK {
		return last
	}
	if rep, ok := last.body["report"].(map[string]any); ok && last.body["state"] == "DONE" {
		return answer{status: http.StatusOK, header: last.header, body: rep}
	}
	e, _ := last.body["error"].(map[string]any)
	st, _ := e["status"].(float64)
	return answer{status: int(st), header: last.header, body: e}
}

// waitDriftZeroOrLost waits for the reconciliation at zero drift and checks that it lists
// lost reservations and the metric counts them.
func waitDriftZeroOrLost(t *testing.T, ta *testApp, id string, lost int) {
	t.Helper()
	body := waitDriftZero(t, ta, id)
	l, _ := body["lost"].(map[string]any)
	if l == nil || l["count"] != float64(lost) {
		t.Errorf("reconciliation lost %v, want count %d", body["lost"], lost)
	}
	want := fmt.Sprintf(`seckill_order_lost_reservations{activity=%q} %d`, id, lost)
	if !strings.Contains(metricsText(t, ta), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// oldOrders reads the activity's orders of the first incarnation (reservation ids of an
// epoch below inventory.IncarnationEpochs) from MySQL: reservation id -> user, and the units
// they hold.
func oldOrders(db *gorm.DB, activity string) (map[string]string, int, error) {
	rows, err := db.Raw("SELECT reservation_id, user_id, quantity FROM orders WHERE activity_id = ?", activity).Rows()
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out, units := map[string]string{}, 0
	for rows.Next() {
		var rid, u string
		var q int
		if err := rows.Scan(&rid, &u, &q); err != nil {
			return nil, 0, err
		}
		if k, _, ok := inventory.ParseReservationID(rid); ok && inventory.Incarnation(k.Epoch) == 0 {
			out[rid] = u
			units += q
		}
	}
	return out, units, rows.Err()
}

func containsAny(xs []any, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
