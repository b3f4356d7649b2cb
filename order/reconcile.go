package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/keyspace"
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
	// Lost lists the reservations answered 202 that never reached MySQL, as restores found
	// them (lost.go).
	Lost *LostReport `json:"lost"`
	// Refused lists the reservations answered 202 whose order MySQL refused (refused.go).
	Refused RefusedReport `json:"refused"`
	// SoldDrift is activities.sold minus the units of the orders: 0 unless something wrote
	// orders without the writer's guard (a writer of a release before it, a hand edit). The
	// guard counts by sold, so below 0 it would let the orders pass the stock; a restore sets
	// it from the orders again.
	SoldDrift int64 `json:"soldDrift"`
}

// ReconcileOptions configure a Reconciler. Zero values take the defaults named.
type ReconcileOptions struct {
	// Ledger is the process's inventory.Ledger on the same Redis, shared by the pipeline's
	// parts (nil builds one).
	Ledger *inventory.Ledger
	// Every is the period of Run (default 30 s).
	Every time.Duration
	// OrphanAfter is the age after which a PENDING reservation is examined (default 5 min).
	OrphanAfter time.Duration
	// Repair lets Run confirm orphaned PENDING reservations whose order is in MySQL.
	Repair bool
	// ActivitiesKey is the set of activity ids Run walks (default keyspace.Activities;
	// tests sharing a Redis use their own).
	ActivitiesKey string
}

// Reconciler compares the stock loaded, Redis, the journal counters and MySQL. Report is
// safe for concurrent use; Run is called once.
type Reconciler struct {
	db   *gorm.DB
	rdb  redis.UniversalClient
	opts ReconcileOptions
	m    *Metrics
	log  *slog.Logger
	sc   *scripts
	scan *inventory.PendingScan
	// afterRow runs, when set, right after Restore read the activity's row, before it fences
	// the activity: where an end that checked for no restore may still write (tests).
	afterRow atomic.Pointer[func()]
}

// AfterRestoreRead sets a function Restore runs right after it read the activity's row,
// before it fences the activity (a test's way to write an end there).
func (r *Reconciler) AfterRestoreRead(f func()) { r.afterRow.Store(&f) }

// NewReconciler returns a reconciler. An error means an embedded script did not load.
func NewReconciler(db *gorm.DB, rdb redis.UniversalClient, opts ReconcileOptions, m *Metrics, log *slog.Logger) (*Reconciler, error) {
	if opts.Every <= 0 {
		opts.Every = 30 * time.Second
	}
	if opts.OrphanAfter <= 0 {
		opts.OrphanAfter = 5 * time.Minute
	}
	if opts.ActivitiesKey == "" {
		opts.ActivitiesKey = keyspace.Activities
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Reconciler{db: db, rdb: rdb, opts: opts, m: m, log: log.With("component", "reconciler")}
	sc, err := loadScripts(rdb, opts.Ledger)
	if err != nil {
		return nil, err
	}
	r.sc, r.scan = sc, sc.ledger.NewPendingScan()
	return r, nil
}

// Report reconciles one activity now.
func (r *Reconciler) Report(ctx context.Context, activityID string) (Report, error) {
	c, err := r.sc.ledger.Counts(ctx, activityID)
	if errors.Is(err, inventory.ErrNotFound) {
		return Report{}, fmt.Errorf("%w: %s", ErrUnknownActivity, activityID)
	}
	if err != nil {
		return Report{}, fmt.Errorf("order: %w", err)
	}
	// One statement, so the sum and the counter are read at one point of MySQL's history.
	var db struct {
		Units int64
		Sold  *int64
	}
	if err := r.db.WithContext(ctx).Raw("SELECT COALESCE((SELECT SUM(quantity) FROM orders WHERE activity_id = ?), 0) AS units, "+
		"(SELECT sold FROM activities WHERE id = ?) AS sold", activityID, activityID).Scan(&db).Error; err != nil {
		return Report{}, fmt.Errorf("order: sum orders of %s: %w", activityID, err)
	}
	sum := db.Units
	rep := Report{Stock: c.Stock, RedisRemaining: c.Remaining, Compensated: c.Compensated}
	rep.Reserved = c.Taken
	rep.JournalPending = c.Taken - c.Relayed
	rep.InFlight = c.Relayed - c.Confirmed - c.Failed
	rep.OrdersInDB = sum
	if db.Sold != nil {
		rep.SoldDrift = *db.Sold - sum
	}
	rep.Drift = rep.Stock - rep.RedisRemaining - rep.OrdersInDB - rep.JournalPending - rep.InFlight
	if rep.Lost, err = r.lostReport(ctx, activityID); err != nil {
		return Report{}, err
	}
	if rep.Refused, err = r.Refused(ctx, activityID); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// Run reconciles every activity of sk:activities each Every until ctx is done, exports
// drift, journal lag and in-flight units, logs a line for each activity with drift, and
// (with Repair) confirms orphaned reservations whose order is in MySQL. It returns nil when
// ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
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
	if !keyspace.ValidName(id) {
		return nil
	}
	r.m.refusedSeries(id) // at 0 before the first refusal, so an alert on its increase fires
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
	r.m.OrdersWritten.WithLabelValues(id) // the funnel's last steps exist at 0 from the first round
	r.m.ActivityCompensations.WithLabelValues(id)
	r.m.JournalLag.WithLabelValues(id).Set(float64(rep.JournalPending))
	r.m.InFlight.WithLabelValues(id).Set(float64(rep.InFlight))
	r.m.Orphans.WithLabelValues(id).Set(float64(orphans))
	if rep.SoldDrift != 0 {
		r.log.Error("activities.sold differs from the units of the orders: orders were written without the writer's guard; restore the activity to set it from the orders",
			"activity", id, "soldDrift", rep.SoldDrift, "ordersInDb", rep.OrdersInDB)
	}
	if rep.Drift != 0 {
		r.log.Warn("reconciliation drift", "activity", id, "drift", rep.Drift, "stock", rep.Stock,
			"redisRemaining", rep.RedisRemaining, "ordersInDb", rep.OrdersInDB, "journalPending", rep.JournalPending,
			"inFlight", rep.InFlight, "compensated", rep.Compensated)
	}
	return nil
}

// repair finds the activity's reservations PENDING for longer than OrphanAfter and
// confirms those whose order is in MySQL. It returns how many old PENDING reservations it
// could not repair; they are logged (their order may still be on its way, or the
// reservation was lost: nothing is guessed).
func (r *Reconciler) repair(ctx context.Context, activityID string) (int, error) {
	old, err := r.scan.Old(ctx, activityID, r.opts.OrphanAfter)
	if errors.Is(err, inventory.ErrNotFound) {
		return 0, fmt.Errorf("%w: %s", ErrUnknownActivity, activityID)
	}
	if err != nil {
		return 0, fmt.Errorf("order: %w", err)
	}
	orphans := 0
	const chunk = 500
	for from := 0; from < len(old); from += chunk {
		part := old[from:min(from+chunk, len(old))]
		rids := make([]string, len(part))
		for i, o := range part {
			rids[i] = o.ReservationID
		}
		var found []struct {
			ID            int64
			ReservationID string
		}
		if err := r.db.WithContext(ctx).Model(&sql.Order{}).Select("id", "reservation_id").
			Where("reservation_id IN ?", rids).Find(&found).Error; err != nil {
			return orphans, fmt.Errorf("order: look up orders: %w", err)
		}
		ids := make(map[string]int64, len(found))
		for _, f := range found {
			ids[f.ReservationID] = f.ID
		}
		var cs []inventory.Confirmation
		for _, o := range part {
			id, ok := ids[o.ReservationID]
			if !ok {
				orphans++
				r.log.Warn("orphaned reservation: PENDING, no order in MySQL", "reservation", o.ReservationID, "ts", o.TS)
				continue
			}
			cs = append(cs, inventory.Confirmation{ReservationID: o.ReservationID, OrderID: id})
		}
		if len(cs) == 0 {
			continue
		}
		res, err := r.sc.ledger.Confirm(ctx, cs)
		for i, x := range res {
			if x == inventory.Confirmed {
				r.m.Repairs.WithLabelValues("confirm").Inc()
				r.log.Info("repaired: confirmed a PENDING reservation whose order is in MySQL", "reservation", cs[i].ReservationID, "order", cs[i].OrderID)
			}
		}
		if err != nil {
			return orphans, fmt.Errorf("order: %w", err)
		}
	}
	return orphans, nil
}
