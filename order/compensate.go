package order

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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
	// ErrNoRecord: the reservation record is gone (expired); nothing can be proven.
	ErrNoRecord = errors.New("order: reservation record missing")
)

// Compensator fails reservations for good and returns their stock. Each step is idempotent
// and a later call finishes whatever an earlier, interrupted one left undone:
//  1. order_fail.lua: PENDING -> FAILED and INCRBY of the shard stock, or, when a reshard
//     drained that shard, the units go in transit under the reservation id;
//  2. units in transit are credited to a shard of the current layout (inventory.Mover,
//     once per reservation id);
//  3. order_refund.lua lowers the buyer's count on the home shard of the current layout
//     (once per reservation id, a marker in the users hash; the user's seq is never lowered);
//  4. a row in table compensations (INSERT ... ON CONFLICT DO NOTHING);
//  5. the record is marked comp=1, so a redelivered message skips a finished compensation.
//
// Safe for concurrent use.
type Compensator struct {
	db       *gorm.DB
	rdb      redis.UniversalClient
	m        *Metrics
	log      *slog.Logger
	sc       *scripts
	mv       *inventory.Mover
	scErr    error
	lockTTL  time.Duration
	lockWait time.Duration
}

// NewCompensator returns a compensator; db should be the writer's small pool.
func NewCompensator(db *gorm.DB, rdb redis.UniversalClient, m *Metrics, log *slog.Logger) *Compensator {
	if log == nil {
		log = slog.Default()
	}
	sc, err := loadScripts()
	mv, err2 := inventory.NewMover(rdb)
	return &Compensator{db: db, rdb: rdb, m: m, sc: sc, mv: mv, scErr: errors.Join(err, err2), log: log.With("component", "compensator"),
		lockTTL: 10 * time.Second, lockWait: 3 * time.Second}
}

// Compensate fails the reservation of msg for good, under the (activity, user) lock, so two
// compensators of one user never interleave. The writer takes no lock: it never inserts an
// order over a compensations row, and the reservation record decides between its confirm and
// order_fail.lua (docs/DESIGN.md), so an order and a compensation never both stand. It returns nil when
// the reservation is FAILED with every step done (now or before), ErrOrderExists when an
// order exists (the record is then confirmed), ErrAlreadyConfirmed, ErrNoRecord, or a
// transient error (retry later: the retry finishes the remaining steps).
func (c *Compensator) Compensate(ctx context.Context, msg Message, reason string) error {
	if c.scErr != nil {
		return c.scErr
	}
	if err := msg.Validate(); err != nil {
		return err
	}
	locks, err := lockUsers(ctx, c.rdb, c.sc, []Message{msg}, c.lockTTL, c.lockWait)
	if err != nil {
		return err
	}
	defer locks.release(context.WithoutCancel(ctx), c.rdb, c.sc)
	return c.compensateLocked(ctx, msg, reason)
}

// finish completes the compensation of a reservation whose record is FAILED: a
// compensation cut short after order_fail.lua (by a Redis or MySQL error, a crash, or a
// reshard outlasting the credit) is finished by the next delivery of its message, which the
// writer hands here. Every step is idempotent, so no lock is needed. A finished compensation
// costs one HGET.
func (c *Compensator) finish(ctx context.Context, msg Message) error {
	keys, n := msg.keys()
	v, err := c.rdb.HGet(ctx, keys.Record(n), "comp").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("order: read compensation state of %s: %w", msg.ReservationID, err)
	}
	if v == "1" {
		return nil
	}
	err = c.compensateLocked(ctx, msg, "resumed")
	if errors.Is(err, ErrNoRecord) {
		return nil
	}
	return err
}

// compensateLocked is Compensate with the (activity, user) lock held by the caller.
func (c *Compensator) compensateLocked(ctx context.Context, msg Message, reason string) error {
	var ids []int64
	if err := c.db.WithContext(ctx).Model(&sql.Order{}).Where("reservation_id = ?", msg.ReservationID).
		Limit(1).Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("order: compensate %s: look up order: %w", msg.ReservationID, err)
	}
	keys, n := msg.keys()
	if len(ids) > 0 {
		code, err := c.sc.confirm.Run(ctx, c.rdb, []string{keys.Record(n), keys.Stats()}, ids[0]).Int64()
		if err != nil {
			return fmt.Errorf("order: confirm %s: %w", msg.ReservationID, err)
		}
		res, err := confirmResult(code)
		if err != nil {
			return err
		}
		if res != ConfirmConflict {
			return ErrOrderExists
		}
		// The record is FAILED (a compensation cut short returned the units already): the
		// order is the one that goes, and the compensation's remaining steps run below.
		if err := c.db.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true}).
			Exec("DELETE FROM orders WHERE reservation_id = ?", msg.ReservationID).Error; err != nil {
			return fmt.Errorf("order: undo the order of failed %s: %w", msg.ReservationID, err)
		}
	}
	res, err := c.sc.fail.Run(ctx, c.rdb, []string{keys.Record(n), keys.Stock(), keys.Stats(), keys.Drained(), keys.XOut()}).Int64Slice()
	if err != nil {
		return fmt.Errorf("order: fail %s: %w", msg.ReservationID, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("order: order_fail.lua returned %v", res)
	}
	code, err := failResult(res[0])
	if err != nil {
		return err
	}
	qty := res[1]
	switch code {
	case FailConfirmed:
		return ErrAlreadyConfirmed
	case FailMissing:
		return ErrNoRecord
	case FailedNowMoved, AlreadyFailedMoved:
		if err := c.mv.Settle(ctx, keys, msg.ReservationID, msg.UserHash); err != nil {
			return fmt.Errorf("order: credit %s: %w", msg.ReservationID, err)
		}
	}
	if err := c.refund(ctx, msg, qty); err != nil {
		return err
	}
	row := sql.Compensation{ReservationID: msg.ReservationID, ActivityID: msg.ActivityID, UserID: msg.UserID,
		Quantity: int(qty), Reason: truncate(reason, 255)}
	if err := c.db.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true}).
		Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("order: record compensation %s: %w", msg.ReservationID, err)
	}
	if err := c.rdb.HSet(ctx, keys.Record(n), "comp", 1).Err(); err != nil {
		return fmt.Errorf("order: mark %s compensated: %w", msg.ReservationID, err)
	}
	if code == FailedNow || code == FailedNowMoved {
		c.m.Compensations.Inc()
		c.log.Info("reservation compensated", "reservation", msg.ReservationID, "activity", msg.ActivityID,
			"units", strconv.FormatInt(qty, 10), "reason", reason)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// refund lowers the buyer's count by qty on the user's home shard of the current layout,
// once per reservation. While a reshard moves the users hashes (the home shard is drained
// and the new layout not switched yet) it waits and reads the layout again.
func (c *Compensator) refund(ctx context.Context, msg Message, qty int64) error {
	for attempt := 0; attempt < 40; attempt++ {
		vals, err := c.rdb.HMGet(ctx, inventory.Meta(msg.ActivityID), "epoch", "shards").Result()
		if err != nil {
			return fmt.Errorf("order: refund %s: read layout: %w", msg.ReservationID, err)
		}
		epoch, err1 := strconv.Atoi(fmt.Sprint(vals[0]))
		shards, err2 := strconv.Atoi(fmt.Sprint(vals[1]))
		if err1 != nil || err2 != nil || shards < 1 {
			return fmt.Errorf("order: refund %s: no layout in meta", msg.ReservationID)
		}
		home := inventory.Shard(msg.ActivityID, epoch, inventory.HomeShard(msg.UserHash, shards))
		code, err := c.sc.refund.Run(ctx, c.rdb, []string{home.Users(), home.Stock(), home.Drained()},
			msg.UserHash, qty, msg.ReservationID).Int64()
		if err != nil {
			return fmt.Errorf("order: refund %s: %w", msg.ReservationID, err)
		}
		switch code {
		case 1, 2:
			return nil
		case 3: // a reshard is moving the users hashes: wait for the new layout
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		default:
			return fmt.Errorf("order: order_refund.lua returned %d", code)
		}
	}
	return fmt.Errorf("order: refund %s: the layout kept changing", msg.ReservationID)
}
