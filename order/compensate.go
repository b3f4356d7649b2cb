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

// Compensator fails reservations for good and returns their stock: PENDING -> FAILED and
// INCRBY of the shard stock (order_fail.lua), the buyer's units back on the home shard
// (order_refund.lua, guarded by the refunds set), and a row in table compensations. Every
// step is idempotent, so a compensation delivered twice returns the stock once. Safe for
// concurrent use.
type Compensator struct {
	db       *gorm.DB
	rdb      redis.UniversalClient
	m        *Metrics
	log      *slog.Logger
	sc       *scripts
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
	return &Compensator{db: db, rdb: rdb, m: m, sc: sc, scErr: err, log: log.With("component", "compensator"),
		lockTTL: 10 * time.Second, lockWait: 3 * time.Second}
}

// Compensate fails the reservation of msg for good, under the (activity, user) lock that the
// writer also takes, so an order and a compensation never both happen. It returns nil when
// the reservation is FAILED with its stock returned (now or before), ErrOrderExists when an
// order exists (the record is then confirmed), ErrAlreadyConfirmed, ErrNoRecord, or a
// transient error (retry later).
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

// compensateLocked is Compensate with the (activity, user) lock held by the caller.
func (c *Compensator) compensateLocked(ctx context.Context, msg Message, reason string) error {
	var ids []int64
	if err := c.db.WithContext(ctx).Model(&sql.Order{}).Where("reservation_id = ?", msg.ReservationID).
		Limit(1).Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("order: compensate %s: look up order: %w", msg.ReservationID, err)
	}
	keys, n := msg.keys()
	if len(ids) > 0 {
		if _, err := c.sc.confirm.Run(ctx, c.rdb, []string{keys.Record(n), keys.Stats()}, ids[0]).Int64(); err != nil {
			return fmt.Errorf("order: confirm %s: %w", msg.ReservationID, err)
		}
		return ErrOrderExists
	}
	res, err := c.sc.fail.Run(ctx, c.rdb, []string{keys.Record(n), keys.Stock(), keys.Stats(), keys.Drained()}).Int64Slice()
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
		if err := c.creditCurrent(ctx, msg, qty); err != nil {
			return err
		}
	}
	home := inventory.Shard(msg.ActivityID, msg.Epoch, msg.Home)
	if err := c.sc.refund.Run(ctx, c.rdb, []string{home.Users(), home.Refunds()},
		msg.UserHash, qty, msg.ReservationID).Err(); err != nil {
		return fmt.Errorf("order: refund %s: %w", msg.ReservationID, err)
	}
	row := sql.Compensation{ReservationID: msg.ReservationID, ActivityID: msg.ActivityID, UserID: msg.UserID,
		Quantity: int(qty), Reason: truncate(reason, 255)}
	if err := c.db.WithContext(ctx).Session(&gorm.Session{SkipDefaultTransaction: true}).
		Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("order: record compensation %s: %w", msg.ReservationID, err)
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

// creditCurrent gives a failed reservation's units to the user's home shard in the current
// layout, when a reshard drained the shard that sold them (so they are sellable again). The
// credit is recorded per reservation id on the target shard: a repeated delivery credits
// nothing more.
func (c *Compensator) creditCurrent(ctx context.Context, msg Message, qty int64) error {
	for attempt := 0; attempt < 20; attempt++ {
		vals, err := c.rdb.HMGet(ctx, inventory.Meta(msg.ActivityID), "epoch", "shards").Result()
		if err != nil {
			return fmt.Errorf("order: credit %s: read layout: %w", msg.ReservationID, err)
		}
		epoch, err1 := strconv.Atoi(fmt.Sprint(vals[0]))
		shards, err2 := strconv.Atoi(fmt.Sprint(vals[1]))
		if err1 != nil || err2 != nil || shards < 1 {
			return fmt.Errorf("order: credit %s: no layout in meta", msg.ReservationID)
		}
		target := inventory.Shard(msg.ActivityID, epoch, inventory.HomeShard(msg.UserHash, shards))
		code, err := c.sc.credit.Run(ctx, c.rdb, []string{target.CompCredits(), target.Stock(), target.Drained()},
			msg.ReservationID, qty).Int64()
		if err != nil {
			return fmt.Errorf("order: credit %s: %w", msg.ReservationID, err)
		}
		switch code {
		case 1, 2:
			return nil
		case 3: // a reshard is moving the layout on: wait for the new one
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		default:
			return fmt.Errorf("order: order_credit.lua returned %d", code)
		}
	}
	return fmt.Errorf("order: credit %s: the layout kept changing", msg.ReservationID)
}
