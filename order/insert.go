package order

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// poisoned is a message of the batch that can never become an order, and why.
type poisoned struct {
	msg    Message
	cause  deadCause
	detail string
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
				poison = append(poison, poisoned{batch[i], causeInsert, err.Error()})
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
			poison = append(poison, poisoned{m, causeRIDConflict, "the id names another buyer's order"})
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
			poison = append(poison, poisoned{m, causeSeqConflict, ""})
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
