package load

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	// The MySQL driver for the independent order checks.
	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// createActivity posts the activity to the first target and waits until every target knows it.
func (r *runner) createActivity(ctx context.Context) error {
	cfg := r.cfg
	now := time.Now().UTC()
	def := map[string]any{
		"activityId":   cfg.Activity,
		"stock":        cfg.Stock,
		"perUserLimit": cfg.PerUserLimit,
		"opensAt":      now.Add(cfg.OpensIn).Format("2006-01-02T15:04:05.000Z07:00"),
		"shards":       cfg.Shards,
	}
	if cfg.ClosesIn > 0 {
		def["closesAt"] = now.Add(cfg.ClosesIn).Format("2006-01-02T15:04:05.000Z07:00")
	}
	body, _ := json.Marshal(def)
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	admin := cfg.AdminURL
	if admin == "" {
		admin = cfg.Targets[0]
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, admin+"/admin/v1/activities", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("create activity: %w", err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("create activity: %s: %s", resp.Status, bytes.TrimSpace(b))
	}

	// The spec makes a new activity visible on every instance within 1 s.
	deadline := time.Now().Add(5 * time.Second)
	for _, t := range cfg.Targets {
		for {
			st, _, err := getActivity(ctx, r.client, t, cfg.Activity)
			if err == nil && st != "" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("activity %s created but not visible on %s: %v", cfg.Activity, t, err)
			}
			if !sleepCtx(ctx, 50*time.Millisecond) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// checkReady asks every target for /readyz once, so a run against a dead port or an instance
// without configuration stops at once with a clear reason instead of reporting a rush of
// transport errors.
func (r *runner) checkReady(ctx context.Context) error {
	for _, t := range r.cfg.Targets {
		cctx, cancel := context.WithTimeout(ctx, min(r.cfg.Timeout, 5*time.Second))
		req, err := http.NewRequestWithContext(cctx, http.MethodGet, t+"/readyz", nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := r.client.Do(req)
		if err != nil {
			cancel()
			return fmt.Errorf("target %s is not answering (GET /readyz: %v); is the service running there?", t, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("target %s is not ready: GET /readyz answered %s %s", t, resp.Status, bytes.TrimSpace(b))
		}
	}
	return nil
}

// getActivity reads GET /api/v1/activities/{id}: its status and remaining (nil when absent).
func getActivity(ctx context.Context, c *http.Client, target, activity string) (string, *int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/api/v1/activities/"+activity, nil)
	if err != nil {
		return "", nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("GET activity: %s", resp.Status)
	}
	var a struct {
		Status    string `json:"status"`
		Remaining *int64 `json:"remaining"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return "", nil, fmt.Errorf("GET activity: %w", err)
	}
	return a.Status, a.Remaining, nil
}

// poller reads the activity on every target every cfg.PollEvery, keeping the minimum
// remaining seen, and the Redis stock shards when a Redis client is given.
type poller struct {
	cfg    Config
	client *http.Client
	redis  redis.UniversalClient

	mu       sync.Mutex
	polls    int64
	errors   int64
	observed bool
	min      int64
	last     map[string]int64 // target -> latest remaining
	shardMin int64            // smallest Redis stock shard value seen
	shardObs bool
}

func newPoller(cfg Config, rdb redis.UniversalClient) *poller {
	// A client of its own, so that polls never wait for a worker's connection.
	return &poller{
		cfg:    cfg,
		client: &http.Client{Transport: pollTransport(cfg)},
		redis:  rdb,
		last:   make(map[string]int64),
	}
}

func pollTransport(cfg Config) http.RoundTripper {
	if cfg.Transport != nil {
		return cfg.Transport
	}
	return &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
}

func (p *poller) run(ctx context.Context) {
	defer func() {
		if t, ok := p.client.Transport.(*http.Transport); ok && p.cfg.Transport == nil {
			t.CloseIdleConnections()
		}
	}()
	t := time.NewTicker(p.cfg.PollEvery)
	defer t.Stop()
	for {
		p.pollOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *poller) pollOnce(ctx context.Context) {
	for _, target := range p.cfg.Targets {
		_, rem, err := getActivity(ctx, p.client, target, p.cfg.Activity)
		p.mu.Lock()
		p.polls++
		switch {
		case err != nil:
			if ctx.Err() == nil {
				p.errors++
			}
		case rem != nil:
			if !p.observed || *rem < p.min {
				p.min = *rem
			}
			p.observed = true
			p.last[target] = *rem
		}
		p.mu.Unlock()
	}
	if p.redis != nil {
		shards, err := readShards(ctx, p.redis, p.cfg.Activity)
		if err == nil && len(shards) > 0 {
			p.mu.Lock()
			for _, s := range shards {
				if s.present && (!p.shardObs || s.stock < p.shardMin) {
					p.shardMin, p.shardObs = s.stock, true
				}
			}
			p.mu.Unlock()
		}
	}
}

// waitZero waits up to d until every target's latest remaining is 0.
func (p *poller) waitZero(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if p.report().Last == 0 && p.allSeen() {
			return
		}
		if !sleepCtx(ctx, p.cfg.PollEvery) {
			return
		}
	}
}

func (p *poller) allSeen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.last) == len(p.cfg.Targets)
}

func (p *poller) report() RemainingReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := RemainingReport{Polls: p.polls, Errors: p.errors, Observed: p.observed, Min: p.min}
	first := true
	for _, v := range p.last {
		if first || v < r.Last {
			r.Last, first = v, false
		}
	}
	return r
}

func (p *poller) shards() (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shardMin, p.shardObs
}

// checkers holds the connections of the independent checks.
type checkers struct {
	db       *sql.DB
	ownDB    bool
	redis    redis.UniversalClient
	ownRedis bool
	poller   *poller
	cfg      Config
}

func newCheckers(ctx context.Context, cfg Config) (*checkers, error) {
	c := &checkers{cfg: cfg, db: cfg.OrdersDB, redis: cfg.Redis}
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
			c.close()
			return nil, fmt.Errorf("redis: %w", err)
		}
	}
	return c, nil
}

func (c *checkers) close() {
	if c.ownDB && c.db != nil {
		c.db.Close()
	}
	if c.ownRedis && c.redis != nil {
		c.redis.Close()
	}
}

// run adds every check to rep.
func (c *checkers) run(ctx context.Context, r *runner, rep *Report) {
	cfg := c.cfg
	stock, limit := c.resolveLimits(ctx)
	rep.Config.Stock, rep.Config.PerUserLimit = stock, limit

	// What the tool saw.
	if stock > 0 {
		status := Pass
		if rep.Reservations.Units > stock {
			status = Fail
		}
		rep.add("client.stock", status, "%d units reserved for a stock of %d", rep.Reservations.Units, stock)
	} else {
		rep.add("client.stock", Skip, "stock unknown: give --stock")
	}
	if limit > 0 {
		over, worst := 0, ""
		for _, u := range r.users {
			if len(u.rids)*cfg.Quantity > limit {
				over++
				if worst == "" {
					worst = fmt.Sprintf("; e.g. %s holds %d units", u.id, len(u.rids)*cfg.Quantity)
				}
			}
		}
		status := Pass
		if over > 0 {
			status = Fail
		}
		rep.add("client.per_user_limit", status, "%d users over the limit of %d%s", over, limit, worst)
	} else {
		rep.add("client.per_user_limit", Skip, "per-user limit unknown: give --per-user-limit")
	}
	r.rec.mu.Lock()
	dups := append([]string(nil), r.rec.duplicates...)
	r.rec.mu.Unlock()
	if len(dups) > 0 {
		rep.add("client.duplicate_reservation", Fail, "%d reservation ids given to two users or two attempts, e.g. %s", len(dups), dups[0])
	} else {
		rep.add("client.duplicate_reservation", Pass, "%d distinct reservation ids, none given twice", rep.Reservations.Distinct)
	}
	if n, m := rep.Reservations.MissingReservationID, rep.Reservations.MissingRetryAfter; n+m > 0 {
		rep.add("client.protocol", Fail, "%d 2xx/409 answers without reservationId, %d 429/503 answers without both Retry-After and retryAfterSeconds", n, m)
	} else {
		rep.add("client.protocol", Pass, "every 2xx/409 named a reservation, every 429/503 carried Retry-After and retryAfterSeconds")
	}

	// What the poller saw.
	switch rem := rep.Remaining; {
	case cfg.PollEvery <= 0:
		rep.add("remaining.never_negative", Skip, "poller off")
	case !rem.Observed:
		rep.add("remaining.never_negative", Fail, "no answer of GET /api/v1/activities/%s carried remaining (%d polls, %d errors)", cfg.Activity, rem.Polls, rem.Errors)
	case rem.Min < 0:
		rep.add("remaining.never_negative", Fail, "remaining went down to %d", rem.Min)
	default:
		rep.add("remaining.never_negative", Pass, "minimum remaining seen %d over %d polls", rem.Min, rem.Polls)
	}
	if cfg.PollEvery > 0 && rep.soldOut {
		status := Pass
		if !rep.Remaining.Observed || rep.Remaining.Last != 0 {
			status = Fail
		}
		rep.add("remaining.zero_after_sold_out", status, "after 410 SOLD_OUT every instance shows remaining %d", rep.Remaining.Last)
	}

	c.checkOrders(ctx, rep, stock, limit)
	c.checkRedis(ctx, rep, stock)
}

// resolveLimits finds the stock and per-user limit: flags first, then MySQL, then Redis meta.
func (c *checkers) resolveLimits(ctx context.Context) (int64, int) {
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

func (c *checkers) readOrders(ctx context.Context) (ordersState, error) {
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

func (c *checkers) checkOrders(ctx context.Context, rep *Report, stock int64, limit int) {
	const name = "mysql.orders_match_reservations"
	if c.db == nil {
		rep.add(name, Skip, "no --mysql-dsn")
		return
	}
	known := int64(len(rep.knownRIDs))
	slack := int64(rep.Reservations.UnresolvedAttempts)
	// Wait for the writer to drain: orders plus compensations reach the reservations known.
	// Unresolved attempts may add up to slack more, which nothing announces: past the known
	// count, wait until that many arrived or the count stood still for drainSettle.
	const drainSettle = 2 * time.Second
	deadline := time.Now().Add(c.cfg.DrainTimeout)
	var st ordersState
	var err error
	lastTotal, lastChange := int64(-1), time.Now()
	for {
		st, err = c.readOrders(ctx)
		total := st.count + st.compensations
		if total != lastTotal {
			lastTotal, lastChange = total, time.Now()
		}
		if err == nil && total >= known && (total >= known+slack || time.Since(lastChange) >= drainSettle) {
			break
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 100*time.Millisecond) {
			break
		}
	}
	if err != nil {
		rep.add(name, Fail, "reading orders: %v", err)
		return
	}
	rep.Orders = OrdersReport{Checked: true, Count: st.count, Units: st.units, Compensations: st.compensations}

	missing := 0
	example := ""
	for _, rid := range rep.knownRIDs {
		if !st.present[rid] {
			missing++
			if example == "" {
				example = rid
			}
		}
	}
	total := st.count + st.compensations
	switch {
	case missing > 0:
		rep.add(name, Fail, "%d of %d reservations have no order nor compensation after %v, e.g. %s", missing, known, c.cfg.DrainTimeout, example)
	case total < known || total > known+slack:
		rep.add(name, Fail, "%d orders + %d compensations for %d reservations (%d unresolved attempts)", st.count, st.compensations, known, slack)
	default:
		rep.add(name, Pass, "%d orders + %d compensations for %d reservations (%d unresolved attempts)", st.count, st.compensations, known, slack)
	}

	if stock > 0 {
		status := Pass
		if st.units > stock {
			status = Fail
		}
		rep.add("mysql.stock", status, "%d units ordered for a stock of %d", st.units, stock)
		if rep.Remaining.Observed && rep.Remaining.Last == 0 && rep.soldOut {
			status := Pass
			if st.units != stock {
				status = Fail
			}
			rep.add("mysql.sold_exactly_stock", status, "sold out: %d units ordered for a stock of %d", st.units, stock)
		}
	} else {
		rep.add("mysql.stock", Skip, "stock unknown")
	}

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
			rep.add("mysql.per_user_limit", Fail, "query: %v", err)
		case over > 0:
			rep.add("mysql.per_user_limit", Fail, "%d users over the limit of %d, e.g. %s", over, limit, example)
		default:
			rep.add("mysql.per_user_limit", Pass, "no user over the limit of %d", limit)
		}
	} else {
		rep.add("mysql.per_user_limit", Skip, "per-user limit unknown")
	}

	var dups int64
	var example2 string
	err = c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT reservation_id FROM orders WHERE activity_id = ?
		GROUP BY reservation_id HAVING COUNT(*) > 1) d`, c.cfg.Activity).Scan(&dups)
	if err == nil && dups > 0 {
		c.db.QueryRowContext(ctx, `SELECT reservation_id FROM orders WHERE activity_id = ? GROUP BY reservation_id
			HAVING COUNT(*) > 1 LIMIT 1`, c.cfg.Activity).Scan(&example2)
	}
	switch {
	case err != nil:
		rep.add("mysql.duplicate_reservation", Fail, "query: %v", err)
	case dups > 0:
		rep.add("mysql.duplicate_reservation", Fail, "%d reservation ids with two orders or more, e.g. %s", dups, example2)
	default:
		rep.add("mysql.duplicate_reservation", Pass, "no reservation with two orders")
	}
}

// Redis keys of the stock shards (docs/DESIGN.md).
func metaKey(activity string) string { return "sk:{" + activity + "}:meta" }

func shardKey(activity string, epoch, shard int, what string) string {
	return fmt.Sprintf("sk:{%s:%d:%d}:%s", activity, epoch, shard, what)
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

func (c *checkers) checkRedis(ctx context.Context, rep *Report, stock int64) {
	if c.redis == nil {
		rep.add("redis.shards_never_negative", Skip, "no --redis-addr")
		return
	}
	shards, err := readShards(ctx, c.redis, c.cfg.Activity)
	if err != nil {
		rep.add("redis.shards_never_negative", Fail, "reading shards: %v", err)
		return
	}
	if len(shards) == 0 {
		rep.add("redis.shards_never_negative", Skip, "no stock shards found under %s", metaKey(c.cfg.Activity))
		return
	}
	minSeen, seen := int64(0), false
	if c.poller != nil {
		minSeen, seen = c.poller.shards()
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
		rep.add("redis.shards_never_negative", Fail, "%s", detail)
	} else {
		rep.add("redis.shards_never_negative", Pass, "%d shards, smallest value seen %d, %d units left", len(shards), minSeen, remaining)
	}
	if stock > 0 {
		status := Pass
		if taken > stock {
			status = Fail
		}
		rep.add("redis.taken_le_stock", status, "%d units taken from the shards for a stock of %d", taken, stock)
	}
}
