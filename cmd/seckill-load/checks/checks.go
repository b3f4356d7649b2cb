// Package checks holds the load tool's invariant checks (docs/API.md, "Invariants"): those it
// can make from what the rush saw at the client (no unit over the stock, no user over the
// limit, no reservation id twice, the protocol's Retry-After and reservation ids, remaining
// never negative), and the exactness checks it makes on its own against MySQL (every
// reservation an order or a compensation, no order twice, no user over the limit) and Redis
// (no stock shard below zero, no more taken than the stock). It reads MySQL and Redis
// directly, not through the service.
package checks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	// The MySQL driver for the independent order checks.
	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/cmd/seckill-load/driver"
	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
	"github.com/seckill/seckill/internal/keyspace"
)

// Checkers holds the connections of the independent checks. Open it, Close it when done.
type Checkers struct {
	db       *sql.DB
	ownDB    bool
	redis    redis.UniversalClient
	ownRedis bool
	cfg      scenario.Config

	// Without MySQL, the orders are checked through the service's reconciliation (recon,
	// from UseReconciliation): base is its reading before the rush, baseErr why there is none.
	recon   func(context.Context) (driver.Reconciliation, error)
	base    driver.Reconciliation
	baseErr error
}

// UseReconciliation makes the order check, when no MySQL is given, read the service's
// reconciliation with read: before the rush (Baseline) and after it, until the journal is
// drained. The check compares the orders and compensations the rush added with the units it
// reserved, and wants zero drift and no lost reservation added.
func (c *Checkers) UseReconciliation(read func(context.Context) (driver.Reconciliation, error)) {
	if c.db == nil {
		c.recon = read
	}
}

// Baseline reads the reconciliation before the rush (after the activity was created), so a
// second run against the same activity compares only what it added.
func (c *Checkers) Baseline(ctx context.Context) {
	if c.recon != nil {
		c.base, c.baseErr = c.recon(ctx)
	}
}

// Open connects to the MySQL and Redis the scenario names (OrdersDB and Redis are used as
// they are, MySQLDSN and RedisAddr are dialled and pinged); a check without its store is
// skipped.
func Open(ctx context.Context, cfg scenario.Config) (*Checkers, error) {
	c := &Checkers{cfg: cfg, db: cfg.OrdersDB, redis: cfg.Redis}
	if c.db == nil && cfg.MySQLDSN != "" {
		db, err := sql.Open("mysql", cfg.MySQLDSN)
		if err != nil {
			return nil, fmt.Errorf("mysql: %w", err)
		}
		db.SetMaxOpenConns(2)
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := db.PingContext(pctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("mysql: %w", err)
		}
		c.db, c.ownDB = db, true
	}
	if c.redis == nil && cfg.RedisAddr != "" {
		c.redis = redis.NewUniversalClient(&redis.UniversalOptions{
			Addrs:           strings.Split(cfg.RedisAddr, ","),
			DisableIdentity: true,
			IsClusterMode:   strings.Contains(cfg.RedisAddr, ","),
		})
		c.ownRedis = true
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.redis.Ping(pctx).Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("redis: %w", err)
		}
	}
	return c, nil
}

// Close closes the connections Open made.
func (c *Checkers) Close() {
	if c.ownDB && c.db != nil {
		c.db.Close()
	}
	if c.ownRedis && c.redis != nil {
		c.redis.Close()
	}
}

// SampleShards reads the stock shards once and returns the smallest stock of those that
// exist, for the poller (driver.ShardSampler); nil without Redis.
func (c *Checkers) SampleShards() driver.ShardSampler {
	if c.redis == nil {
		return nil
	}
	return func(ctx context.Context) (int64, bool) {
		shards, err := readShards(ctx, c.redis, c.cfg.Activity)
		if err != nil {
			return 0, false
		}
		smallest, ok := int64(0), false
		for _, s := range shards {
			if s.present && (!ok || s.stock < smallest) {
				smallest, ok = s.stock, true
			}
		}
		return smallest, ok
	}
}

// Run adds every check to res.Report: what the rush saw (res), what the poller saw
// (res.Report.Remaining and the shards poll sampled; poll may be nil), then MySQL and Redis.
func (c *Checkers) Run(ctx context.Context, res *driver.Result, poll *driver.Poller) {
	cfg := c.cfg
	rep := res.Report
	stock, limit := c.resolveLimits(ctx)
	rep.Config.Stock, rep.Config.PerUserLimit = stock, limit

	// What the tool saw.
	if stock > 0 {
		status := report.Pass
		if rep.Reservations.Units > stock {
			status = report.Fail
		}
		rep.Add("client.stock", status, "%d units reserved for a stock of %d", rep.Reservations.Units, stock)
	} else {
		rep.Add("client.stock", report.Skip, "stock unknown: give --stock")
	}
	if limit > 0 {
		over, worst := 0, ""
		for _, h := range res.Holdings {
			if h.Reservations*cfg.Quantity > limit {
				over++
				if worst == "" {
					worst = fmt.Sprintf("; e.g. %s holds %d units", h.User, h.Reservations*cfg.Quantity)
				}
			}
		}
		status := report.Pass
		if over > 0 {
			status = report.Fail
		}
		rep.Add("client.per_user_limit", status, "%d users over the limit of %d%s", over, limit, worst)
	} else {
		rep.Add("client.per_user_limit", report.Skip, "per-user limit unknown: give --per-user-limit")
	}
	dups := res.Duplicates
	if len(dups) > 0 {
		rep.Add("client.duplicate_reservation", report.Fail, "%d reservation ids given to two users or two attempts, e.g. %s", len(dups), dups[0])
	} else {
		rep.Add("client.duplicate_reservation", report.Pass, "%d distinct reservation ids, none given twice", rep.Reservations.Distinct)
	}
	if n, m := rep.Reservations.MissingReservationID, rep.Reservations.MissingRetryAfter; n+m > 0 {
		rep.Add("client.protocol", report.Fail, "%d 2xx/409 answers without reservationId, %d 429/503 answers without both Retry-After and retryAfterSeconds", n, m)
	} else {
		rep.Add("client.protocol", report.Pass, "every 2xx/409 named a reservation, every 429/503 carried Retry-After and retryAfterSeconds")
	}

	// What the poller saw.
	switch rem := rep.Remaining; {
	case cfg.PollEvery <= 0:
		rep.Add("remaining.never_negative", report.Skip, "poller off")
	case !rem.Observed:
		rep.Add("remaining.never_negative", report.Fail, "no answer of GET /api/v1/activities/%s carried remaining (%d polls, %d errors)", cfg.Activity, rem.Polls, rem.Errors)
	case rem.Min < 0:
		rep.Add("remaining.never_negative", report.Fail, "remaining went down to %d", rem.Min)
	default:
		rep.Add("remaining.never_negative", report.Pass, "minimum remaining seen %d over %d polls", rem.Min, rem.Polls)
	}
	if cfg.PollEvery > 0 && res.SoldOut {
		status := report.Pass
		if !rep.Remaining.Observed || rep.Remaining.Last != 0 {
			status = report.Fail
		}
		rep.Add("remaining.zero_after_sold_out", status, "after 410 SOLD_OUT every instance shows remaining %d", rep.Remaining.Last)
	}

	c.checkOrders(ctx, res, stock, limit)
	c.checkRedis(ctx, rep, poll, stock)
}

// drainSettle is how long a drained count between known and known+slack must stand still
// before waitDrained ends.
const drainSettle = 2 * time.Second

// waitDrained waits for the writer to drain: it calls read every 100 ms until a read
// succeeds with at least known units done, settled (nothing left in flight, as read judges
// it), and either known+slack units or a count that stood still for drainSettle (unresolved
// attempts may add up to slack more, which nothing announces); or until deadline or ctx ends.
// It returns the last read's error.
func waitDrained(ctx context.Context, deadline time.Time, known, slack int64, read func(context.Context) (n int64, settled bool, err error)) error {
	last, lastChange := int64(-1), time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		n, settled, err := read(ctx)
		if err == nil && n != last {
			last, lastChange = n, time.Now()
		}
		if err == nil && settled && n >= known && (n >= known+slack || time.Since(lastChange) >= drainSettle) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// checkReconciled is the order check without MySQL: through the service's reconciliation,
// the units the rush added to orders and compensations must equal the units it reserved
// (up to one reservation more per unresolved attempt), once the journal is drained, with zero
// drift and no reservation added to the lost ones.
func (c *Checkers) checkReconciled(ctx context.Context, rep *report.Report) {
	const name = "service.orders_match_reservations"
	if c.baseErr != nil {
		rep.Add(name, report.Skip, "no --mysql-dsn, and the service's reconciliation was not readable before the rush: %v", c.baseErr)
		return
	}
	known := rep.Reservations.Units
	slack := int64(rep.Reservations.UnresolvedAttempts * c.cfg.Quantity)
	var rc driver.Reconciliation
	added := func() int64 { return rc.OrdersInDB - c.base.OrdersInDB + rc.Compensated - c.base.Compensated }
	err := waitDrained(ctx, time.Now().Add(c.cfg.DrainTimeout), known, slack, func(ctx context.Context) (int64, bool, error) {
		var err error
		rc, err = c.recon(ctx)
		return added(), rc.JournalPending == 0 && rc.InFlight == 0 && rc.Drift == 0, err
	})
	if err != nil {
		rep.Add(name, report.Fail, "reading the service's reconciliation: %v", err)
		return
	}
	n := added()
	detail := fmt.Sprintf("the service's reconciliation (no --mysql-dsn): %d units ordered or compensated by this run for %d reserved (%d unresolved attempts); journal pending %d, in flight %d, drift %d, lost %d",
		n, known, rep.Reservations.UnresolvedAttempts, rc.JournalPending, rc.InFlight, rc.Drift, rc.Lost.Count-c.base.Lost.Count)
	switch {
	case n < known || n > known+slack || rc.Drift != 0 || rc.Lost.Count > c.base.Lost.Count:
		rep.Add(name, report.Fail, "%s after %v", detail, c.cfg.DrainTimeout)
	case rc.JournalPending != 0 || rc.InFlight != 0:
		rep.Add(name, report.Fail, "%s: not drained after %v", detail, c.cfg.DrainTimeout)
	default:
		rep.Add(name, report.Pass, "%s", detail)
	}
}

// resolveLimits finds the stock and per-user limit: flags first, then MySQL, then Redis meta.
func (c *Checkers) resolveLimits(ctx context.Context) (int64, int) {
	stock, limit := c.cfg.Stock, c.cfg.PerUserLimit
	if (stock == 0 || limit == 0) && c.db != nil {
		var s int64
		var l int
		err := c.db.QueryRowContext(ctx, "SELECT stock, per_user_limit FROM activities WHERE id = ?", c.cfg.Activity).Scan(&s, &l)
		if err == nil {
			stock, limit = cmpOr(stock, s), cmpOr(limit, l)
		}
	}
	if (stock == 0 || limit == 0) && c.redis != nil {
		m, err := c.redis.HMGet(ctx, metaKey(c.cfg.Activity), "stock", "perUserLimit").Result()
		if err == nil {
			s, _ := strconv.ParseInt(fmt.Sprint(m[0]), 10, 64)
			l, _ := strconv.Atoi(fmt.Sprint(m[1]))
			stock, limit = cmpOr(stock, s), cmpOr(limit, l)
		}
	}
	return stock, limit
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// ordersState is one reading of MySQL for the activity.
type ordersState struct {
	count, units, compensations int64
	present                     map[string]bool // reservation ids in orders or compensations
}

func (c *Checkers) readOrders(ctx context.Context) (ordersState, error) {
	st := ordersState{present: make(map[string]bool)}
	a := c.cfg.Activity
	err := c.db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(quantity), 0) FROM orders WHERE activity_id = ?", a).Scan(&st.count, &st.units)
	if err != nil {
		return st, err
	}
	// A table of compensations is optional: without it, no reservation failed for good.
	_ = c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM compensations WHERE activity_id = ?", a).Scan(&st.compensations)
	for _, q := range []string{
		"SELECT reservation_id FROM orders WHERE activity_id = ?",
		"SELECT reservation_id FROM compensations WHERE activity_id = ?",
	} {
		rows, err := c.db.QueryContext(ctx, q, a)
		if err != nil {
			continue
		}
		for rows.Next() {
			var rid string
			if rows.Scan(&rid) == nil {
				st.present[rid] = true
			}
		}
		rows.Close()
	}
	return st, nil
}

func (c *Checkers) checkOrders(ctx context.Context, res *driver.Result, stock int64, limit int) {
	rep := res.Report
	const name = "mysql.orders_match_reservations"
	if c.db == nil {
		if c.recon != nil {
			c.checkReconciled(ctx, rep)
			return
		}
		rep.Add(name, report.Skip, "no --mysql-dsn (and no admin token to read the service's reconciliation)")
		return
	}
	known := int64(len(res.KnownRIDs))
	slack := int64(rep.Reservations.UnresolvedAttempts)
	// Wait for the writer to drain: every reservation known has its order or compensation
	// (not merely as many rows: rows this run does not explain, a duplicate or an earlier
	// run's, reached the count while reservations were still unwritten, and the checks then
	// judged a writer that was only slow).
	var st ordersState
	err := waitDrained(ctx, time.Now().Add(c.cfg.DrainTimeout), known, slack, func(ctx context.Context) (int64, bool, error) {
		var err error
		st, err = c.readOrders(ctx)
		return st.count + st.compensations, missingOrders(st, res.KnownRIDs) == 0, err
	})
	if err != nil {
		rep.Add(name, report.Fail, "reading orders: %v", err)
		return
	}
	rep.Orders = report.OrdersReport{Checked: true, Count: st.count, Units: st.units, Compensations: st.compensations}

	missing := missingOrders(st, res.KnownRIDs)
	example := ""
	for _, rid := range res.KnownRIDs {
		if !st.present[rid] {
			example = rid
			break
		}
	}
	total := st.count + st.compensations
	switch {
	case missing > 0:
		rep.Add(name, report.Fail, "%d of %d reservations have no order nor compensation after %v, e.g. %s", missing, known, c.cfg.DrainTimeout, example)
	case total < known || total > known+slack:
		rep.Add(name, report.Fail, "%d orders + %d compensations for %d reservations (%d unresolved attempts)", st.count, st.compensations, known, slack)
	default:
		rep.Add(name, report.Pass, "%d orders + %d compensations for %d reservations (%d unresolved attempts)", st.count, st.compensations, known, slack)
	}
	checkOrderedStock(rep, st.units, stock, res.SoldOut)
	c.checkPerUserLimit(ctx, rep, limit)
	c.checkDuplicateOrders(ctx, rep)
}

// checkOrderedStock adds mysql.stock (no more units ordered than the stock) and, after an
// observed sell-out, mysql.sold_exactly_stock; a stock of 0 is unknown and skipped.
func checkOrderedStock(rep *report.Report, units, stock int64, soldOut bool) {
	if stock > 0 {
		status := report.Pass
		if units > stock {
			status = report.Fail
		}
		rep.Add("mysql.stock", status, "%d units ordered for a stock of %d", units, stock)
		if rep.Remaining.Observed && rep.Remaining.Last == 0 && soldOut {
			status := report.Pass
			if units != stock {
				status = report.Fail
			}
			rep.Add("mysql.sold_exactly_stock", status, "sold out: %d units ordered for a stock of %d", units, stock)
		}
	} else {
		rep.Add("mysql.stock", report.Skip, "stock unknown")
	}
}

// checkPerUserLimit adds mysql.per_user_limit: no user of the activity ordered more than
// limit units, with an example user when one did; a limit of 0 is unknown and skipped.
func (c *Checkers) checkPerUserLimit(ctx context.Context, rep *report.Report, limit int) {
	if limit > 0 {
		var over int64
		var example string
		err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE activity_id = ?
			GROUP BY user_id HAVING SUM(quantity) > ?) o`, c.cfg.Activity, limit).Scan(&over)
		if err == nil && over > 0 {
			c.db.QueryRowContext(ctx, `SELECT user_id FROM orders WHERE activity_id = ? GROUP BY user_id
				HAVING SUM(quantity) > ? LIMIT 1`, c.cfg.Activity, limit).Scan(&example)
		}
		switch {
		case err != nil:
			rep.Add("mysql.per_user_limit", report.Fail, "query: %v", err)
		case over > 0:
			rep.Add("mysql.per_user_limit", report.Fail, "%d users over the limit of %d, e.g. %s", over, limit, example)
		default:
			rep.Add("mysql.per_user_limit", report.Pass, "no user over the limit of %d", limit)
		}
	} else {
		rep.Add("mysql.per_user_limit", report.Skip, "per-user limit unknown")
	}
}

// checkDuplicateOrders adds mysql.duplicate_reservation: no reservation id of the activity
// has two orders, with an example id when one has.
func (c *Checkers) checkDuplicateOrders(ctx context.Context, rep *report.Report) {
	var dups int64
	var example2 string
	err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT reservation_id FROM orders WHERE activity_id = ?
		GROUP BY reservation_id HAVING COUNT(*) > 1) d`, c.cfg.Activity).Scan(&dups)
	if err == nil && dups > 0 {
		c.db.QueryRowContext(ctx, `SELECT reservation_id FROM orders WHERE activity_id = ? GROUP BY reservation_id
			HAVING COUNT(*) > 1 LIMIT 1`, c.cfg.Activity).Scan(&example2)
	}
	switch {
	case err != nil:
		rep.Add("mysql.duplicate_reservation", report.Fail, "query: %v", err)
	case dups > 0:
		rep.Add("mysql.duplicate_reservation", report.Fail, "%d reservation ids with two orders or more, e.g. %s", dups, example2)
	default:
		rep.Add("mysql.duplicate_reservation", report.Pass, "no reservation with two orders")
	}
}

// Redis keys of the stock shards (docs/DESIGN.md).
func metaKey(activity string) string { return keyspace.Prefix + "{" + activity + "}:meta" }

func shardKey(activity string, epoch, shard int, what string) string {
	return fmt.Sprintf("%s{%s:%d:%d}:%s", keyspace.Prefix, activity, epoch, shard, what)
}

type shardState struct {
	epoch, shard int
	present      bool  // the stock key exists (a missing key is a shard resharded away)
	stock        int64 // units left
	taken        int64 // units taken, from the shard's stats
}

// readShards reads every stock shard of every epoch the activity had.
func readShards(ctx context.Context, rdb redis.UniversalClient, activity string) ([]shardState, error) {
	m, err := rdb.HMGet(ctx, metaKey(activity), "layouts", "epoch", "shards").Result()
	if err != nil {
		return nil, err
	}
	layouts := map[int]int{}
	if s, ok := m[0].(string); ok && s != "" {
		for _, part := range strings.Split(s, ",") {
			e, n, ok := strings.Cut(part, ":")
			ei, err1 := strconv.Atoi(e)
			ni, err2 := strconv.Atoi(n)
			if ok && err1 == nil && err2 == nil {
				layouts[ei] = ni
			}
		}
	} else {
		e, err1 := strconv.Atoi(fmt.Sprint(m[1]))
		n, err2 := strconv.Atoi(fmt.Sprint(m[2]))
		if err1 != nil || err2 != nil {
			return nil, nil // not created (yet), or not by this layout
		}
		layouts[e] = n
	}
	var out []shardState
	var stocks []*redis.StringCmd
	var takens []*redis.StringCmd
	pipe := rdb.Pipeline()
	for e, n := range layouts {
		for i := 0; i < n; i++ {
			out = append(out, shardState{epoch: e, shard: i})
			stocks = append(stocks, pipe.Get(ctx, shardKey(activity, e, i, "stock")))
			takens = append(takens, pipe.HGet(ctx, shardKey(activity, e, i, "stats"), "taken"))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i := range out {
		if v, err := stocks[i].Int64(); err == nil {
			out[i].stock, out[i].present = v, true
		}
		if v, err := takens[i].Int64(); err == nil {
			out[i].taken = v
		}
	}
	return out, nil
}

func (c *Checkers) checkRedis(ctx context.Context, rep *report.Report, poll *driver.Poller, stock int64) {
	if c.redis == nil {
		rep.Add("redis.shards_never_negative", report.Skip, "no --redis-addr")
		return
	}
	shards, err := readShards(ctx, c.redis, c.cfg.Activity)
	if err != nil {
		rep.Add("redis.shards_never_negative", report.Fail, "reading shards: %v", err)
		return
	}
	if len(shards) == 0 {
		rep.Add("redis.shards_never_negative", report.Skip, "no stock shards found under %s", metaKey(c.cfg.Activity))
		return
	}
	minSeen, seen := int64(0), false
	if poll != nil {
		minSeen, seen = poll.ShardMin()
	}
	var remaining, taken int64
	negative := ""
	for _, s := range shards {
		if !s.present {
			continue
		}
		remaining += s.stock
		taken += s.taken
		if s.stock < 0 && negative == "" {
			negative = shardKey(c.cfg.Activity, s.epoch, s.shard, "stock")
		}
		if !seen || s.stock < minSeen {
			minSeen, seen = s.stock, true
		}
	}
	if minSeen < 0 {
		detail := fmt.Sprintf("a stock shard went down to %d", minSeen)
		if negative != "" {
			detail += " (" + negative + ")"
		}
		rep.Add("redis.shards_never_negative", report.Fail, "%s", detail)
	} else {
		rep.Add("redis.shards_never_negative", report.Pass, "%d shards, smallest value seen %d, %d units left", len(shards), minSeen, remaining)
	}
	if stock > 0 {
		status := report.Pass
		if taken > stock {
			status = report.Fail
		}
		rep.Add("redis.taken_le_stock", status, "%d units taken from the shards for a stock of %d", taken, stock)
	}
}

// missingOrders counts the reservation ids that have neither an order nor a compensation in st.
func missingOrders(st ordersState, rids []string) int {
	n := 0
	for _, rid := range rids {
		if !st.present[rid] {
			n++
		}
	}
	return n
}
