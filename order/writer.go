package order

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// WriterOptions configure a Writer. Zero values take the defaults named.
type WriterOptions struct {
	// BatchSize is the most orders in one INSERT (default 200).
	BatchSize int
	// MaxOrdersPerSecond caps the rate orders reach MySQL (token bucket; default 5000;
	// negative means no cap).
	MaxOrdersPerSecond float64
	// StatementTimeout bounds the MySQL statements of one batch (default 5 s). The writer
	// takes no lock: MySQL's unique keys order its writes.
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
	rl   *RepeatLog

	mu       sync.Mutex
	failures int       // writes failed in a row (guarded by mu)
	lastErr  error     // the last failure of the streak (guarded by mu)
	since    time.Time // when the streak began (guarded by mu)

	beforeInsert func([]Message) // test hook: runs before the insert of a batch
}

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
	d := 50 * time.Millisecond
	for i := 1; i < n && d < w.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.opts.MaxBackoff)
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
		opts.CompensationLockTTL = 10 * time.Second
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
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.UnhealthyAfter <= 0 {
		opts.UnhealthyAfter = 3
	}
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{db: db, rdb: rdb, opts: opts, m: m, log: log.With("component", "writer")}
	w.rl = NewRepeatLog(w.log, 0)
	sc, err := loadScripts(rdb)
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
	if w.comp, err = NewCompensator(db, rdb, m, log); err != nil {
		return nil, err
	}
	w.comp.lockTTL, w.comp.lockWait = opts.CompensationLockTTL, opts.LockWait
	return w, nil
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
	seen := make(map[string]bool, len(msgs))
	good := make([]Message, 0, len(msgs))
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
		good = append(good, m)
	}
	var errs []error
	for len(good) > 0 {
		n := min(len(good), w.opts.BatchSize)
		batch := good[:n]
		good = good[n:]
		err := w.writeRetrying(ctx, batch)
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
			err := w.writeRetrying(ctx, []Message{m})
			switch {
			case err == nil:
			case !errors.As(err, &pe) || m.Attempt < w.opts.MaxAttempts:
				errs = append(errs, err)
			default:
				if err := w.deadLetter(ctx, m, "max_attempts: "+err.Error()); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// writeRetrying writes one batch, retrying failures other than panics a few times in
// process with the writer-wide backoff.
func (w *Writer) writeRetrying(ctx context.Context, batch []Message) error {
	for attempt := 0; ; attempt++ {
		err := w.safeWrite(ctx, batch)
		w.noteWrite(err)
		var pe *PanicError
		if err == nil || errors.As(err, &pe) || attempt >= w.opts.Retries || ctx.Err() != nil {
			if err != nil {
				w.m.WriterRetries.WithLabelValues(retryReason(err)).Inc()
			}
			return err
		}
		select {
		case <-time.After(w.backoff()):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// safeWrite is write with a panic turned into a *PanicError.
func (w *Writer) safeWrite(ctx context.Context, batch []Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("writing a batch panicked", "panic", r, "orders", len(batch))
			err = &PanicError{Value: r}
		}
	}()
	return w.write(ctx, batch)
}

func retryReason(err error) string {
	switch classify(err) {
	case classLock:
		if errors.Is(err, ErrLockBusy) {
			return "lock"
		}
		return "mysql"
	case classRedis:
		return "redis"
	case classPanic:
		return "panic"
	case classConnection, classTimeout, classResource, classReadOnly, classServer, classPoison:
		var me *mysql.MySQLError
		if errors.As(err, &me) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
			return "mysql"
		}
	}
	return "other"
}

// errClass is what a failed write means. Only classPoison is about the order itself (the
// row can never be stored); every other class is about MySQL, Redis or the process, and
// waits.
type errClass string

const (
	classPoison     errClass = "poison"     // the row violates a constraint on its own
	classConnection errClass = "connection" // MySQL (or Redis) unreachable or the connection broke
	classTimeout    errClass = "timeout"    // a statement or the call ran out of time
	classLock       errClass = "lock"       // lock wait, deadlock, a writer lock held elsewhere
	classResource   errClass = "resource"   // disk, table, memory or thread limits
	classReadOnly   errClass = "read_only"  // server or transaction read-only (failover)
	classServer     errClass = "server"     // any other MySQL server error (schema, engine, ...)
	classRedis      errClass = "redis"      // an error answered by Redis
	classPanic      errClass = "panic"      // the write panicked
	classCanceled   errClass = "canceled"   // the caller gave up (shutdown)
	classUnknown    errClass = "unknown"    // anything else: treated as transient
)

// errClasses lists every class, to pre-create the metric's series.
var errClasses = []errClass{classPoison, classConnection, classTimeout, classLock, classResource,
	classReadOnly, classServer, classRedis, classPanic, classUnknown}

// classify says what err means for the write. MySQL errors are classified by what the code
// says about the row: only data errors of the row itself (too long, out of range, bad null,
// wrong value, check or foreign key constraint, duplicate key) are poison; every other code,
// known or not, is a state of the server that can heal.
func classify(err error) errClass {
	var me *mysql.MySQLError
	var pe *PanicError
	var re redis.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrBadMessage):
		return classPoison
	case errors.As(err, &pe):
		return classPanic
	case errors.Is(err, ErrLockBusy):
		return classLock
	case errors.As(err, &me):
		return classifyMySQL(me.Number)
	case errors.Is(err, context.Canceled):
		return classCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return classTimeout
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, redis.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return classConnection
	case errors.As(err, &re):
		return classRedis
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return classTimeout
		}
		return classConnection
	}
	return classUnknown
}

// classifyMySQL classifies a MySQL or MariaDB error code.
func classifyMySQL(code uint16) errClass {
	switch code {
	case 1048, // ER_BAD_NULL_ERROR
		1062,       // ER_DUP_ENTRY (a unique key other than the idempotent one)
		1263,       // ER_WARN_NULL_TO_NOTNULL
		1264,       // ER_WARN_DATA_OUT_OF_RANGE
		1265,       // WARN_DATA_TRUNCATED
		1292,       // ER_TRUNCATED_WRONG_VALUE
		1300,       // ER_INVALID_CHARACTER_STRING
		1366,       // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (incorrect string value)
		1367,       // ER_ILLEGAL_VALUE_FOR_TYPE
		1406,       // ER_DATA_TOO_LONG
		1411,       // ER_WRONG_VALUE_FOR_TYPE
		1451, 1452, // foreign key constraint
		1690, // ER_DATA_OUT_OF_RANGE
		3819, // MySQL ER_CHECK_CONSTRAINT_VIOLATED
		4025: // MariaDB ER_CONSTRAINT_FAILED (CHECK)
		return classPoison
	case 1040, 1042, 1043, 1044, 1045, 1053, 1077, 1079, 1080, 1081, 1152, 1153, 1154, 1155, 1156,
		1157, 1158, 1159, 1160, 1161, 1184, 1927, 2002, 2003, 2006, 2013, 2055:
		return classConnection
	case 1028, 1317, 1969, 3024:
		return classTimeout
	case 1099, 1100, 1205, 1213, 1689:
		return classLock
	case 1021, 1030, 1037, 1038, 1041, 1114, 1135, 1197, 1206, 1637:
		return classResource
	case 1223, 1290, 1792, 1836, 1874:
		return classReadOnly
	}
	if code < 5000 {
		return classServer
	}
	return classUnknown
}

// isTransient reports whether err may go away by itself: every class but poison.
func isTransient(err error) bool {
	return classify(err) != classPoison
}

// write handles one batch of distinct, valid reservations. It takes no lock: MySQL's unique
// keys make a second commit of a reservation a no-op, the insert skips a reservation with a
// compensations row, and the record's final state decides between an order and a
// compensation (an order whose confirm finds FAILED is deleted again; see undoOrders).
func (w *Writer) write(ctx context.Context, batch []Message) error {
	if err := w.lim.WaitN(ctx, len(batch)); err != nil {
		return err
	}
	if w.beforeInsert != nil {
		w.beforeInsert(batch)
	}
	dbctx, cancel := context.WithTimeout(ctx, w.opts.StatementTimeout)
	defer cancel()
	orderIDs, poison, err := w.insert(dbctx, batch)
	if err != nil {
		return err
	}
	w.m.WriterBatches.Inc()
	errs := []error{w.confirm(ctx, batch, orderIDs)}
	for _, p := range poison {
		w.m.WriterErrors.WithLabelValues(string(classPoison)).Inc()
		if err := w.deadLetter(ctx, p.msg, p.reason); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// confirm confirms in Redis the reservations that have an order (inventory's Confirm: one
// script call per shard of the batch), and undoes the orders of those whose record is FAILED.
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
	var undo []Message
	var missing []string
	var failed []Message
	byRID := make(map[string]Message, len(msgs))
	for _, m := range msgs {
		byRID[m.ReservationID] = m
	}
	for i, res := range results {
		m := msgs[i]
		switch res {
		case inventory.Confirmed:
			w.m.WriterCommits.Inc()
			w.m.OrdersWritten.WithLabelValues(m.ActivityID).Inc()
		case inventory.ConfirmConflict:
			// The reservation was failed for good (its units returned) before this
			// order's confirm: the record is the arbiter, the order goes, and a
			// compensation that was cut short is finished now.
			undo = append(undo, m)
			failed = append(failed, m)
		case inventory.ConfirmMissing:
			missing = append(missing, m.ReservationID)
		case inventory.ConfirmOther:
			// The id was handed out again (Redis forgot its counter): the record is the other
			// reservation's, which its own message settles; this order stands.
			w.log.Warn("order committed; its reservation id now names another buyer's record, left alone",
				"reservation", m.ReservationID)
		}
	}
	// A record that expired cannot arbitrate: a compensations row (written by a compensator
	// that failed the record after this order's insert) decides that the order goes.
	compensated, err := w.compensated(ctx, missing)
	if err != nil {
		errs = append(errs, err)
	}
	for _, rid := range missing {
		if compensated[rid] {
			undo = append(undo, byRID[rid])
		} else {
			w.log.Warn("order committed but the reservation record is gone", "reservation", rid)
		}
	}
	if err := w.undoOrders(ctx, undo); err != nil {
		errs = append(errs, err)
	}
	for _, m := range failed {
		if err := w.comp.finish(ctx, m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// compensated reports which of rids have a row in compensations.
func (w *Writer) compensated(ctx context.Context, rids []string) (map[string]bool, error) {
	if len(rids) == 0 {
		return nil, nil
	}
	var found []string
	if err := w.db.WithContext(ctx).Model(&sql.Compensation{}).Where("reservation_id IN ?", rids).
		Pluck("reservation_id", &found).Error; err != nil {
		return nil, fmt.Errorf("order: look up compensations: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, rid := range found {
		out[rid] = true
	}
	return out, nil
}

// undoOrders deletes the orders of reservations whose record is FAILED: a compensation won
// the race against this order's confirm, and returned the units already. A writer that dies
// between its commit and this delete leaves the order until the message comes again: the
// insert is then a no-op and the confirm finds FAILED once more. Each activity's deletes run
// under its incarnation guard (guardIncarnation): once a restore claimed a newer incarnation,
// its read counted these orders as sold and the units the compensation gave back to the old
// layout are gone with it, so the orders stand (deleting one would lose its unit); a claim in
// progress waits for the delete, whose absence its read then sees.
func (w *Writer) undoOrders(ctx context.Context, msgs []Message) error {
	type group struct {
		activity string
		inc      int
	}
	var order []group
	rids := map[group][]string{}
	for _, m := range msgs {
		g := group{m.ActivityID, inventory.Incarnation(m.Epoch)}
		if rids[g] == nil {
			order = append(order, g)
		}
		rids[g] = append(rids[g], m.ReservationID)
	}
	var errs []error
	for _, g := range order {
		var n int64
		err := guardIncarnation(ctx, w.db, g.activity, g.inc, func(db *gorm.DB) error {
			res := db.Exec("DELETE FROM orders WHERE reservation_id IN ?", rids[g])
			n = res.RowsAffected
			return res.Error
		})
		switch {
		case errors.Is(err, ErrStale):
			w.m.WriterStale.Inc()
			w.log.Warn("orders of reservations failed meanwhile kept: a restore replaced their incarnation and counted them as sold",
				"reservations", rids[g], "activity", g.activity, "incarnation", g.inc)
		case err != nil:
			errs = append(errs, fmt.Errorf("order: undo orders of failed reservations: %w", err))
		case n > 0:
			w.m.WriterUndone.Add(float64(n))
			w.log.Warn("removed orders of reservations failed for good meanwhile", "orders", n, "reservations", rids[g])
		}
	}
	return errors.Join(errs...)
}

type poisoned struct {
	msg    Message
	reason string
}

// insertOrders writes rows in one statement: an order is inserted only if its reservation
// has no compensations row and its incarnation (the epoch's, inventory.Incarnation) is not
// below the activity's row in MySQL, read with an explicit shared lock (LOCK IN SHARE MODE,
// so at any isolation level: at READ COMMITTED an INSERT ... SELECT takes none by itself): a
// restore's claim of a new incarnation (Reconciler.cut, order/restore.go) waits for this
// statement, whose orders its read then sees, or this statement sees the claim and inserts
// nothing. A duplicate reservation id changes nothing. An activity without a row (none in
// the tests of this package) refuses nothing.
func insertOrders(tx *gorm.DB, rows []Message) error {
	var b strings.Builder
	args := make([]any, 0, 7*len(rows))
	// SQLite (the embedded mode) has no ON DUPLICATE KEY: INSERT OR IGNORE skips the same
	// duplicates there.
	sqlite := tx.Dialector.Name() == "sqlite"
	if sqlite {
		b.WriteString("INSERT OR IGNORE")
	} else {
		b.WriteString("INSERT")
	}
	b.WriteString(" INTO orders (reservation_id, activity_id, user_id, quantity, seq, status, idem_hash) " +
		"SELECT t.r, t.a, t.u, t.q, t.s, 'CONFIRMED', t.k FROM (")
	for i, m := range rows {
		if i == 0 {
			b.WriteString("SELECT ? AS r, ? AS a, ? AS u, ? AS q, ? AS s, ? AS k, ? AS i")
		} else {
			b.WriteString(" UNION ALL SELECT ?, ?, ?, ?, ?, ?, ?")
		}
		args = append(args, m.ReservationID, m.ActivityID, m.UserID, m.Quantity, m.Seq, m.IdemHash,
			inventory.Incarnation(m.Epoch))
	}
	b.WriteString(") t LEFT JOIN activities act ON act.id = t.a" +
		" WHERE NOT EXISTS (SELECT 1 FROM compensations c WHERE c.reservation_id = t.r)" +
		" AND (act.id IS NULL OR act.incarnation <= t.i)")
	if !sqlite {
		// The shared lock is explicit: at READ COMMITTED an INSERT ... SELECT reads its
		// sources without one, and a restore's claim would not wait for this statement.
		b.WriteString(" LOCK IN SHARE MODE ON DUPLICATE KEY UPDATE orders.id = orders.id")
	}
	return tx.Exec(b.String(), args...).Error
}

// insert writes the orders (insertOrders) and reads back which reservations have an order.
// A reservation absent after a successful insert was compensated (it has a compensations
// row: skipped) or collided with another reservation's (activity, user, seq): it is poison.
// When the batch insert fails with a poison error, the batch is written row by row to
// isolate the bad rows; any other error returns at once, nothing dead-lettered.
func (w *Writer) insert(ctx context.Context, batch []Message) (map[string]int64, []poisoned, error) {
	rids := make([]string, len(batch))
	for i, m := range batch {
		rids[i] = m.ReservationID
	}
	tx := w.db.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true})
	var poison []poisoned
	if err := insertOrders(tx, batch); err != nil {
		if isTransient(err) {
			return nil, nil, fmt.Errorf("order: insert: %w", err)
		}
		w.log.Warn("batch insert failed on its data; writing row by row", "orders", len(batch), "err", err)
		for i := range batch {
			if err := insertOrders(tx, batch[i:i+1]); err != nil {
				if isTransient(err) {
					return nil, nil, fmt.Errorf("order: insert: %w", err)
				}
				poison = append(poison, poisoned{batch[i], "insert: " + err.Error()})
			}
		}
	}
	var found []orderKey
	if err := tx.Model(&sql.Order{}).Select("id", "reservation_id", "activity_id", "user_id", "seq").
		Where("reservation_id IN ?", rids).Find(&found).Error; err != nil {
		return nil, nil, fmt.Errorf("order: read back: %w", err)
	}
	byRID := make(map[string]orderKey, len(found))
	for _, f := range found {
		byRID[f.ReservationID] = f
	}
	ids := make(map[string]int64, len(found))
	bad := make(map[string]bool, len(poison))
	for _, p := range poison {
		bad[p.msg.ReservationID] = true
	}
	for _, m := range batch {
		f, ok := byRID[m.ReservationID]
		if !ok || bad[m.ReservationID] {
			continue
		}
		if !f.sameReservation(m) {
			// An order under this id for another buyer or sequence: Redis handed the id out
			// again after it forgot its counter. Not a duplicate: this reservation cannot have
			// an order under its id, it fails for good (its units go back).
			poison = append(poison, poisoned{m, "rid_conflict: the id names another buyer's order"})
			bad[m.ReservationID] = true
			continue
		}
		ids[m.ReservationID] = f.ID
	}
	stale, err := w.stale(tx, batch, ids, bad)
	if err != nil {
		return nil, nil, err
	}
	var missing []string
	for _, m := range batch {
		if _, ok := ids[m.ReservationID]; !ok && !bad[m.ReservationID] && !stale[m.ReservationID] {
			missing = append(missing, m.ReservationID)
		}
	}
	if len(missing) == 0 {
		return ids, poison, nil
	}
	var compensated []string
	if err := tx.Model(&sql.Compensation{}).Where("reservation_id IN ?", missing).
		Pluck("reservation_id", &compensated).Error; err != nil {
		return nil, nil, fmt.Errorf("order: read compensations: %w", err)
	}
	skip := make(map[string]bool, len(compensated))
	for _, r := range compensated {
		skip[r] = true
	}
	if len(compensated) > 0 {
		w.log.Info("skipped reservations compensated before their order", "reservations", compensated)
	}
	for _, m := range batch {
		if _, ok := ids[m.ReservationID]; !ok && !bad[m.ReservationID] && !skip[m.ReservationID] && !stale[m.ReservationID] {
			poison = append(poison, poisoned{m, "seq_conflict"})
		}
	}
	return ids, poison, nil
}

// stale finds the messages of the batch without an order (not in ids nor bad) whose
// incarnation is below their activity's in MySQL: reservations of a Redis state a restore
// replaced. The restore rebuilt Redis from the orders MySQL held and counted their units as
// unsold, so they never become orders (that would sell a unit twice) and are not
// compensated either (their shards are closed): they are dropped, counted and logged, and
// the restore's list of lost reservations names them (order/lost.go).
func (w *Writer) stale(tx *gorm.DB, batch []Message, ids map[string]int64, bad map[string]bool) (map[string]bool, error) {
	var acts []string
	for _, m := range batch {
		if _, ok := ids[m.ReservationID]; !ok && !bad[m.ReservationID] && !slices.Contains(acts, m.ActivityID) {
			acts = append(acts, m.ActivityID)
		}
	}
	if len(acts) == 0 {
		return nil, nil
	}
	var rows []struct {
		ID          string
		Incarnation int
	}
	if err := tx.Model(&sql.Activity{}).Select("id", "incarnation").Where("id IN ?", acts).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("order: read incarnations: %w", err)
	}
	cur := make(map[string]int, len(rows))
	for _, r := range rows {
		cur[r.ID] = r.Incarnation
	}
	var out map[string]bool
	for _, m := range batch {
		inc, known := cur[m.ActivityID]
		if _, ok := ids[m.ReservationID]; ok || bad[m.ReservationID] || !known || inventory.Incarnation(m.Epoch) >= inc {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[m.ReservationID] = true
		w.m.WriterStale.Inc()
		w.log.Warn("dropped a reservation of an incarnation a restore replaced: no order (the restore counted its unit unsold)",
			"reservation", m.ReservationID, "activity", m.ActivityID, "incarnation", inventory.Incarnation(m.Epoch), "current", inc)
	}
	return out, nil
}

// orderKey is what identifies an order beyond its reservation id.
type orderKey struct {
	ID            int64
	ReservationID string
	ActivityID    string
	UserID        string
	Seq           int
}

// sameReservation reports whether the order is m's reservation: same activity, buyer and
// sequence, not only the same id.
func (o orderKey) sameReservation(m Message) bool {
	return o.ActivityID == m.ActivityID && o.UserID == m.UserID && o.Seq == m.Seq
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
	case errors.Is(err, ErrStale):
		w.m.WriterStale.Inc()
		w.log.Warn("dead letter of an incarnation a restore replaced: not compensated (the restore counted its units)",
			"reservation", m.ReservationID, "activity", m.ActivityID, "reason", reason)
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
	for _, l := range []string{"seq_conflict", "rid_conflict", "insert", "max_attempts"} {
		if len(reason) >= len(l) && reason[:len(l)] == l {
			return l
		}
	}
	return "other"
}
