package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// ErrUnknownActivity is returned by Report for an activity without metadata in Redis.
var ErrUnknownActivity = errors.New("order: unknown activity")

// Report is the reconciliation of one activity, all in units, summed over every shard of
// every epoch (meta `layouts`); RedisRemaining includes the units in transit between shards
// (stats xout - xin). Drift = Stock - RedisRemaining - OrdersInDB - JournalPending
// - InFlight is 0 when Redis, the journal and MySQL agree (compensated units are back in
// RedisRemaining). While orders are being written a committed order may be counted both in
// OrdersInDB and in InFlight for a moment, so a transient negative drift is expected.
type Report struct {
	Stock          int64 `json:"stock"`
	RedisRemaining int64 `json:"redisRemaining"`
	Reserved       int64 `json:"reserved"`
	JournalPending int64 `json:"journalPending"`
	OrdersInDB     int64 `json:"ordersInDb"`
	Compensated    int64 `json:"compensated"`
	InFlight       int64 `json:"inFlight"`
	Drift          int64 `json:"drift"`
}

// ReconcileOptions configure a Reconciler. Zero values take the defaults named.
type ReconcileOptions struct {
	// Every is the period of Run (default 30 s).
	Every time.Duration
	// OrphanAfter is the age after which a PENDING reservation is examined (default 5 min).
	OrphanAfter time.Duration
	// Repair lets Run confirm orphaned PENDING reservations whose order is in MySQL.
	Repair bool
	// ActivitiesKey is the set of activity ids Run walks (default inventory.ActivitiesKey;
	// tests sharing a Redis use their own).
	ActivitiesKey string
}

// Reconciler compares the stock loaded, Redis, the journal counters and MySQL. Report is
// safe for concurrent use; Run is called once.
type Reconciler struct {
	db    *gorm.DB
	rdb   redis.UniversalClient
	opts  ReconcileOptions
	m     *Metrics
	log   *slog.Logger
	sc    *scripts
	scErr error

	mu  sync.Mutex
	low map[string]int64 // shard tag -> records 1..low are settled (CONFIRMED, FAILED or gone)
}

// NewReconciler returns a reconciler.
func NewReconciler(db *gorm.DB, rdb redis.UniversalClient, opts ReconcileOptions, m *Metrics, log *slog.Logger) *Reconciler {
	if opts.Every <= 0 {
		opts.Every = 30 * time.Second
	}
	if opts.OrphanAfter <= 0 {
		opts.OrphanAfter = 5 * time.Minute
	}
	if opts.ActivitiesKey == "" {
		opts.ActivitiesKey = inventory.ActivitiesKey
	}
	if log == nil {
		log = slog.Default()
	}
	sc, err := loadScripts()
	return &Reconciler{db: db, rdb: rdb, opts: opts, m: m, sc: sc, scErr: err, low: map[string]int64{},
		log: log.With("component", "reconciler")}
}

type layout struct{ epoch, shards int }

// layouts reads the activity's stock and every epoch's shard count from its meta hash.
func (r *Reconciler) layouts(ctx context.Context, activityID string) (int64, []layout, error) {
	meta, err := r.rdb.HMGet(ctx, inventory.Meta(activityID), "stock", "layouts", "epoch", "shards").Result()
	if err != nil {
		return 0, nil, fmt.Errorf("order: read meta of %s: %w", activityID, err)
	}
	str := func(i int) string { s, _ := meta[i].(string); return s }
	if str(0) == "" {
		return 0, nil, fmt.Errorf("%w: %s", ErrUnknownActivity, activityID)
	}
	stock, err := strconv.ParseInt(str(0), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("order: meta stock of %s: %w", activityID, err)
	}
	spec := str(1)
	if spec == "" {
		spec = str(2) + ":" + str(3)
	}
	var out []layout
	for _, p := range strings.Split(spec, ",") {
		e, s, ok := strings.Cut(strings.TrimSpace(p), ":")
		ei, err1 := strconv.Atoi(e)
		si, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil || si <= 0 {
			return 0, nil, fmt.Errorf("order: meta layouts of %s: bad %q", activityID, p)
		}
		out = append(out, layout{ei, si})
	}
	return stock, out, nil
}

// Report reconciles one activity now.
func (r *Reconciler) Report(ctx context.Context, activityID string) (Report, error) {
	stock, lays, err := r.layouts(ctx, activityID)
	if err != nil {
		return Report{}, err
	}
	pipe := r.rdb.Pipeline()
	var stocks []*redis.StringCmd
	var stats []*redis.SliceCmd
	for _, l := range lays {
		for i := 0; i < l.shards; i++ {
			k := inventory.Shard(activityID, l.epoch, i)
			stocks = append(stocks, pipe.Get(ctx, k.Stock()))
			stats = append(stats, pipe.HMGet(ctx, k.Stats(), "taken", "relayed", "confirmed", "failed", "compensated", "xout", "xin"))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Report{}, fmt.Errorf("order: read shards of %s: %w", activityID, err)
	}
	rep := Report{Stock: stock}
	var taken, relayed, confirmed, failed int64
	for i := range stocks {
		if v, err := stocks[i].Int64(); err == nil {
			rep.RedisRemaining += v
		}
		vals := stats[i].Val()
		get := func(j int) int64 {
			if j >= len(vals) {
				return 0
			}
			s, _ := vals[j].(string)
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}
		taken += get(0)
		relayed += get(1)
		confirmed += get(2)
		failed += get(3)
		rep.Compensated += get(4)
		// Units in transit between shards (a transfer, a reshard, a compensation on a
		// drained shard) are still in Redis: out of one shard, not yet into another.
		rep.RedisRemaining += get(5) - get(6)
	}
	var sum int64
	if err := r.db.WithContext(ctx).Model(&sql.Order{}).Where("activity_id = ?", activityID).
		Select("COALESCE(SUM(quantity), 0)").Scan(&sum).Error; err != nil {
		return Report{}, fmt.Errorf("order: sum orders of %s: %w", activityID, err)
	}
	rep.Reserved = taken
	rep.JournalPending = taken - relayed
	rep.InFlight = relayed - confirmed - failed
	rep.OrdersInDB = sum
	rep.Drift = rep.Stock - rep.RedisRemaining - rep.OrdersInDB - rep.JournalPending - rep.InFlight
	return rep, nil
}

// Run reconciles every activity of sk:activities each Every until ctx is done, exports
// drift, journal lag and in-flight units, logs a line for each activity with drift, and
// (with Repair) confirms orphaned reservations whose order is in MySQL. It returns nil when
// ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	if r.scErr != nil {
		return r.scErr
	}
	t := time.NewTicker(r.opts.Every)
	defer t.Stop()
	for {
		r.Round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round runs one reconciliation over every activity.
func (r *Reconciler) Round(ctx context.Context) {
	ids, err := r.rdb.SMembers(ctx, r.opts.ActivitiesKey).Result()
	if err != nil {
		if ctx.Err() == nil {
			r.m.ReconcileFails.Inc()
			r.log.Warn("reading the activity list failed", "err", err)
		}
		return
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		if err := r.activity(ctx, id); err != nil && ctx.Err() == nil {
			r.m.ReconcileFails.Inc()
			r.log.Warn("reconciliation failed", "activity", id, "err", err)
		}
	}
}

func (r *Reconciler) activity(ctx context.Context, id string) error {
	if !inventory.ValidActivityID(id) {
		return nil
	}
	orphans := 0
	if r.opts.Repair {
		n, err := r.repair(ctx, id)
		if err != nil {
			return err
		}
		orphans = n
	}
	rep, err := r.Report(ctx, id)
	if err != nil {
		return err
	}
	r.m.Drift.WithLabelValues(id).Set(float64(rep.Drift))
	r.m.JournalLag.WithLabelValues(id).Set(float64(rep.JournalPending))
	r.m.InFlight.WithLabelValues(id).Set(float64(rep.InFlight))
	r.m.Orphans.WithLabelValues(id).Set(float64(orphans))
	if rep.Drift != 0 {
		r.log.Warn("reconciliation drift", "activity", id, "drift", rep.Drift, "stock", rep.Stock,
			"redisRemaining", rep.RedisRemaining, "ordersInDb", rep.OrdersInDB, "journalPending", rep.JournalPending,
			"inFlight", rep.InFlight, "compensated", rep.Compensated)
	}
	return nil
}

type pendingRecord struct {
	key, rid string
	ts       int64
}

// repair walks the reservation records of every shard (1..seq, from the last settled one)
// and confirms PENDING records older than OrphanAfter whose order is in MySQL. It returns
// how many old PENDING records it could not repair; they are logged (their order may still
// be on its way, or the reservation was lost: nothing is guessed).
func (r *Reconciler) repair(ctx context.Context, activityID string) (int, error) {
	_, lays, err := r.layouts(ctx, activityID)
	if err != nil {
		return 0, err
	}
	nowMs, err := r.redisNowMs(ctx)
	if err != nil {
		return 0, err
	}
	orphans := 0
	for _, l := range lays {
		for i := 0; i < l.shards; i++ {
			n, err := r.repairShard(ctx, inventory.Shard(activityID, l.epoch, i), nowMs)
			if err != nil {
				return orphans, err
			}
			orphans += n
		}
	}
	return orphans, nil
}

func (r *Reconciler) redisNowMs(ctx context.Context) (int64, error) {
	t, err := r.rdb.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("order: redis time: %w", err)
	}
	return t.UnixMilli(), nil
}

// tsMillis reads a record timestamp written in ms or µs since the epoch.
func tsMillis(ts int64) int64 {
	if ts > 1e14 {
		return ts / 1000
	}
	return ts
}

func (r *Reconciler) repairShard(ctx context.Context, k inventory.ShardKeys, nowMs int64) (int, error) {
	top, err := r.rdb.Get(ctx, k.Seq()).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("order: read %s: %w", k.Seq(), err)
	}
	r.mu.Lock()
	low := r.low[k.Journal()]
	r.mu.Unlock()
	const chunk = 500
	settledTo := low
	contiguous := true
	var old []pendingRecord
	for from := low + 1; from <= top; from += chunk {
		to := min(from+chunk-1, top)
		pipe := r.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, 0, to-from+1)
		for n := from; n <= to; n++ {
			cmds = append(cmds, pipe.HMGet(ctx, k.Record(n), "status", "ts", "rid"))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("order: read records: %w", err)
		}
		for j, c := range cmds {
			n := from + int64(j)
			v := c.Val()
			st, _ := v[0].(string)
			if st == "PENDING" {
				contiguous = false
				tss, _ := v[1].(string)
				ts, _ := strconv.ParseInt(tss, 10, 64)
				rid, _ := v[2].(string)
				if rid == "" {
					rid = inventory.ReservationID(k.Activity, k.Epoch, k.Shard, n)
				}
				if nowMs-tsMillis(ts) >= r.opts.OrphanAfter.Milliseconds() {
					old = append(old, pendingRecord{key: k.Record(n), rid: rid, ts: ts})
				}
				continue
			}
			if contiguous {
				settledTo = n
			}
		}
	}
	r.mu.Lock()
	r.low[k.Journal()] = settledTo
	r.mu.Unlock()
	if len(old) == 0 {
		return 0, nil
	}
	rids := make([]string, len(old))
	for i, o := range old {
		rids[i] = o.rid
	}
	var found []struct {
		ID            int64
		ReservationID string
	}
	if err := r.db.WithContext(ctx).Model(&sql.Order{}).Select("id", "reservation_id").
		Where("reservation_id IN ?", rids).Find(&found).Error; err != nil {
		return 0, fmt.Errorf("order: look up orders: %w", err)
	}
	ids := make(map[string]int64, len(found))
	for _, f := range found {
		ids[f.ReservationID] = f.ID
	}
	orphans := 0
	for _, o := range old {
		id, ok := ids[o.rid]
		if !ok {
			orphans++
			r.log.Warn("orphaned reservation: PENDING, no order in MySQL", "reservation", o.rid, "ts", o.ts)
			continue
		}
		code, err := r.sc.confirm.Run(ctx, r.rdb, []string{o.key, k.Stats()}, id).Int64()
		if err != nil {
			return orphans, fmt.Errorf("order: confirm %s: %w", o.rid, err)
		}
		if res, _ := confirmResult(code); res == Confirmed {
			r.m.Repairs.WithLabelValues("confirm").Inc()
			r.log.Info("repaired: confirmed a PENDING reservation whose order is in MySQL", "reservation", o.rid, "order", id)
		}
	}
	return orphans, nil
}
