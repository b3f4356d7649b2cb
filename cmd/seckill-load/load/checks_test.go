package load

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	_ "github.com/glebarez/go-sqlite"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
)

// ordersDB is an SQLite stand-in for the orders schema of sql/001_schema.sql (only the
// columns the checks read). The unique keys are left out so that tests can plant the
// duplicates the checks must find.
func ordersDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE activities (id TEXT PRIMARY KEY, stock INTEGER, per_user_limit INTEGER)`,
		`CREATE TABLE orders (id INTEGER PRIMARY KEY, reservation_id TEXT, activity_id TEXT, user_id TEXT, quantity INTEGER)`,
		`CREATE TABLE compensations (id INTEGER PRIMARY KEY, reservation_id TEXT, activity_id TEXT, user_id TEXT, quantity INTEGER)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// shardKey is a stock shard's key as docs/DESIGN.md gives it: sk:{<activity>:<epoch>:<shard>}:<what>.
func shardKey(activity string, epoch, shard int, what string) string {
	return fmt.Sprintf("sk:{%s:%d:%d}:%s", activity, epoch, shard, what)
}

type reservation struct {
	rid, user string
	qty       int
}

// writer plays the order writer: it turns reservations into orders after a delay, so the
// checks must wait for it to drain. fail decides which become compensations instead, drop
// which are lost.
type writer struct {
	db         *sql.DB
	in         chan reservation
	wg         sync.WaitGroup
	fail, drop func(n int) bool
	pace       time.Duration // between two rows: a writer slower than the checks' polls
}

func startWriter(t *testing.T, db *sql.DB, f *fake) *writer {
	w := &writer{db: db, in: make(chan reservation, 10000),
		fail: func(int) bool { return false }, drop: func(int) bool { return false }}
	f.onReserve = func(rid, user string, qty int) { w.in <- reservation{rid, user, qty} }
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		time.Sleep(150 * time.Millisecond)
		n := 0
		for r := range w.in {
			n++
			time.Sleep(w.pace) // the writer's speed under test, not a wait for an outcome
			table := "orders"
			switch {
			case w.drop(n):
				continue
			case w.fail(n):
				table = "compensations"
			}
			if _, err := db.Exec("INSERT INTO "+table+" (reservation_id, activity_id, user_id, quantity) VALUES (?, ?, ?, ?)",
				r.rid, "flash-1", r.user, r.qty); err != nil {
				t.Errorf("insert: %v", err)
			}
		}
	}()
	t.Cleanup(func() { close(w.in); w.wg.Wait() })
	return w
}

func TestOrderChecksPassWhenTheWriterDrains(t *testing.T) {
	db := ordersDB(t)
	// Stock and limit come from the activities row, as they would from MySQL.
	if _, err := db.Exec("INSERT INTO activities VALUES ('flash-1', 20, 1)"); err != nil {
		t.Fatal(err)
	}
	f := newFake(20, 1)
	// No sell-out, so the poller gets no remaining 0 to wait for: the fake holds the rush
	// until the poller has had an answer (a loaded machine let a rush end before the first
	// answer: remaining.never_negative had nothing to judge, 2 of 20 runs under a CPU hog).
	f.holdUntilPolled = true
	w := startWriter(t, db, f)
	w.fail = func(n int) bool { return n == 3 } // one reservation fails for good
	srv := f.serve(t)
	// 15 users for a stock of 20: no sell-out, every user reserves.
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 15, Connections: 8, OrdersDB: db,
		DrainTimeout: 10 * time.Second, PollEvery: 10 * time.Millisecond})
	if rep.Config.Stock != 20 || rep.Config.PerUserLimit != 1 {
		t.Fatalf("stock %d limit %d, want them read from activities", rep.Config.Stock, rep.Config.PerUserLimit)
	}
	for _, name := range []string{"mysql.orders_match_reservations", "mysql.stock", "mysql.per_user_limit",
		"mysql.duplicate_reservation", "client.stock", "client.per_user_limit"} {
		wantCheck(t, rep, name, report.Pass)
	}
	if rep.Orders.Count != 14 || rep.Orders.Compensations != 1 || rep.Orders.Units != 14 {
		t.Fatalf("orders %+v, want 14 orders and 1 compensation", rep.Orders)
	}
	if _, ok := rep.Check("mysql.sold_exactly_stock"); ok {
		t.Fatal("sold_exactly_stock judged without a sell-out")
	}
	if !rep.Passed {
		t.Fatalf("failed: %+v", rep.Checks)
	}
}

func TestOrderChecksFindLostAndDuplicateOrders(t *testing.T) {
	t.Run("lost", func(t *testing.T) {
		db := ordersDB(t)
		f := newFake(10, 1)
		w := startWriter(t, db, f)
		w.drop = func(n int) bool { return n == 5 }
		srv := f.serve(t)
		rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 20, Connections: 4, OrdersDB: db,
			Stock: 10, PerUserLimit: 1, DrainTimeout: 500 * time.Millisecond, PollEvery: -1})
		wantCheck(t, rep, "mysql.orders_match_reservations", report.Fail)
		if rep.Passed {
			t.Fatal("passed with a lost order")
		}
	})
	t.Run("duplicate and over the limit", func(t *testing.T) {
		db := ordersDB(t)
		f := newFake(10, 1)
		// A slow writer: the two planted rows below bring the count of orders to the
		// reservations' while two of them are still unwritten. The checks wait for every
		// reservation's order (before, they judged then: 10 units for a stock of 10, PASS;
		// a loaded machine's writer did the same, 1 of 20 runs under a CPU hog).
		w := startWriter(t, db, f)
		w.pace = 150 * time.Millisecond
		srv := f.serve(t)
		// Rows no reservation of this run explains: a second order for one reservation id,
		// and a user with two units against a limit of 1.
		for _, q := range []string{
			"INSERT INTO orders (reservation_id, activity_id, user_id, quantity) VALUES ('x.0.0.1', 'flash-1', 'u-a', 1)",
			"INSERT INTO orders (reservation_id, activity_id, user_id, quantity) VALUES ('x.0.0.1', 'flash-1', 'u-a', 1)",
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 20, Connections: 4, OrdersDB: db,
			Stock: 10, PerUserLimit: 1, DrainTimeout: 30 * time.Second, PollEvery: -1})
		wantCheck(t, rep, "mysql.duplicate_reservation", report.Fail)
		wantCheck(t, rep, "mysql.per_user_limit", report.Fail)
		wantCheck(t, rep, "mysql.stock", report.Fail) // 12 units for a stock of 10
		wantCheck(t, rep, "mysql.orders_match_reservations", report.Fail)
	})
}

func TestOrderChecksExactSellOut(t *testing.T) {
	db := ordersDB(t)
	f := newFake(15, 1)
	startWriter(t, db, f)
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 40, Connections: 8, OrdersDB: db,
		Stock: 15, PerUserLimit: 1, DrainTimeout: 10 * time.Second, PollEvery: 10 * time.Millisecond})
	wantCheck(t, rep, "mysql.sold_exactly_stock", report.Pass)
	wantCheck(t, rep, "mysql.orders_match_reservations", report.Pass)
	if rep.Orders.Count != 15 || !rep.Passed {
		t.Fatalf("orders %d passed %v: %+v", rep.Orders.Count, rep.Passed, rep.Checks)
	}
}

func TestRedisShardChecks(t *testing.T) {
	tests := []struct {
		name   string
		stocks []string // shard stock values of epoch 1 ("" = key missing)
		taken  []string
		want   map[string]string
	}{
		{"healthy", []string{"0", "0", ""}, []string{"3", "2", "0"},
			map[string]string{"redis.shards_never_negative": report.Pass, "redis.taken_le_stock": report.Pass}},
		{"negative shard", []string{"0", "-1", ""}, []string{"3", "3", "0"},
			map[string]string{"redis.shards_never_negative": report.Fail, "redis.taken_le_stock": report.Fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mr := miniredis.RunT(t)
			// Epoch 0 had 2 shards, epoch 1 has 3 (layout in meta, as docs/DESIGN.md says).
			mr.HSet("sk:{flash-1}:meta", "stock", "5", "perUserLimit", "1", "layouts", "0:2,1:3", "epoch", "1", "shards", "3")
			mr.Set("sk:{flash-1:0:0}:stock", "0")
			for i, v := range tt.stocks {
				if v != "" {
					mr.Set(shardKey("flash-1", 1, i, "stock"), v)
				}
				mr.HSet(shardKey("flash-1", 1, i, "stats"), "taken", tt.taken[i])
			}
			rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
			t.Cleanup(func() { rdb.Close() })

			f := newFake(5, 1)
			srv := f.serve(t)
			rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 10, Connections: 2, Redis: rdb, PollEvery: 10 * time.Millisecond})
			if rep.Config.Stock != 5 || rep.Config.PerUserLimit != 1 {
				t.Fatalf("stock %d limit %d, want them read from Redis meta", rep.Config.Stock, rep.Config.PerUserLimit)
			}
			for name, want := range tt.want {
				wantCheck(t, rep, name, want)
			}
		})
	}
}

func TestRedisChecksSkipUnknownActivity(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	f := newFake(1, 1)
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 2, Redis: rdb, Stock: 1, PerUserLimit: 1, PollEvery: -1})
	wantCheck(t, rep, "redis.shards_never_negative", report.Skip)
}

func TestUnresolvedAttemptsWidenTheOrderCheck(t *testing.T) {
	db := ordersDB(t)
	f := newFake(100, 1)
	f.dropFirst, f.reserveThenDrop = true, true
	startWriter(t, db, f)
	srv := f.serve(t)
	// Without retries the users never learn that their dropped request reserved: the orders
	// exceed what the tool knows by at most the unresolved attempts, which is not a failure.
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 10, Connections: 4, Retry: false, OrdersDB: db,
		Stock: 100, PerUserLimit: 1, DrainTimeout: 2 * time.Second, PollEvery: -1})
	if rep.Reservations.Distinct != 0 || rep.Reservations.UnresolvedAttempts != 10 {
		t.Fatalf("reservations %+v, want 0 known and 10 unresolved", rep.Reservations)
	}
	wantCheck(t, rep, "mysql.orders_match_reservations", report.Pass)
	if rep.Orders.Count != 10 {
		t.Fatalf("orders %d, want 10", rep.Orders.Count)
	}
}

func TestRefusedConnectionsAreNotUnresolved(t *testing.T) {
	srv := newFake(1, 1).serve(t)
	url := srv.URL
	srv.Close() // nothing listens there any more
	// The readiness check before the rush would stop the run (TestDeadOrUnreadyTargetStopsTheRun):
	// answer it here, so the rush itself meets the refused connections.
	rep := run(t, scenario.Config{Targets: []string{url}, Users: 3, Connections: 3, Retry: false, PollEvery: -1, Transport: readyThen{http.DefaultTransport}})
	if rep.OutcomeCount(0, "refused") != 3 || rep.Reservations.UnresolvedAttempts != 0 {
		t.Fatalf("outcomes %+v, unresolved %d; want 3 refused, 0 unresolved", rep.Outcomes, rep.Reservations.UnresolvedAttempts)
	}
}

// reconFake serves the fake's reservation API and the admin endpoints a run without MySQL
// reads: the create, the sale report and the reconciliation, whose orders are those of an
// earlier run (before) plus what the fake sold, less lose, reaching the database only at the
// third reading after the rush began (the writer drains the journal meanwhile); the sale
// report's second reading (the first after the rush) misses the last accepted reservation
// (the counts' flush lag).
func reconFake(t *testing.T, f *fake, stock, before, lose int64) *httptest.Server {
	var mu sync.Mutex
	reads := 0
	mux := http.NewServeMux()
	mux.Handle("/", f.handler())
	mux.HandleFunc("POST /admin/v1/activities", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{})
	})
	mux.HandleFunc("GET /admin/v1/activities/{id}/reconciliation", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reads++
		n := reads
		mu.Unlock()
		f.mu.Lock()
		sold := stock - f.stock
		f.mu.Unlock()
		orders, pending, drift := before+sold, int64(0), int64(0)
		switch {
		case n > 1 && n < 4 && sold > 0: // the first reading is the baseline
			orders, pending = before, sold
		case sold > 0:
			orders, drift = orders-lose, lose
		}
		writeJSON(w, 200, map[string]any{"stock": stock + before, "redisRemaining": stock - sold, "journalPending": pending,
			"inFlight": 0, "ordersInDb": orders, "compensated": 0, "drift": drift, "lost": map[string]any{"count": 0}})
	})
	reports := 0
	mux.HandleFunc("GET /admin/v1/activities/{id}/report", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reports++
		lag := reports == 2 // after the rush, the last flush of the counts (every countsLagMs) not in yet
		mu.Unlock()
		f.mu.Lock()
		sold := stock - f.stock
		f.mu.Unlock()
		if lag && sold > 0 {
			sold--
		}
		writeJSON(w, 200, map[string]any{"answers": map[string]any{"accepted": sold}, "countsLagMs": 250})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestOrderChecksThroughTheReconciliation: without --mysql-dsn but with the admin token (the
// embedded mode, whose SQLite the tool cannot read), the orders are checked through the
// service's reconciliation instead of skipped: what this run added (an earlier run's orders
// are the baseline), once the journal drained, must match the units reserved.
func TestOrderChecksThroughTheReconciliation(t *testing.T) {
	for _, tt := range []struct {
		name string
		lose int64
		want string
	}{
		{"drained", 0, report.Pass},
		{"an order lost", 1, report.Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(20, 1)
			srv := reconFake(t, f, 20, 7, tt.lose)
			rep := run(t, scenario.Config{Targets: []string{srv.URL}, AdminURL: srv.URL, Create: true, AdminToken: "s3cret",
				Stock: 20, PerUserLimit: 1, Users: 30, Connections: 4, PollEvery: -1, DrainTimeout: 2 * time.Second})
			wantCheck(t, rep, "service.orders_match_reservations", tt.want)
			wantCheck(t, rep, "sale report", report.Pass)
			if _, ok := rep.Check("mysql.orders_match_reservations"); ok {
				t.Errorf("the MySQL order check is reported although the reconciliation stood in: %+v", rep.Checks)
			}
			c, _ := rep.Check("service.orders_match_reservations")
			if want := fmt.Sprintf("%d units ordered or compensated by this run for 20 reserved", 20-tt.lose); !strings.Contains(c.Detail, want) {
				t.Errorf("detail %q lacks %q", c.Detail, want)
			}
		})
	}
}

// TestSecondRunComparesWhatItAdded: a second run against an activity an earlier run sold part
// of (re-posted by --create, 200) compares what it added with what it got: the orders over
// the reconciliation read before its rush, the accepted count over the sale report read
// before its rush (it failed at 299 counted against 100 got before).
func TestSecondRunComparesWhatItAdded(t *testing.T) {
	f := newFake(30, 1)
	srv := reconFake(t, f, 30, 0, 0)
	for i := 0; i < 2; i++ {
		rep := run(t, scenario.Config{Targets: []string{srv.URL}, AdminURL: srv.URL, Create: true, AdminToken: "s3cret",
			Stock: 30, PerUserLimit: 1, Users: 10, Connections: 4, PollEvery: -1, RunID: fmt.Sprintf("run%d", i)})
		wantCheck(t, rep, "service.orders_match_reservations", report.Pass)
		wantCheck(t, rep, "sale report", report.Pass)
		if c, _ := rep.Check("sale report"); !strings.Contains(c.Detail, "counted 10 accepted reservations during the run, the tool got 10") {
			t.Errorf("run %d: sale report %q", i+1, c.Detail)
		}
	}
}
