//go:build integration

package app

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// MySQL is the last word on what was sold: when Redis's state of a running sale is put back
// (a Redis that lost its last writes, an operator's mistake), Redis answers 202 to
// reservations the stock or the per-user limit does not allow, and the writer must not turn
// them into orders. It refuses them instead: a compensations row whose reason starts with
// "refused", the reservation FAILED with code REFUSED, the activity fenced (RECOVERING) and
// seckill_orders_refused_total counting them.
//
// Two put-backs, each on an activity of stock 20, per-user limit 1, one shard:
//   - stock: 10 users buy, their orders land, the shard's stock is set back to 20, 20 new
//     users reserve (today: 30 orders for a stock of 20);
//   - limit: 10 users buy, their orders land, their held-unit counts in the shard's users
//     hash are set back to 0 (their sequences left alone), the same 10 reserve again (today:
//     a second order each against a limit of 1).
//
// Each runs on MariaDB and on the embedded SQLite (with the real Redis, and fully embedded).
func TestMySQLGuard(t *testing.T) {
	t.Parallel() // with the drills (see drills_test.go): exact counts from MySQL, no latency
	backends := []struct {
		name string
		opts func(t *testing.T) Options
	}{
		{"mariadb", func(t *testing.T) Options { return realOptions(t) }},
		{"sqlite", func(t *testing.T) Options {
			testsvc.Redis(t)
			return Options{RedisAddr: testsvc.RedisAddr} // MySQLDSN "": the embedded SQLite
		}},
		{"embedded", func(t *testing.T) Options { return Options{} }}, // miniredis and SQLite
	}
	// Each scenario has its own activity, instance and (for the failover) Redis servers, and
	// mostly waits for orders to land: they run side by side.
	for _, b := range backends {
		t.Run(b.name+"/stock", func(t *testing.T) { t.Parallel(); mysqlGuardDrill(t, b.opts(t), guardStock) })
		t.Run(b.name+"/limit", func(t *testing.T) { t.Parallel(); mysqlGuardDrill(t, b.opts(t), guardLimit) })
	}
	// The failover restarts the process: the embedded SQLite lives as long as its process, so
	// only MariaDB outlives it (the SQLite guard is the one stock and limit run above).
	t.Run("mariadb/failover", func(t *testing.T) { t.Parallel(); mysqlGuardDrill(t, realOptions(t), guardFailover) })
}

type guardScenario int

const (
	guardStock guardScenario = iota // the shard's stock set back to the activity's stock
	guardLimit                      // the buyers' held-unit counts set back to 0
	// a failover to a replica that stopped following before the sales, with the api process
	// restarted across it (issue 42's shape of the default mode: the relay published orders
	// whose Redis state the failover takes back, and no floor survives the process)
	guardFailover
)

const (
	guardStockUnits = 20
	guardPerUser    = 1
	guardFirst      = 10 // buyers before the put-back
)

// guardAccepted is a reservation the instance answered 202.
type guardAccepted struct {
	rid, user string
}

func mysqlGuardDrill(t *testing.T, opts Options, sc guardScenario) {
	ctx := context.Background()
	var replica *redis.Client
	if sc == guardFailover {
		master := testsvc.PrivateRedis(t)
		_, port, _ := strings.Cut(master, ":")
		addr := testsvc.PrivateRedis(t, "--replicaof", "127.0.0.1", port)
		replica = redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { replica.Close() })
		opts.RedisAddr = master
		opts.Namespace = fmt.Sprintf("t%d", time.Now().UnixNano()) // the restarted process's too
	}
	ta := startApp(t, opts, testConfig)
	reason := "stock" // the label of seckill_orders_refused_total
	if sc == guardLimit {
		reason = "limit"
	}
	id := uniq(t, "guard"+reason)
	ta.createActivity(t, id, guardStockUnits, guardPerUser, 1, time.Now().Add(-time.Second))
	if sc == guardFailover {
		// The replica holds the activity as created, then stops following: it lags by every
		// sale from here on.
		testwait.Eventually(t, 30*time.Second, func() bool {
			n, err := replica.Exists(ctx, inventory.Meta(id), inventory.Shard(id, 0, 0).Stock()).Result()
			return err == nil && n == 2
		}, "the replica holds activity %s", id)
		if err := replica.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
			t.Fatalf("setup: stop the replica: %v", err)
		}
	}

	var accepted []guardAccepted
	first := make([]string, guardFirst)
	for i := range first {
		first[i] = fmt.Sprintf("%s-u%d", id, i)
		r := ta.reserve(t, id, first[i], "")
		if r.status != http.StatusAccepted {
			t.Fatalf("setup: reserve %s before the put-back: %d %v", first[i], r.status, r.body)
		}
		accepted = append(accepted, guardAccepted{rid: r.body["reservationId"].(string), user: first[i]})
	}
	testwait.Eventually(t, 30*time.Second, func() bool {
		return guardCount(t, ta, "SELECT COUNT(*) FROM orders WHERE activity_id = ?", id) == guardFirst
	}, "setup: the %d orders before the put-back in the database", guardFirst)

	// The put-back: Redis as it was before (some of) its last writes.
	epoch, err := ta.rdb.HGet(ctx, inventory.Meta(id), "epoch").Int()
	if err != nil {
		t.Fatalf("setup: epoch of %s: %v", id, err)
	}
	shard := inventory.Shard(id, epoch, 0)
	var again []string // who reserves after the put-back
	switch sc {
	case guardFailover:
		// The api process stops; the replica is promoted; a new process (no number handed
		// out, no floor) starts on it.
		ta.cancel()
		ta.done <- <-ta.done // its cleanup waits on done too
		opts.RedisAddr = replica.Options().Addr
		opts.InstanceID = ""
		ta = startApp(t, opts, testConfig)
		for i := 0; i < guardStockUnits; i++ {
			again = append(again, fmt.Sprintf("%s-n%d", id, i))
		}
	case guardStock:
		if err := ta.rdb.Set(ctx, shard.Stock(), guardStockUnits, 0).Err(); err != nil {
			t.Fatalf("setup: put the stock back: %v", err)
		}
		for i := 0; i < guardStockUnits; i++ {
			again = append(again, fmt.Sprintf("%s-n%d", id, i))
		}
	case guardLimit:
		// The users hash: "<uh>" the user's state "<held>|<seq>|<last>|<limits>"
		// (inventory/user.go). Only the held counts go back.
		fields, err := ta.rdb.HGetAll(ctx, shard.Users()).Result()
		if err != nil {
			t.Fatalf("setup: read %s: %v", shard.Users(), err)
		}
		held := 0
		for f, v := range fields {
			if inventory.ValidUserHash(f) {
				u, ok := inventory.ParseUserState(v)
				if !ok || u.Held != 1 {
					t.Fatalf("setup: %s %s holds %q, want 1 unit", shard.Users(), f, v)
				}
				u.Held = 0
				if err := ta.rdb.HSet(ctx, shard.Users(), f, u.String()).Err(); err != nil {
					t.Fatalf("setup: put %s %s back: %v", shard.Users(), f, err)
				}
				held++
			}
		}
		if held != guardFirst {
			t.Fatalf("setup: %s has %d held-unit counts, want %d: %v", shard.Users(), held, guardFirst, fields)
		}
		again = first
	}

	// After the put-back, all at once (a fence the writer sets may stop some of them).
	answers := make([]answer, len(again))
	errs := make([]error, len(again))
	var wg sync.WaitGroup
	for i, u := range again {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = ta.try("POST", "/api/v1/activities/"+id+"/reservations", map[string]string{"X-User-Id": u}, "")
		}()
	}
	wg.Wait()
	n202 := 0
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("reserve %s after the put-back: %v", again[i], errs[i])
		}
		code, _ := a.body["code"].(string)
		switch {
		case a.status == http.StatusAccepted:
			accepted = append(accepted, guardAccepted{rid: a.body["reservationId"].(string), user: again[i]})
			n202++
		case a.status == http.StatusServiceUnavailable && code == CodeRecovering,
			code == admission.CodeSoldOut, code == admission.CodeAlreadyPurchased:
		default:
			t.Errorf("reserve %s after the put-back: %d %v, want 202 or a refusal", again[i], a.status, a.body)
		}
	}
	t.Logf("after the put-back: %d of %d reservations answered 202", n202, len(again))

	guardSettle(t, ta, id, accepted)

	// The refused reservations read FAILED, code REFUSED.
	refused := guardRefused(t, ta, id)
	users := map[string]string{}
	for _, a := range accepted {
		users[a.rid] = a.user
	}
	for rid := range refused {
		var got answer
		testwait.Eventually(t, 10*time.Second, func() bool {
			got = ta.do(t, "GET", "/api/v1/reservations/"+rid, map[string]string{"X-User-Id": users[rid]}, "")
			return got.status == http.StatusOK && got.body["status"] == "FAILED" && got.body["code"] == "REFUSED"
		}, "refused reservation %s FAILED with code REFUSED (last %v)", rid,
			testwait.Lazy(func() string { return fmt.Sprint(got.status, got.body) }))
	}

	// The writer's refusals are counted by reason.
	series := fmt.Sprintf("seckill_orders_refused_total{activity=%q,reason=%q}", id, reason)
	if got := scrapeSum(t, ta, series); got != float64(len(refused)) {
		t.Errorf("%s = %v, want %d (the refused compensations)", series, got, len(refused))
	}

	// The activity is fenced: a new user is answered RECOVERING. A 202 before the fence is
	// one more reservation to account for.
	var last answer
	fresh := 0
	testwait.Eventually(t, 5*time.Second, func() bool {
		fresh++
		u := fmt.Sprintf("%s-f%d", id, fresh)
		r, err := ta.try("POST", "/api/v1/activities/"+id+"/reservations", map[string]string{"X-User-Id": u}, "")
		if err != nil {
			t.Fatalf("reserve %s: %v", u, err)
		}
		last = r
		if r.status == http.StatusAccepted {
			accepted = append(accepted, guardAccepted{rid: r.body["reservationId"].(string), user: u})
		}
		return r.status == http.StatusServiceUnavailable && r.body["code"] == CodeRecovering
	}, "activity %s fenced after the put-back: a new user answered 503 %s (last %v)", id, CodeRecovering,
		testwait.Lazy(func() string { return fmt.Sprint(last.status, last.body) }))
	guardSettle(t, ta, id, accepted)

	// The operator restores it from MySQL: the report lists the refusals with their buyers,
	// and the activity sells what MySQL says is left.
	refused = guardRefused(t, ta, id)
	units := guardCount(t, ta, "SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE activity_id = ?", id)
	if sold := guardCount(t, ta, "SELECT sold FROM activities WHERE id = ?", id); sold != units {
		t.Errorf("activities.sold %d, the orders hold %d units", sold, units)
	}
	path := "/admin/v1/activities/" + id + "/restore"
	if a := ta.admin(t, "POST", path, ""); a.status != http.StatusAccepted {
		t.Fatalf("POST restore: %d %v", a.status, a.body)
	}
	job := waitRestoreJob(t, ta, path)
	rep, _ := job.body["report"].(map[string]any)
	ref, _ := rep["refused"].(map[string]any)
	list, _ := ref["reservations"].([]any)
	if job.body["state"] != "DONE" || rep["sold"] != float64(units) || rep["remaining"] != float64(guardStockUnits-units) ||
		ref["count"] != float64(len(refused)) || len(list) != len(refused) {
		t.Fatalf("restore job: %v, want DONE with sold %d, remaining %d and the %d refusals listed", job.body, units, guardStockUnits-units, len(refused))
	}
	for _, x := range list {
		r, _ := x.(map[string]any)
		rid, _ := r["reservationId"].(string)
		if refused[rid] == "" || r["userId"] != users[rid] || r["reason"] != reason {
			t.Errorf("restore report lists %v: want a refused reservation with its buyer %q and reason %q", r, users[rid], reason)
		}
	}
	want, wantCode := http.StatusAccepted, ""
	if units == guardStockUnits {
		want, wantCode = http.StatusGone, admission.CodeSoldOut
	}
	if a := ta.reserve(t, id, id+"-after", ""); a.status != want || wantCode != "" && a.body["code"] != wantCode {
		t.Fatalf("reserve after the restore: %d %v, want %d %s", a.status, a.body, want, wantCode)
	}
}

// guardSettle waits until the writer handled every reservation answered 202 (an order, or a
// compensation refused), then checks the database against stock and limit, and each 202's
// outcome against what a writer that refuses exactly the excess makes of them.
func guardSettle(t *testing.T, ta *testApp, id string, accepted []guardAccepted) {
	t.Helper()
	var orders, refusedN int
	testwait.Eventually(t, 30*time.Second, func() bool {
		orders = guardCount(t, ta, "SELECT COUNT(*) FROM orders WHERE activity_id = ?", id)
		refusedN = guardCount(t, ta, "SELECT COUNT(*) FROM compensations WHERE activity_id = ? AND reason LIKE 'refused%'", id)
		return orders+refusedN == len(accepted)
	}, "the writer handled all %d reservations answered 202 (orders %v + refused compensations %v)", len(accepted),
		testwait.Lazy(func() string { return strconv.Itoa(orders) }), testwait.Lazy(func() string { return strconv.Itoa(refusedN) }))

	units := guardCount(t, ta, "SELECT COALESCE(SUM(quantity), 0) FROM orders WHERE activity_id = ?", id)
	if units > guardStockUnits {
		t.Errorf("MySQL holds %d units of activity %s, more than its stock %d (%d reservations answered 202)",
			units, id, guardStockUnits, len(accepted))
	}
	var over []struct {
		UserID string
		Units  int
	}
	if err := ta.db.Raw("SELECT user_id, SUM(quantity) AS units FROM orders WHERE activity_id = ? GROUP BY user_id HAVING SUM(quantity) > ?",
		id, guardPerUser).Scan(&over).Error; err != nil {
		t.Fatalf("read units by user: %v", err)
	}
	if len(over) > 0 {
		t.Errorf("MySQL holds more than the per-user limit %d for %d users of activity %s: %+v", guardPerUser, len(over), id, over)
	}

	// Every 202 is an order or a refusal, never both; a writer that refuses exactly what the
	// stock and the limit do not allow refuses as many as this count (quantity 1 each).
	ordered := map[string]bool{}
	var rids []string
	if err := ta.db.Raw("SELECT reservation_id FROM orders WHERE activity_id = ?", id).Scan(&rids).Error; err != nil {
		t.Fatalf("read orders: %v", err)
	}
	for _, r := range rids {
		ordered[r] = true
	}
	refused := guardRefused(t, ta, id)
	var missing, both []string
	byUser := map[string]int{}
	sold, wantRefused := 0, 0
	for _, a := range accepted {
		switch {
		case ordered[a.rid] && refused[a.rid] != "":
			both = append(both, a.rid)
		case !ordered[a.rid] && refused[a.rid] == "":
			missing = append(missing, a.rid)
		}
		if sold+1 > guardStockUnits || byUser[a.user]+1 > guardPerUser {
			wantRefused++
			continue
		}
		sold++
		byUser[a.user]++
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(both) > 0 {
		t.Errorf("reservations answered 202 with neither an order nor a refusal: %v; with both: %v", missing, both)
	}
	if len(refused) != wantRefused {
		t.Errorf("%d reservations of activity %s refused (%v), want %d: the %d answered 202 beyond stock %d or per-user limit %d",
			len(refused), id, refused, wantRefused, wantRefused, guardStockUnits, guardPerUser)
	}
}

// guardRefused reads the activity's refused compensations: reservation id -> reason.
func guardRefused(t *testing.T, ta *testApp, id string) map[string]string {
	t.Helper()
	var rows []struct {
		ReservationID string
		Reason        string
	}
	if err := ta.db.Raw("SELECT reservation_id, reason FROM compensations WHERE activity_id = ? AND reason LIKE 'refused%'", id).
		Scan(&rows).Error; err != nil {
		t.Fatalf("read compensations: %v", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ReservationID] = r.Reason
	}
	return out
}

func guardCount(t *testing.T, ta *testApp, query string, args ...any) int {
	t.Helper()
	var n int
	if err := ta.db.Raw(query, args...).Row().Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
