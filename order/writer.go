package order

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/sql"
)

// WriterOptions configure a Writer. Zero values take the defaults named.
type WriterOptions struct {
	// BatchSize is the most orders in one INSERT (default 200).
	BatchSize int
	// MaxOrdersPerSecond caps the rate orders reach MySQL (token bucket; default 5000;
	// negative means no cap).
	MaxOrdersPerSecond float64
	// LockTTL is the expiry of an (activity, user) lock (default 10 s); MySQL work under a
	// lock is bounded by half of it.
	LockTTL time.Duration
	// LockWait is how long to wait for a lock held by another writer (default 2 s).
	LockWait time.Duration
	// MaxAttempts is the delivery count after which a message that still fails for a
	// reason other than an unavailable MySQL or Redis is dead-lettered and compensated
	// (default 16).
	MaxAttempts int
	// PoolSize is the most MySQL connections the writer's pool opens (default 8). NewWriter
	// applies it to db, which must be the writer's own handle.
	PoolSize int
	// Retries is how many times a batch that failed for a transient reason is retried in
	// process before the handler returns the error (default 2).
	Retries int
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
	err  error
	lim  *rate.Limiter
	comp *Compensator
}

// NewWriter returns a writer. It sets db's pool to opts.PoolSize connections, so db must
// not be shared with other parts.
func NewWriter(db *gorm.DB, rdb redis.UniversalClient, opts WriterOptions, m *Metrics, log *slog.Logger) *Writer {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 200
	}
	if opts.MaxOrdersPerSecond == 0 {
		opts.MaxOrdersPerSecond = 5000
	}
	if opts.LockTTL <= 0 {
		opts.LockTTL = 10 * time.Second
	}
	if opts.LockWait <= 0 {
		opts.LockWait = 2 * time.Second
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
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{db: db, rdb: rdb, opts: opts, m: m, log: log.With("component", "writer")}
	w.sc, w.err = loadScripts()
	if sdb, err := db.DB(); err != nil {
		w.err = errors.Join(w.err, fmt.Errorf("order: writer pool: %w", err))
	} else {
		sdb.SetMaxOpenConns(opts.PoolSize)
		sdb.SetMaxIdleConns(opts.PoolSize)
		sdb.SetConnMaxIdleTime(5 * time.Minute)
	}
	lim := rate.Limit(opts.MaxOrdersPerSecond)
	if opts.MaxOrdersPerSecond < 0 {
		lim = rate.Inf
	}
	w.lim = rate.NewLimiter(lim, max(opts.BatchSize, int(math.Ceil(opts.MaxOrdersPerSecond/10))))
	w.comp = NewCompensator(db, rdb, m, log)
	w.comp.lockTTL, w.comp.lockWait = opts.LockTTL, opts.LockWait
	return w
}

// Compensator is the writer's compensator (same pool, same locks).
func (w *Writer) Compensator() *Compensator { return w.comp }

// Handle writes the batch: it returns nil once every message is an order committed in MySQL
// and confirmed in Redis, or failed for good and compensated, or dropped as malformed. Any
// other outcome returns an error and the queue delivers the batch again (re-handling is
// idempotent). A panic is recovered and returned as a *PanicError.
func (w *Writer) Handle(ctx context.Context, msgs []Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.m.WriterRetries.WithLabelValues("panic").Inc()
			w.log.Error("writer panicked; batch will be redelivered", "panic", r)
			err = &PanicError{Value: r}
		}
	}()
	if w.err != nil {
		return w.err
	}
	seen := make(map[string]bool, len(msgs))
	var good, late []Message
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			w.m.DeadLetters.WithLabelValues("bad_message").Inc()
			w.log.Error("dropping malformed message", "reservation", m.ReservationID, "err", err)
			continue
		}
		if seen[m.ReservationID] {
			continue
		}
		seen[m.ReservationID] = true
		if m.Attempt >= w.opts.MaxAttempts {
			late = append(late, m)
		} else {
			good = append(good, m)
		}
	}
	var errs []error
	for len(good) > 0 {
		n := min(len(good), w.opts.BatchSize)
		if err := w.writeRetrying(ctx, good[:n]); err != nil {
			errs = append(errs, err)
		}
		good = good[n:]
	}
	// Messages past MaxAttempts are written alone, so one poison message cannot hold a
	// batch back; one that still fails for a non-transient reason is dead-lettered.
	for _, m := range late {
		err := w.writeRetrying(ctx, []Message{m})
		if err == nil {
			continue
		}
		var pe *PanicError
		if isTransient(err) && !errors.As(err, &pe) {
			errs = append(errs, err)
			continue
		}
		if err := w.deadLetter(ctx, m, "max_attempts: "+err.Error()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeRetrying writes one batch, retrying transient failures a few times in process.
func (w *Writer) writeRetrying(ctx context.Context, batch []Message) error {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := w.write(ctx, batch)
		if err == nil || !isTransient(err) || attempt >= w.opts.Retries || ctx.Err() != nil {
			if err != nil {
				w.m.WriterRetries.WithLabelValues(retryReason(err)).Inc()
			}
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff *= 2
	}
}

func retryReason(err error) string {
	var me *mysql.MySQLError
	switch {
	case errors.Is(err, ErrLockBusy):
		return "lock"
	case errors.As(err, &me), errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn):
		return "mysql"
	default:
		var pe *PanicError
		if errors.As(err, &pe) {
			return "panic"
		}
		return "other"
	}
}

// errPermanent marks a failure that retrying cannot cure.
var errPermanent = errors.New("permanent")

// isTransient reports whether err may go away by itself (MySQL or Redis unreachable,
// timeouts, lock contention, deadlocks). MySQL errors about the data are permanent.
func isTransient(err error) bool {
	if errors.Is(err, errPermanent) || errors.Is(err, ErrBadMessage) {
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1040, 1053, 1205, 1213, 1317, 2002, 2003, 2006, 2013, 1927, 1290, 1836:
			return true
		}
		return false
	}
	return true
}

// write handles one batch of distinct, valid reservations.
func (w *Writer) write(ctx context.Context, batch []Message) error {
	if err := w.lim.WaitN(ctx, len(batch)); err != nil {
		return err
	}
	locks, err := lockUsers(ctx, w.rdb, w.sc, batch, w.opts.LockTTL, w.opts.LockWait)
	if err != nil {
		return err
	}
	released := false
	release := func() {
		if !released {
			released = true
			if err := locks.release(context.WithoutCancel(ctx), w.rdb, w.sc); err != nil {
				w.log.Warn("releasing writer locks failed (they expire)", "err", err)
			}
		}
	}
	defer release()

	// A reservation compensated while its message waited must not become an order.
	todo, err := w.skipFailed(ctx, batch)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		return nil
	}
	dbctx, cancel := context.WithTimeout(ctx, w.opts.LockTTL/2)
	defer cancel()
	orderIDs, poison, err := w.insert(dbctx, todo)
	if err != nil {
		return err
	}
	release()
	w.m.WriterBatches.Inc()

	var errs []error
	calls := make([]scriptCall, 0, len(todo))
	confirmed := make([]Message, 0, len(todo))
	for _, m := range todo {
		id, ok := orderIDs[m.ReservationID]
		if !ok {
			continue
		}
		keys, n := m.keys()
		calls = append(calls, scriptCall{keys: []string{keys.Record(n), keys.Stats()}, args: []any{id}})
		confirmed = append(confirmed, m)
	}
	cmds, err := runScripts(ctx, w.rdb, w.sc.confirm, calls)
	if err != nil {
		errs = append(errs, fmt.Errorf("order: confirm: %w", err))
	}
	for i, c := range cmds {
		if c.Err() != nil {
			continue
		}
		code, _ := c.Int64()
		res, err := confirmResult(code)
		switch {
		case err != nil:
			errs = append(errs, err)
		case res == Confirmed:
			w.m.WriterCommits.Inc()
		case res == ConfirmConflict:
			w.log.Error("order exists for a FAILED reservation", "reservation", confirmed[i].ReservationID)
		case res == ConfirmMissing:
			w.log.Warn("order committed but the reservation record is gone", "reservation", confirmed[i].ReservationID)
		}
	}
	for _, p := range poison {
		if err := w.deadLetter(ctx, p.msg, p.reason); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// skipFailed drops reservations whose record is FAILED already, after finishing their
// compensation if an earlier attempt was cut short.
func (w *Writer) skipFailed(ctx context.Context, batch []Message) ([]Message, error) {
	pipe := w.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(batch))
	for i, m := range batch {
		k, n := m.keys()
		cmds[i] = pipe.HGet(ctx, k.Record(n), "status")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("order: read statuses: %w", err)
	}
	out := batch[:0:0]
	for i, m := range batch {
		if cmds[i].Val() == "FAILED" {
			// Finish a compensation that was cut short (the lock is held).
			if err := w.comp.finishLocked(ctx, m); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

type poisoned struct {
	msg    Message
	reason string
}

// insert writes the orders (INSERT ... ON DUPLICATE KEY UPDATE id=id) and reads back which
// reservations have an order. A reservation absent after a successful insert collided with
// another reservation's (activity, user, seq): it is poison. When the batch insert fails
// for a reason in the data, the batch is written row by row to isolate the bad rows.
func (w *Writer) insert(ctx context.Context, batch []Message) (map[string]int64, []poisoned, error) {
	rows := make([]sql.Order, len(batch))
	rids := make([]string, len(batch))
	for i, m := range batch {
		rows[i] = sql.Order{ReservationID: m.ReservationID, ActivityID: m.ActivityID, UserID: m.UserID,
			Quantity: m.Quantity, Seq: m.Seq, Status: "CONFIRMED"}
		rids[i] = m.ReservationID
	}
	tx := w.db.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true})
	var poison []poisoned
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
		if isTransient(err) {
			return nil, nil, fmt.Errorf("order: insert: %w", err)
		}
		w.log.Warn("batch insert failed on its data; writing row by row", "orders", len(rows), "err", err)
		for i := range batch {
			row := sql.Order{ReservationID: rows[i].ReservationID, ActivityID: rows[i].ActivityID,
				UserID: rows[i].UserID, Quantity: rows[i].Quantity, Seq: rows[i].Seq, Status: "CONFIRMED"}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
				if isTransient(err) {
					return nil, nil, fmt.Errorf("order: insert: %w", err)
				}
				poison = append(poison, poisoned{batch[i], "insert: " + err.Error()})
			}
		}
	}
	var found []struct {
		ID            int64
		ReservationID string
	}
	if err := tx.Model(&sql.Order{}).Select("id", "reservation_id").Where("reservation_id IN ?", rids).
		Find(&found).Error; err != nil {
		return nil, nil, fmt.Errorf("order: read back: %w", err)
	}
	ids := make(map[string]int64, len(found))
	for _, f := range found {
		ids[f.ReservationID] = f.ID
	}
	bad := make(map[string]bool, len(poison))
	for _, p := range poison {
		bad[p.msg.ReservationID] = true
	}
	for _, m := range batch {
		if _, ok := ids[m.ReservationID]; !ok && !bad[m.ReservationID] {
			poison = append(poison, poisoned{m, "seq_conflict"})
		}
	}
	return ids, poison, nil
}

// deadLetter fails the reservation for good and compensates it. An order that turns out to
// exist is confirmed instead.
func (w *Writer) deadLetter(ctx context.Context, m Message, reason string) error {
	err := w.comp.Compensate(ctx, m, reason)
	switch {
	case err == nil:
		w.m.DeadLetters.WithLabelValues(reasonLabel(reason)).Inc()
		w.log.Warn("reservation dead-lettered and compensated", "reservation", m.ReservationID, "reason", reason)
		return nil
	case errors.Is(err, ErrOrderExists), errors.Is(err, ErrAlreadyConfirmed):
		return nil
	case errors.Is(err, ErrNoRecord):
		w.m.DeadLetters.WithLabelValues(reasonLabel(reason)).Inc()
		w.log.Error("dead letter without a reservation record; nothing to compensate", "reservation", m.ReservationID, "reason", reason)
		return nil
	default:
		return err
	}
}

// reasonLabel maps a free-text reason to a bounded metric label.
func reasonLabel(reason string) string {
	for _, l := range []string{"seq_conflict", "insert", "max_attempts"} {
		if len(reason) >= len(l) && reason[:len(l)] == l {
			return l
		}
	}
	return "other"
}
