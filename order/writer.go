package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/logrepeat"
	"github.com/seckill/seckill/inventory"
)

// WriterOptions configure a Writer. Zero values take the defaults named.
type WriterOptions struct {
	// BatchSize is the most orders in one INSERT (default 200).
	BatchSize int
	// MaxOrdersPerSecond caps the rate orders reach MySQL (token bucket; default 5000;
	// negative means no cap).
	MaxOrdersPerSecond float64
	// StatementTimeout bounds one guarded transaction, a combined batch of up to 1,000
	// orders (default 5 s).
	StatementTimeout time.Duration
	// CompensationLockTTL is the expiry of the (activity, user) lock the writer's
	// compensator takes (default 10 s).
	CompensationLockTTL time.Duration
	// LockWait is how long the compensator waits for a lock held elsewhere (default 2 s).
	LockWait time.Duration
	// MaxAttempts is the delivery count after which a message whose write panics is
	// written alone and, if it panics alone, dead-lettered and compensated (default 16).
	// A failing MySQL or Redis never dead-letters a message, however long it lasts: only a
	// row that MySQL can never store (poison, see classify) is dead-lettered, at once.
	MaxAttempts int
	// PoolSize is the most MySQL connections the writer's pool opens (default 8). NewWriter
	// applies it to db, which must be the writer's own handle.
	PoolSize int
	// Retries is how many times a batch that failed for a transient reason is retried in
	// process before the handler returns the error (default 2).
	Retries int
	// MaxBackoff caps the pause before a retry; the pause doubles with every write that
	// failed in a row, writer-wide, from 50 ms (default 5 s).
	MaxBackoff time.Duration
	// UnhealthyAfter is how many writes in a row must fail, with none succeeding, before
	// Healthy reports the writer unhealthy (default 3).
	UnhealthyAfter int
	// Ledger is the process's inventory.Ledger on the same Redis, shared by the pipeline's
	// parts and the writer's compensator (nil builds one).
	Ledger *inventory.Ledger
	// NoRowWait is how long a message of an activity MySQL has no row for is handed back to
	// wait for the row (the admin create writes Redis, then MySQL, and is retried when MySQL
	// fails), counted from this writer's first transaction that found no row for the
	// activity (not from the reservation: a MySQL outage delays both); after it, the message
	// is dead-lettered (default 1 min).
	NoRowWait time.Duration
}

// Writer turns queued reservations into MySQL orders and confirms them in Redis. Its Handle
// method is the Subscriber's handler. Safe for concurrent use (the queue may call Handle
// from several goroutines).
type Writer struct {
	db   *gorm.DB
	rdb  redis.UniversalClient
	opts WriterOptions
	m    *Metrics
	log  *slog.Logger
	sc   *scripts
	lim  *rate.Limiter
	comp *Compensator
	rl   *logrepeat.Log
	gc   combiner // the guarded transactions, one at a time, batches combined (groupcommit.go)

	mu       sync.Mutex
	noRow    map[string]time.Time // activity -> when a transaction first found no row for it (guarded by mu)
	failures int                  // writes failed in a row (guarded by mu)
	lastErr  error                // the last failure of the streak (guarded by mu)
	since    time.Time            // when the streak began (guarded by mu)

	beforeInsert func([]Message) // test hook: runs before the insert of a batch
}

// noRowFor says how long this writer has found no MySQL row for the activity (0 at the first
// time); rowFound forgets it once a row is there.
func (w *Writer) noRowFor(activity string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.noRow == nil {
		w.noRow = map[string]time.Time{}
	}
	first, ok := w.noRow[activity]
	if !ok {
		w.noRow[activity] = time.Now()
		return 0
	}
	return time.Since(first)
}

func (w *Writer) rowFound(activity string) {
	w.mu.Lock()
	delete(w.noRow, activity)
	w.mu.Unlock()
}

// ErrNoActivityRow: a batch held reservations of an activity MySQL has no row for (yet: the
// admin create writes Redis first, then MySQL, and a failed MySQL write leaves the activity in
// Redis until the create is retried). They are neither written nor refused; the batch is
// handed back and comes again, for WriterOptions.NoRowWait.
var ErrNoActivityRow = errors.New("order: the activity has no row in MySQL")

// Healthy returns nil unless the writer's last UnhealthyAfter writes or more all failed with
// none succeeding since (MySQL or Redis sick); the error then names the streak, its length
// and the last error's class. An idle writer is healthy. The writer role's /readyz reports
// it. Safe for concurrent use.
func (w *Writer) Healthy() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failures < w.opts.UnhealthyAfter {
		return nil
	}
	return fmt.Errorf("order: writer: %d writes failed in a row for %s (last: %s: %v)",
		w.failures, time.Since(w.since).Round(time.Millisecond), classify(w.lastErr), w.lastErr)
}

// noteWrite records the outcome of one write for Healthy and the metrics.
func (w *Writer) noteWrite(err error) {
	if err != nil {
		c := classify(err)
		if c == classCanceled {
			return
		}
		w.m.WriterErrors.WithLabelValues(string(c)).Inc()
	}
	w.mu.Lock()
	if err == nil {
		w.failures = 0
		w.lastErr = nil
		w.m.WriterFailing.Set(0)
		w.m.WriterLastSuccess.SetToCurrentTime()
		w.mu.Unlock()
		w.rl.OK("write", "writing orders works again")
		return
	}
	if w.failures == 0 {
		w.since = time.Now()
	}
	w.failures++
	w.lastErr = err
	n := w.failures
	w.m.WriterFailing.Set(float64(n))
	w.mu.Unlock()
	w.rl.Warn("write", "writing orders failed; the batch waits and is retried", "class", string(classify(err)),
		"inARow", n, "err", err)
}

// backoff is the pause before the next retry: 50 ms doubled per write failed in a row,
// writer-wide, capped at MaxBackoff.
func (w *Writer) backoff() time.Duration {
	w.mu.Lock()
	n := w.failures
	w.mu.Unlock()
	return backoff.Nth(50*time.Millisecond, w.opts.MaxBackoff, n)
}

// NewWriter returns a writer. It sets db's pool to opts.PoolSize connections, so db must
// not be shared with other parts. An error means an embedded script did not load or db has
// no pool.
func NewWriter(db *gorm.DB, rdb redis.UniversalClient, opts WriterOptions, m *Metrics, log *slog.Logger) (*Writer, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 200
	}
	if opts.MaxOrdersPerSecond == 0 {
		opts.MaxOrdersPerSecond = 5000
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = 5 * time.Second
	}
	if opts.CompensationLockTTL <= 0 {
		opts.CompensationLockTTL = defaultCompensationLockTTL
	}
	if opts.LockWait <= 0 {
		opts.LockWait = defaultLockWait
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 16
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = 8
	}
	if opts.Retries <= 0 {
		opts.Retries = 2
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.UnhealthyAfter <= 0 {
		opts.UnhealthyAfter = 3
	}
	if opts.NoRowWait <= 0 {
		opts.NoRowWait = time.Minute
	}
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{db: db, rdb: rdb, opts: opts, m: m, log: log.With("component", "writer")}
	w.rl = logrepeat.New(w.log, 0)
	sc, err := loadScripts(rdb, opts.Ledger)
	if err != nil {
		return nil, err
	}
	w.sc = sc
	sdb, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("order: writer pool: %w", err)
	}
	sdb.SetMaxOpenConns(opts.PoolSize)
	sdb.SetMaxIdleConns(opts.PoolSize)
	sdb.SetConnMaxIdleTime(5 * time.Minute)
	lim := rate.Limit(opts.MaxOrdersPerSecond)
	if opts.MaxOrdersPerSecond < 0 {
		lim = rate.Inf
	}
	w.lim = rate.NewLimiter(lim, max(opts.BatchSize, int(math.Ceil(opts.MaxOrdersPerSecond/10))))
	w.comp = newCompensator(db, rdb, sc, opts.CompensationLockTTL, opts.LockWait, m, log)
	return w, nil
}

// Compensator is the writer's compensator (same pool, same locks).
func (w *Writer) Compensator() *Compensator { return w.comp }

// Handle writes the batch: it returns nil once every message is an order committed in MySQL
// and confirmed in Redis, or failed for good and compensated, or dropped as malformed. Any
// other outcome returns an error and the queue delivers the batch again (re-handling is
// idempotent). A write that panics is recovered per batch (safeWrite), so one message can be
// told from its batch; a panic anywhere else is the queue's (safeHandle).
func (w *Writer) Handle(ctx context.Context, msgs []Message) error {
	seen := make(map[string]bool, len(msgs))
	good := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			w.m.DeadLetters.WithLabelValues(string(causeBadMessage)).Inc()
			w.log.Error("dropping malformed message", "reservation", m.ReservationID, "err", err)
			continue
		}
		if seen[m.ReservationID] {
			continue
		}
		seen[m.ReservationID] = true
		good = append(good, m)
	}
	var errs []error
	for len(good) > 0 {
		n := min(len(good), w.opts.BatchSize)
		batch := good[:n]
		good = good[n:]
		err := w.writeRetrying(ctx, batch, false)
		if err == nil {
			continue
		}
		var pe *PanicError
		if !errors.As(err, &pe) {
			errs = append(errs, err)
			if c := classify(err); c != classLock && c != classRedis {
				// MySQL is sick: the rest would only wait for it too.
				break
			}
			continue
		}
		// A write that panics may be caused by one message. Once the batch holds a message
		// delivered MaxAttempts times, every message is written alone, and one of those
		// that still panics alone is dead-lettered.
		if !slices.ContainsFunc(batch, func(m Message) bool { return m.Attempt >= w.opts.MaxAttempts }) {
			errs = append(errs, err)
			continue
		}
		for _, m := range batch {
			err := w.writeRetrying(ctx, []Message{m}, true)
			switch {
			case err == nil:
			case !errors.As(err, &pe) || m.Attempt < w.opts.MaxAttempts:
				errs = append(errs, err)
			default:
				if err := w.deadLetter(ctx, m, causeMaxAttempts, err.Error()); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// writeRetrying writes one batch, retrying failures other than panics a few times in
// process with the writer-wide backoff. alone writes it in a transaction of its own (not
// combined with other callers' batches: a message isolated for its panics must not fail
// them, nor they it).
func (w *Writer) writeRetrying(ctx context.Context, batch []Message, alone bool) error {
	for attempt := 0; ; attempt++ {
		err := w.safeWrite(ctx, batch, alone)
		w.noteWrite(err)
		var pe *PanicError
		if err == nil || errors.As(err, &pe) || attempt >= w.opts.Retries || ctx.Err() != nil {
			if err != nil {
				w.m.WriterRetries.WithLabelValues(retryReason(err)).Inc()
			}
			return err
		}
		if err := backoff.Sleep(ctx, w.backoff()); err != nil {
			return err
		}
	}
}

// safeWrite is write with a panic turned into a *PanicError.
func (w *Writer) safeWrite(ctx context.Context, batch []Message, alone bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("writing a batch panicked", "panic", r, "orders", len(batch))
			err = &PanicError{Value: r}
		}
	}()
	return w.write(ctx, batch, alone)
}

// write handles one batch of distinct, valid reservations: insert decides, in one MySQL
// transaction under the activities' row locks, which become orders, which are refused
// (refuse), which are poison (dead-lettered) and which were compensated (finished here);
// confirm then settles the orders in Redis.
func (w *Writer) write(ctx context.Context, batch []Message, alone bool) error {
	if err := w.lim.WaitN(ctx, len(batch)); err != nil {
		return err
	}
	if w.beforeInsert != nil {
		w.beforeInsert(batch)
	}
	var res written
	var err error
	if alone {
		res, err = w.insertNow(ctx, batch)
	} else {
		res, err = w.insert(ctx, batch)
	}
	if err != nil {
		return err
	}
	w.m.WriterBatches.Inc()
	for _, x := range res.stale {
		w.dropStale(x.msg, x.current)
	}
	for a := range res.gens {
		w.m.refusedSeries(a)
	}
	errs := []error{w.confirm(ctx, batch, res.ids), w.refuse(ctx, res.refused, res.gens)}
	for _, m := range res.compensated {
		// Compensated before its order: its row is committed; finish the Redis steps of a
		// compensation cut short after it (one HGET when they are done).
		switch err := w.comp.finish(ctx, m); {
		case errors.Is(err, ErrStale):
			// A restore replaced its incarnation and counted its unit unsold: nothing of
			// the compensation is left to do.
			w.m.WriterStale.Inc()
			w.log.Warn("compensation of a reservation of an incarnation a restore replaced left as it is (the restore counted its unit unsold)",
				"reservation", m.ReservationID, "activity", m.ActivityID, "err", err)
		case err != nil:
			errs = append(errs, err)
		}
	}
	for _, p := range res.poison {
		w.m.WriterErrors.WithLabelValues(string(classPoison)).Inc()
		if err := w.deadLetter(ctx, p.msg, p.cause, p.detail); err != nil {
			errs = append(errs, err)
		}
	}
	if len(res.unknown) > 0 {
		errs = append(errs, fmt.Errorf("%w: %d reservations of %s wait for it", ErrNoActivityRow, len(res.unknown), res.unknown[0].ActivityID))
	}
	return errors.Join(errs...)
}

// refuse settles in Redis the reservations whose order MySQL refused: each activity is fenced
// first (inventory's FenceRefused: no instance sells from Redis counts that proved wrong, until
// a restore rebuilds them from MySQL), then each record fails without giving its units back
// (inventory's Refuse). A refusal is counted, and the batch's are logged in one ERROR line
// with their buyers, when its record turns FAILED here (or, refused by this batch, has no
// record left): a redelivery after a crash between the commit and these steps counts it
// then, and one whose steps ran before counts nothing again.
func (w *Writer) refuse(ctx context.Context, rs []refusal, gens map[string]string) error {
	if len(rs) == 0 {
		return nil
	}
	var errs []error
	var acts, list []string
	for _, r := range rs {
		a := r.msg.ActivityID
		if !slices.Contains(acts, a) {
			acts = append(acts, a)
			if err := w.sc.ledger.FenceRefused(ctx, a, gens[a]); err != nil {
				errs = append(errs, fmt.Errorf("order: %w", err))
			}
		}
		code, err := w.sc.ledger.Refuse(ctx, r.msg.ReservationID)
		if err != nil {
			errs = append(errs, fmt.Errorf("order: %w", err))
			continue
		}
		if code == inventory.FailedNow || r.fresh && code == inventory.FailMissing {
			w.m.Refused.WithLabelValues(a, r.reason).Inc()
			list = append(list, r.msg.ReservationID+" user="+r.msg.UserID+" "+r.reason)
		}
	}
	if len(list) > 0 {
		w.log.Error("MySQL refused orders of reservations Redis had answered 202: Redis lost or duplicated state; "+
			"the activities are fenced until restored from MySQL (POST /admin/v1/activities/{id}/restore)",
			"activities", acts, "refused", list)
	}
	return errors.Join(errs...)
}

// confirm confirms in Redis the reservations that have an order (inventory's Confirm: one
// script call per shard of the batch).
func (w *Writer) confirm(ctx context.Context, batch []Message, orderIDs map[string]int64) error {
	var cs []inventory.Confirmation
	var msgs []Message
	for _, m := range batch {
		id, ok := orderIDs[m.ReservationID]
		if !ok {
			continue
		}
		cs = append(cs, inventory.Confirmation{ReservationID: m.ReservationID, OrderID: id, UserHash: m.UserHash})
		msgs = append(msgs, m)
	}
	var errs []error
	var results []inventory.ConfirmResult
	if len(cs) > 0 {
		var err error
		results, err = w.sc.ledger.Confirm(ctx, cs)
		if err != nil {
			errs = append(errs, fmt.Errorf("order: %w", err))
		}
	}
	var missing []string
	for i, res := range results {
		m := msgs[i]
		switch res {
		case inventory.Confirmed:
			w.m.WriterCommits.Inc()
			w.m.OrdersWritten.WithLabelValues(m.ActivityID).Inc()
		case inventory.ConfirmConflict:
			// The record is FAILED while MySQL holds the order: a record fails only after its
			// compensations row is committed, and the insert read none under the activity's
			// lock, so only a Redis that duplicated state gets here. MySQL has the last word:
			// the order stands.
			w.log.Error("order committed; its reservation record is FAILED, the order stands",
				"reservation", m.ReservationID, "activity", m.ActivityID)
		case inventory.ConfirmMissing:
			missing = append(missing, m.ReservationID)
		case inventory.ConfirmOther:
			// The number was handed out again (Redis forgot its counter): the record is the
			// other reservation's, which its own message settles; this order stands.
			w.log.Warn("order committed; its reservation number now holds another reservation's record, left alone",
				"reservation", m.ReservationID)
		}
	}
	if len(missing) > 0 {
		// The record is gone (an archive): the order stands, as the insert found no
		// compensations row under the activity's lock.
		w.log.Warn("orders committed but their reservation records are gone", "reservations", missing)
	}
	return errors.Join(errs...)
}
