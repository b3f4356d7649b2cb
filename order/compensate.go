package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// Compensation outcomes that are not failures of the compensator itself.
var (
	// ErrOrderExists: the reservation has an order in MySQL, so it is not compensated; the
	// compensator confirmed it in Redis instead.
	ErrOrderExists = errors.New("order: reservation has an order; not compensated")
	// ErrAlreadyConfirmed: the record is CONFIRMED in Redis; nothing was changed.
	ErrAlreadyConfirmed = errors.New("order: reservation is confirmed; not compensated")
	// ErrNoRecord: the reservation record is gone (archived); nothing can be proven.
	ErrNoRecord = errors.New("order: reservation record missing")
	// ErrStale: the reservation is of an incarnation a restore replaced (its activity's row
	// in MySQL names a newer one). The restore rebuilt Redis from the orders and counted its
	// units as unsold (or sold, by its order): nothing of it is given back or undone.
	ErrStale = errors.New("order: reservation of an incarnation a restore replaced; not compensated")
)

// Compensator fails reservations for good and returns their stock. Each step is idempotent
// and a later call finishes whatever an earlier, interrupted one left undone:
//  1. a row in table compensations (INSERT ... ON CONFLICT DO NOTHING), committed first,
//     where MySQL holds no order of the reservation (one it holds is confirmed instead);
//  2. inventory's Fail: PENDING -> FAILED and the units back to the shard's stock, or, when
//     a reshard drained that shard, in transit under the reservation id and
//  3. credited to the buyer's home shard of the current layout (once per reservation id);
//  4. inventory's Refund lowers the buyer's count on the home shard of the current layout
//     (once per reservation id; the user's seq is never lowered);
//  5. inventory's MarkCompensated, once the steps before committed, so a redelivered message
//     skips a finished compensation.
//
// Every step runs under the activity's incarnation guard (guardIncarnation): a reservation
// of an incarnation a restore replaced is refused (ErrStale) and changes nothing.
//
// Safe for concurrent use.
type Compensator struct {
	db       *gorm.DB
	rdb      redis.UniversalClient
	m        *Metrics
	log      *slog.Logger
	sc       *scripts
	lockTTL  time.Duration
	lockWait time.Duration

	afterCheck func() // test hook: runs in the incarnation guard, after its check, before any write
}

// The (activity, user) lock of a compensation: its expiry and how long a compensator waits
// for it while another holds it (WriterOptions.CompensationLockTTL and LockWait).
const (
	defaultCompensationLockTTL = 10 * time.Second
	defaultLockWait            = 2 * time.Second
)

// NewCompensator returns a compensator with the default lock expiry and wait; db should be
// the writer's small pool. An error means an embedded script did not load.
func NewCompensator(db *gorm.DB, rdb redis.UniversalClient, m *Metrics, log *slog.Logger) (*Compensator, error) {
	sc, err := loadScripts(rdb, nil)
	if err != nil {
		return nil, err
	}
	return newCompensator(db, rdb, sc, defaultCompensationLockTTL, defaultLockWait, m, log), nil
}

func newCompensator(db *gorm.DB, rdb redis.UniversalClient, sc *scripts, lockTTL, lockWait time.Duration, m *Metrics, log *slog.Logger) *Compensator {
	if log == nil {
		log = slog.Default()
	}
	return &Compensator{db: db, rdb: rdb, m: m, sc: sc, log: log.With("component", "compensator"),
		lockTTL: lockTTL, lockWait: lockWait}
}

// Compensate fails the reservation of msg for good, under the (activity, user) lock, so two
// compensators of one user never interleave. The writer takes no Redis lock: it never inserts
// an order over a compensations row, and the compensation writes its row only where MySQL
// holds no order, before the record fails (docs/DESIGN.md), so an order and a compensation
// never both stand. It returns nil when
// the reservation is FAILED with every step done (now or before), ErrOrderExists when an
// order exists (the record is then confirmed), ErrAlreadyConfirmed, ErrNoRecord, or a
// transient error (retry later: the retry finishes the remaining steps).
func (c *Compensator) Compensate(ctx context.Context, msg Message, reason string) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	lock, err := lockUser(ctx, c.rdb, msg.ActivityID, msg.UserHash, c.lockTTL, c.lockWait)
	if err != nil {
		return err
	}
	defer lock.release(context.WithoutCancel(ctx), c.rdb, c.sc)
	return c.compensateLocked(ctx, msg, reason)
}

// finish completes the compensation of a reservation that has a compensations row: a
// compensation cut short after its row (by a Redis or MySQL error, a crash, or a reshard outlasting the credit) is finished by
// the next delivery of its message, which the writer hands here. Every step is idempotent, so
// no lock is needed. A finished compensation costs one HGET.
func (c *Compensator) finish(ctx context.Context, msg Message) error {
	done, err := c.sc.ledger.Compensated(ctx, msg.ReservationID)
	if err != nil {
		return fmt.Errorf("order: %w", err)
	}
	if done {
		return nil
	}
	err = c.compensateLocked(ctx, msg, "resumed")
	if errors.Is(err, ErrNoRecord) || errors.Is(err, ErrAlreadyConfirmed) {
		return nil // final: its row, if any, went with it; a redelivery decides again
	}
	return err // ErrStale is final too: the caller counts it
}

// compensateLocked is Compensate with the (activity, user) lock held by the caller. MySQL
// decides first and Redis follows, each step under the activity's incarnation guard
// (guardIncarnation: a reservation of an older incarnation than MySQL's is refused with
// ErrStale and changes nothing):
//
//  1. decide: an order of the reservation is confirmed instead; else its compensations row is
//     committed, before Redis hears of the compensation. The writer's insert never writes an
//     order over a compensations row (both hold the activity's row lock), so from this commit
//     on the reservation never takes a unit in MySQL: a FAILED record always has its row, and
//     the guard never counts a unit that Redis gave back and may sell again (a compensation
//     that failed its record and then lost its row refused the next buyer of that unit).
//  2. fail: the record FAILED, the units back (inventory's Fail), the buyer's count lowered
//     (Refund), under the guard again, so a restore's claim (Reconciler.cut) sees the units
//     back or not at all; a record that turned out CONFIRMED or gone (only a Redis that lost
//     or duplicated state) keeps no compensations row: nothing went back.
//  3. the record's compensated mark, once both committed: the mark lets a redelivery skip the
//     compensation (finish), so it may only exist once the row and the units are settled.
//
// A compensation cut short is finished by the next call: step 1 finds its row, step 2 is
// idempotent.
func (c *Compensator) compensateLocked(ctx context.Context, msg Message, reason string) error {
	inc := inventory.Incarnation(msg.Epoch)
	var refused, fresh bool
	err := guardIncarnation(ctx, c.db, msg.ActivityID, inc, func(db *gorm.DB) error {
		if c.afterCheck != nil {
			c.afterCheck()
		}
		var err error
		refused, fresh, err = c.decide(ctx, db, msg, reason)
		return err
	})
	if err != nil {
		return err
	}
	if !refused {
		var code inventory.FailResult
		err = guardIncarnation(ctx, c.db, msg.ActivityID, inc, func(db *gorm.DB) error {
			var err error
			code, err = c.fail(ctx, db, msg, reason, fresh)
			return err
		})
		switch {
		case err != nil:
			return err
		case code == inventory.FailConfirmed:
			return ErrAlreadyConfirmed
		case code == inventory.FailMissing:
			return ErrNoRecord
		}
	}
	if err := c.sc.ledger.MarkCompensated(ctx, msg.ReservationID); err != nil {
		return fmt.Errorf("order: %w", err)
	}
	return nil
}

// guardIncarnation runs fn (with the transaction's handle) while the activity's row in MySQL
// is held under an exclusive lock (FOR UPDATE), until fn returns: fn runs only when inc is
// not below the row's incarnation (else ErrStale), and a restore's claim of a newer
// incarnation (Reconciler.cut) waits for fn, so what fn changed (in Redis and MySQL) happened
// before the claim and the cut's read sees it. The lock is the one the writer's insert takes
// (insert.go): no insert counts the activity's orders or reads its compensations meanwhile. The lock is explicit, so this holds at any
// isolation level. An activity without a row refuses nothing.
//
// The embedded SQLite has no row lock: there the transaction's first statement is a
// write that changes nothing (UPDATE activities SET incarnation = incarnation), which takes
// the database's write lock before the check reads (BEGIN IMMEDIATE's effect, inside the
// same transaction), so the check, fn and the commit are serialized with the claim, which
// waits (busy timeout) as it does on MySQL; with a pool of one connection (the embedded app)
// the claim also waits for the connection. fn must use the handle it is given: with one
// connection any other would wait for this transaction for good.
func guardIncarnation(ctx context.Context, db *gorm.DB, activity string, inc int, fn func(*gorm.DB) error) error {
	sqlite := db.Dialector.Name() == "sqlite"
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		lock := " FOR UPDATE"
		if sqlite {
			lock = ""
			if err := tx.Exec("UPDATE activities SET incarnation = incarnation WHERE id = ?", activity).Error; err != nil {
				return fmt.Errorf("order: lock the incarnation of %s: %w", activity, err)
			}
		}
		var cur []int
		if err := tx.Raw("SELECT incarnation FROM activities WHERE id = ?"+lock, activity).Scan(&cur).Error; err != nil {
			return fmt.Errorf("order: read the incarnation of %s: %w", activity, err)
		}
		if len(cur) > 0 && inc < cur[0] {
			return fmt.Errorf("%w: incarnation %d, the activity's is %d", ErrStale, inc, cur[0])
		}
		return fn(tx)
	})
}

// decide is step 1 of compensateLocked, on db (the guard's transaction). refused: MySQL
// refused the reservation's order (insert.go), whose record then fails as refused, with no
// units back (a credit would put a phantom unit on sale). fresh: this call wrote the
// compensations row (none was there).
func (c *Compensator) decide(ctx context.Context, db *gorm.DB, msg Message, reason string) (refused, fresh bool, err error) {
	var ids []int64
	// The order of this reservation: same id, buyer and sequence (an order under the same id
	// for another buyer is another reservation whose id Redis handed out again).
	if err := db.Model(&sql.Order{}).Where("reservation_id = ? AND activity_id = ? AND user_id = ? AND seq = ?",
		msg.ReservationID, msg.ActivityID, msg.UserID, msg.Seq).Limit(1).Pluck("id", &ids).Error; err != nil {
		return false, false, fmt.Errorf("order: compensate %s: look up order: %w", msg.ReservationID, err)
	}
	if len(ids) > 0 {
		res, err := c.sc.ledger.Confirm(ctx, []inventory.Confirmation{{ReservationID: msg.ReservationID, OrderID: ids[0], UserHash: msg.UserHash}})
		if err != nil {
			return false, false, fmt.Errorf("order: %w", err)
		}
		if res[0] == inventory.ConfirmConflict {
			// Only a Redis that duplicated state fails a record with no compensations row
			// (step 1 below): MySQL has the last word, the order stands.
			c.log.Error("reservation has an order and its record is FAILED; the order stands", "reservation", msg.ReservationID)
		}
		return false, false, ErrOrderExists
	}
	var reasons []string
	if err := db.Model(&sql.Compensation{}).Where("reservation_id = ?", msg.ReservationID).
		Pluck("reason", &reasons).Error; err != nil {
		return false, false, fmt.Errorf("order: compensate %s: look up compensation: %w", msg.ReservationID, err)
	}
	if len(reasons) > 0 && strings.HasPrefix(reasons[0], refusedPrefix) {
		code, err := c.sc.ledger.Refuse(ctx, msg.ReservationID)
		if err != nil {
			return true, false, fmt.Errorf("order: %w", err)
		}
		if code == inventory.FailedNow {
			c.m.Refused.WithLabelValues(msg.ActivityID, strings.TrimPrefix(reasons[0], refusedPrefix)).Inc()
		}
		return true, false, nil
	}
	if len(reasons) > 0 {
		return false, false, nil // decided before: a compensation cut short
	}
	row := sql.Compensation{ReservationID: msg.ReservationID, ActivityID: msg.ActivityID, UserID: msg.UserID,
		Quantity: msg.Quantity, Reason: truncate(reason, 255)}
	if err := db.Session(&gorm.Session{SkipDefaultTransaction: true}).
		Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return false, false, fmt.Errorf("order: record compensation %s: %w", msg.ReservationID, err)
	}
	return false, true, nil
}

// fail is step 2 of compensateLocked, on db (the guard's transaction). A record found
// CONFIRMED or not this reservation's (FailConfirmed, FailMissing: nothing went back) takes
// the compensations row out again, in this transaction, which the code lets commit, when
// this call wrote it (fresh). A row an earlier call wrote stays: that call may have failed
// the record and given its units back before the record went (an archive, a Redis that lost
// it), and without the row a redelivery would become an order for a unit sold again.
func (c *Compensator) fail(ctx context.Context, db *gorm.DB, msg Message, reason string, fresh bool) (inventory.FailResult, error) {
	code, qty, err := c.sc.ledger.Fail(ctx, msg.ReservationID, msg.UserHash)
	if err != nil {
		return code, fmt.Errorf("order: %w", err)
	}
	switch code {
	case inventory.FailConfirmed, inventory.FailMissing:
		if !fresh {
			return code, nil
		}
		if err := db.Session(&gorm.Session{SkipDefaultTransaction: true}).
			Where("reservation_id = ? AND reason NOT LIKE ?", msg.ReservationID, refusedPrefix+"%").
			Delete(&sql.Compensation{}).Error; err != nil {
			return code, fmt.Errorf("order: remove the compensations row of %s: %w", msg.ReservationID, err)
		}
		return code, nil
	}
	if err := c.sc.ledger.Refund(ctx, msg.ReservationID, msg.UserHash, qty); err != nil {
		return code, fmt.Errorf("order: %w", err)
	}
	if code == inventory.FailedNow || code == inventory.FailedNowMoved {
		c.m.Compensations.Inc()
		c.m.ActivityCompensations.WithLabelValues(msg.ActivityID).Inc()
		c.log.Info("reservation compensated", "reservation", msg.ReservationID, "activity", msg.ActivityID,
			"units", strconv.FormatInt(qty, 10), "reason", reason)
	}
	return code, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
