package order

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// ErrRestoreRace is returned by Restore when the activity's generation in MySQL changed
// while the restore ran (another restore won): nothing of this one stands; run it again.
var ErrRestoreRace = errors.New("order: the activity's generation changed during the restore")

// ErrNotDrained is returned by Restore when the journals or the queue kept moving for the
// activity past RestoreOptions.Timeout.
var ErrNotDrained = errors.New("order: the pipeline did not drain for the activity")

// RestoreOptions tune Restore. Zero values take the defaults named.
type RestoreOptions struct {
	// Settle is how long Restore waits after fencing, so every instance's refresh sees the
	// fence and reservations in flight finish (default 1.5 s: six refresh periods).
	Settle time.Duration
	// Quiet is how long the activity's orders and compensations in MySQL must stay unchanged
	// before the queue counts as drained for it (default 3 s).
	Quiet time.Duration
	// Timeout bounds the wait for the journals and the queue (default 2 min).
	Timeout time.Duration
}

// RestoreReport says what a restore did.
type RestoreReport struct {
	ActivityID  string `json:"activityId"`
	Generation  string `json:"generation"`
	Incarnation int    `json:"incarnation"`
	inventory.Restored
	Orders int `json:"orders"`
	// Lost are the reservations answered 202 that never reached MySQL, found by this restore
	// (lost.go); LostTotal is the activity's whole list after it.
	Lost      []string `json:"lost"`
	LostTotal int64    `json:"lostTotal"`
	// Refused are the reservations answered 202 whose order MySQL refused (refused.go): a
	// refusal is what fences an activity when Redis's counts went wrong without losing meta.
	Refused RefusedReport `json:"refused"`
}

// Restore rebuilds the activity's Redis state from MySQL after Redis lost it (restarted
// empty, failed over to a replica that lagged, rolled back): inventory/restore.go's steps.
// It fences the activity (every instance refuses reservations), waits until the journals
// left in Redis are relayed and the activity's orders in MySQL stop changing (the writer
// drained what the queue held), rebuilds Redis from the orders at a new incarnation, records
// the new generation in MySQL (which reopens the activity everywhere) and lists the
// reservations lost with Redis. ErrUnknownActivity when MySQL does not know the activity.
func (r *Reconciler) Restore(ctx context.Context, inv *inventory.Store, id string, o RestoreOptions) (RestoreReport, error) {
	o = restoreDefaults(o)
	row, err := r.restoreRow(ctx, id)
	if err != nil {
		return RestoreReport{}, err
	}
	if f := r.afterRow.Load(); f != nil {
		(*f)()
	}
	tok, err := inv.Fence(ctx, id)
	if err != nil {
		return RestoreReport{}, err
	}
	done := false
	defer func() {
		if !done {
			_ = inv.Unlock(context.WithoutCancel(ctx), id, tok)
		}
	}()
	r.log.Warn("restore of an activity from MySQL started: reservations refused on every instance", "activity", id)
	if err := backoff.Sleep(ctx, o.Settle); err != nil {
		return RestoreReport{}, err
	}
	old, err := inv.OldLayouts(ctx, id)
	if err != nil {
		return RestoreReport{}, err
	}
	deadline := time.Now().Add(o.Timeout)
	if err := r.waitJournals(ctx, id, old, deadline); err != nil {
		return RestoreReport{}, err
	}
	if err := r.waitQuiet(ctx, id, o.Quiet, deadline); err != nil {
		return RestoreReport{}, err
	}
	marks, err := inv.IssuedMarks(ctx, id, old)
	if err != nil {
		return RestoreReport{}, err
	}
	inc := restoreIncarnation(row, old, marks)
	orders, comps, err := r.cut(ctx, id, row, inc)
	if err != nil {
		return RestoreReport{}, err
	}
	claimed := inc
	plan, known := restorePlan(row, old, orders, comps, inc)
	inc = plan.Incarnation
	lost := lostReservations(id, marks, known)
	restored, err := inv.Rebuild(ctx, tok, plan, old)
	if err != nil {
		return RestoreReport{}, err
	}
	if err := r.recordGeneration(ctx, id, row, claimed, plan); err != nil {
		return RestoreReport{}, err
	}
	if row.EndedAt == nil {
		// An end written after the row was read (it checked for a restore before the fence)
		// wrote its meta before the rebuild replaced it, or found none: the rebuild wrote the
		// row as read, without it. Read again now that the rebuild stands: an end written from
		// here on writes the new meta itself. (The earliest end stands: End.)
		r.restoreEnd(ctx, inv, id)
	}
	total, err := r.recordLost(ctx, id, lost)
	if err != nil {
		r.log.Warn("recording the lost reservations failed", "activity", id, "err", err)
	}
	done = true
	if err := inv.Unlock(ctx, id, tok); err != nil {
		r.log.Warn("releasing the restore lock failed (it expires)", "activity", id, "err", err)
	}
	if err := inv.Announce(ctx, id); err != nil {
		r.log.Warn("announcing the restore failed; instances see it within a refresh", "activity", id, "err", err)
	}
	r.log.Warn("activity restored from MySQL", "activity", id, "generation", plan.Generation, "incarnation", inc,
		"epoch", restored.Epoch, "sold", restored.Sold, "remaining", restored.Remaining, "users", restored.Users,
		"lost", len(lost))
	if lost == nil {
		lost = []string{}
	}
	refused, err := r.Refused(ctx, id)
	if err != nil {
		r.log.Warn("listing the refused reservations failed (the reconciliation lists them)", "activity", id, "err", err)
	}
	return RestoreReport{ActivityID: id, Generation: plan.Generation, Incarnation: inc, Restored: restored,
		Orders: len(orders), Lost: lost, LostTotal: total, Refused: refused}, nil
}

// restoreEnd writes the activity's end, if MySQL has one, to the meta a restore rebuilt;
// a failure is logged (the same end POSTed again writes it).
func (r *Reconciler) restoreEnd(ctx context.Context, inv *inventory.Store, id string) {
	var row sql.Activity
	err := r.db.WithContext(ctx).Select("ended_at").Where("id = ?", id).First(&row).Error
	if err == nil && row.EndedAt != nil {
		_, err = inv.End(ctx, id, *row.EndedAt)
	}
	if err != nil {
		r.log.Error("reading or writing an end made while the restore ran failed: POST the end again", "activity", id, "err", err)
	}
}

// restoreDefaults returns o with each zero or negative duration replaced by the default
// RestoreOptions names; it keeps every positive value as given.
func restoreDefaults(o RestoreOptions) RestoreOptions {
	if o.Settle <= 0 {
		o.Settle = 1500 * time.Millisecond
	}
	if o.Quiet <= 0 {
		o.Quiet = 3 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	return o
}

// restoreRow reads the activity's MySQL row for Restore: ErrUnknownActivity when there is
// none, ErrRestoreRace when it was archived; it writes nothing.
func (r *Reconciler) restoreRow(ctx context.Context, id string) (sql.Activity, error) {
	var row sql.Activity
	err := r.db.WithContext(ctx).Where("id = ?", id).First(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, fmt.Errorf("%w: %s", ErrUnknownActivity, id)
	}
	if err != nil {
		return row, fmt.Errorf("order: read activity %s: %w", id, err)
	}
	if row.ArchivedAt != nil {
		return row, fmt.Errorf("%w: %s was archived", ErrRestoreRace, id)
	}
	return row, nil
}

// restoreIncarnation is the incarnation the restore claims: one above the row's and above
// that of every old layout and every issued mark, so no new number repeats an old one.
func restoreIncarnation(row sql.Activity, old [][2]int, marks map[[2]int]int64) int {
	inc := row.Incarnation + 1
	for _, l := range old {
		inc = max(inc, inventory.Incarnation(l[0])+1)
	}
	for es := range marks {
		inc = max(inc, inventory.Incarnation(es[0])+1)
	}
	return inc
}

// restorePlan builds the rebuild's plan from the row, the last old layout and the cut's
// orders, and returns it with the reservations MySQL knows (orders, then compensations);
// the plan's incarnation is inc raised above that of every order's reservation.
func restorePlan(row sql.Activity, old [][2]int, orders []sql.Order, comps []string, inc int) (inventory.RestorePlan, []string) {
	known := make([]string, 0, len(orders)+len(comps))
	plan := inventory.RestorePlan{
		Activity: inventory.Activity{ID: row.ID, CampaignID: row.CampaignID, Stock: row.Stock, PerUserLimit: row.PerUserLimit,
			OpensAt: row.OpensAt, Shards: row.Shards, RequireToken: row.RequireToken},
		Generation: inventory.NewGeneration(),
		Shards:     row.Shards,
	}
	if row.ClosesAt != nil {
		plan.Activity.ClosesAt = *row.ClosesAt
	}
	if row.EndedAt != nil {
		plan.Activity.EndedAt = *row.EndedAt // an ended sale stays ended
	}
	if len(old) > 0 {
		plan.Shards = old[len(old)-1][1] // the layout it had: the configuration's count
	}
	for _, ord := range orders {
		known = append(known, ord.ReservationID)
		if k, _, ok := inventory.ParseReservationID(ord.ReservationID); ok {
			inc = max(inc, inventory.Incarnation(k.Epoch)+1)
		}
		plan.Orders = append(plan.Orders, inventory.RestoredOrder{ReservationID: ord.ReservationID, UserID: ord.UserID,
			Quantity: ord.Quantity, Seq: ord.Seq, IdemHash: ord.IdemHash, OrderID: ord.ID, CreatedAt: ord.CreatedAt})
	}
	known = append(known, comps...)
	plan.Incarnation = inc
	return plan, known
}

// recordGeneration records the plan's generation and incarnation on the activity's row,
// only if the row still has the generation read and the incarnation claimed; any other
// row fails with ErrRestoreRace.
func (r *Reconciler) recordGeneration(ctx context.Context, id string, row sql.Activity, claimed int, plan inventory.RestorePlan) error {
	res := r.db.WithContext(ctx).Model(&sql.Activity{}).Where("id = ? AND generation = ? AND incarnation = ?", id, row.Generation, claimed).
		Updates(map[string]any{"generation": plan.Generation, "incarnation": plan.Incarnation})
	if res.Error != nil {
		return fmt.Errorf("order: record the new generation of %s: %w", id, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: %s", ErrRestoreRace, id)
	}
	return nil
}

// cut claims incarnation inc for the activity (row is what Restore read at its start), sets
// its sold count from its orders (MySQL's counts are what the rebuild trusts), and reads the
// orders and compensations that the older incarnations hold. From the claim on the writer
// refuses every message of an older incarnation: its insert reads the activity's row under an
// exclusive lock (FOR UPDATE), so this update waits for the inserts in progress, whose orders
// the read below then sees, and an insert after it reads the new incarnation and inserts
// nothing. The lock is explicit: the guard must not depend on the server's isolation level.
// The quiet wait before only makes the late ones few; it is not what keeps a unit from being
// sold twice. ErrRestoreRace when the row changed since.
func (r *Reconciler) cut(ctx context.Context, id string, row sql.Activity, inc int) ([]sql.Order, []string, error) {
	claim := r.db.WithContext(ctx).Model(&sql.Activity{}).
		Where("id = ? AND generation = ? AND incarnation = ? AND archived_at IS NULL", id, row.Generation, row.Incarnation).
		Updates(map[string]any{"incarnation": inc,
			"sold": gorm.Expr("(SELECT COALESCE(SUM(o.quantity), 0) FROM orders o WHERE o.activity_id = ?)", id)})
	if claim.Error != nil {
		return nil, nil, fmt.Errorf("order: claim incarnation %d of %s: %w", inc, id, claim.Error)
	}
	if claim.RowsAffected != 1 {
		return nil, nil, fmt.Errorf("%w: %s", ErrRestoreRace, id)
	}
	var orders []sql.Order
	if err := r.db.WithContext(ctx).Where("activity_id = ?", id).Find(&orders).Error; err != nil {
		return nil, nil, fmt.Errorf("order: read orders of %s: %w", id, err)
	}
	var comps []string
	if err := r.db.WithContext(ctx).Model(&sql.Compensation{}).Where("activity_id = ?", id).
		Pluck("reservation_id", &comps).Error; err != nil {
		return nil, nil, fmt.Errorf("order: read compensations of %s: %w", id, err)
	}
	return orders, comps, nil
}

// waitJournals waits until every journal entry of the layouts Redis still holds is relayed
// (stats taken = relayed): an entry left there would become an order after the restore
// counted its unit as unsold. Nothing to wait for when Redis lost the meta.
func (r *Reconciler) waitJournals(ctx context.Context, id string, old [][2]int, deadline time.Time) error {
	if len(old) == 0 {
		return nil
	}
	for {
		c, err := r.sc.ledger.Counts(ctx, id)
		if errors.Is(err, inventory.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("order: %w", err)
		}
		if c.Taken <= c.Relayed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d units still in the journals of %s", ErrNotDrained, c.Taken-c.Relayed, id)
		}
		if err := backoff.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitQuiet waits until the activity's orders and compensations in MySQL have not changed
// for quiet: the writer has written what the queue held for it.
func (r *Reconciler) waitQuiet(ctx context.Context, id string, quiet time.Duration, deadline time.Time) error {
	count := func() ([2]int64, error) {
		var n [2]int64
		if err := r.db.WithContext(ctx).Model(&sql.Order{}).Where("activity_id = ?", id).Count(&n[0]).Error; err != nil {
			return n, fmt.Errorf("order: count orders of %s: %w", id, err)
		}
		if err := r.db.WithContext(ctx).Model(&sql.Compensation{}).Where("activity_id = ?", id).Count(&n[1]).Error; err != nil {
			return n, fmt.Errorf("order: count compensations of %s: %w", id, err)
		}
		return n, nil
	}
	last, err := count()
	if err != nil {
		return err
	}
	since := time.Now()
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: orders of %s still being written", ErrNotDrained, id)
		}
		if err := backoff.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
		n, err := count()
		if err != nil {
			return err
		}
		if n != last {
			last, since = n, time.Now()
		}
	}
	return nil
}
