package order

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

// poisoned is a message of the batch that can never become an order, and why.
type poisoned struct {
	msg    Message
	cause  deadCause
	detail string
}

// refusal is a message whose order MySQL refused: the activity's stock or the buyer's limit
// was reached where the orders live, so Redis sold a unit it did not have (it lost or
// duplicated state). fresh is false for a redelivery of a reservation refused before, whose
// Redis steps (Writer.refuse) are run again.
type refusal struct {
	msg    Message
	reason string // refusedStock or refusedLimit
	fresh  bool
}

// Refusal reasons (the metric's reason label; the compensations row's reason is
// refusedPrefix + reason).
const (
	refusedStock  = "stock" // the activity's orders hold its whole stock
	refusedLimit  = "limit" // the buyer's orders hold the per-user limit
	refusedPrefix = "refused: "
)

// guarded is an activity's row as the writer's transaction holds it (under its exclusive
// lock) and the units the batch adds to it.
type guarded struct {
	ID           string
	Stock        int64
	PerUserLimit int64
	Sold         int64
	Incarnation  int
	Generation   string
	add          int64
}

// held is what a buyer's orders hold in an activity: units and sequences.
type held struct {
	units int64
	seqs  map[int]bool
}

// written is what the writer's transaction decided for a batch.
type written struct {
	ids     map[string]int64 // reservation -> its order's id
	poison  []poisoned
	refused []refusal
	// unknown are the messages of activities MySQL has no row for (yet: the admin create
	// writes Redis, then MySQL): neither written nor refused; the batch comes again.
	unknown []Message
	stale   []staleMsg // messages of an incarnation a restore replaced: dropped
	// compensated are the messages of reservations with a compensations row (not a refusal):
	// no order; the writer finishes a compensation that was cut short after its row.
	compensated []Message
	gens        map[string]string // activity -> its generation in MySQL (for the fence)
}

// staleMsg is a message dropped for its incarnation, and the activity's current one.
type staleMsg struct {
	msg     Message
	current int
}

// insert writes the batch's orders in one transaction that keeps, per activity, the units of
// its orders <= its stock and each buyer's units <= the per-user limit (docs/DESIGN.md,
// "MySQL has the last word"):
//
//  1. lock the batch's activity rows (SELECT ... FOR UPDATE, in id order; on SQLite a write
//     that changes nothing takes the database's write lock first): every transaction that
//     adds an activity's orders or compensations holds this lock (this one and the
//     compensator through guardIncarnation), so the reads below see every order committed
//     before, at any isolation level (InnoDB takes a REPEATABLE READ snapshot at the first
//     plain read, after the lock);
//  2. read the batch's reservations that have an order or a compensations row, and what the
//     batch's buyers hold;
//  3. walk the batch in journal order: an order that exists is kept (a redelivery), a
//     compensated reservation skipped, one of an older incarnation than MySQL's dropped
//     (stale), a (buyer, seq) taken by another reservation poisoned, and a reservation that
//     would take the activity past its stock or the buyer past the limit refused; the others
//     fit, and count;
//  4. insert the orders that fit, a compensations row "refused: <reason>" per refusal, and
//     move activities.sold by the units inserted; read the orders' ids back.
//
// A plain INSERT: under the lock nothing else inserts these activities' orders, so a
// duplicate key means the row's data cannot be stored; the rows are then inserted one by one
// to find the poison.
//
// Concurrent calls are combined (groupcommit.go): one transaction carries every batch that
// queued while the one before ran, so the handler goroutines of one process never wait on each
// other's row locks. A redelivery and a poisoned batch of one caller are the others' too: a
// transaction that fails, fails them all, and each is retried as before.
func (w *Writer) insert(ctx context.Context, batch []Message) (written, error) {
	base := context.WithoutCancel(ctx)
	return w.gc.insert(ctx, batch, func(all []Message) (written, error) { return w.insertNow(base, all) })
}

// insertNow runs insert's transaction for batch alone, now.
func (w *Writer) insertNow(ctx context.Context, batch []Message) (written, error) {
	var out written
	run := func(rowByRow bool) error {
		tctx, cancel := context.WithTimeout(ctx, w.opts.StatementTimeout)
		defer cancel()
		return w.db.WithContext(tctx).Transaction(func(tx *gorm.DB) error {
			var err error
			out, err = w.insertTx(tx, batch, rowByRow)
			return err
		})
	}
	err := run(false)
	if errors.Is(err, errRowData) {
		w.log.Warn("batch insert failed on its data; writing row by row", "orders", len(batch), "err", err)
		err = run(true)
	}
	if err != nil {
		return written{}, fmt.Errorf("order: insert: %w", err)
	}
	return out, nil
}

// errRowData is insertTx's answer when the batch's INSERT failed on the data of a row: the
// transaction is run again row by row, so that a poisoned row takes no unit from the count
// the next messages are judged by.
var errRowData = errors.New("a row of the batch cannot be stored")

// insertTx is insert's transaction. rowByRow inserts each fitting order as the walk meets it,
// and a row MySQL cannot store is poison that takes no unit; else the orders that fit go in
// one INSERT, and one that fails on its data is errRowData.
func (w *Writer) insertTx(tx *gorm.DB, batch []Message, rowByRow bool) (written, error) {
	out := written{ids: make(map[string]int64, len(batch)), gens: map[string]string{}}
	acts, err := lockActivities(tx, batch)
	if err != nil {
		return out, err
	}
	for id, a := range acts {
		out.gens[id] = a.Generation
		w.rowFound(id)
	}
	rids := make([]string, len(batch))
	for i, m := range batch {
		rids[i] = m.ReservationID
	}
	byRID, holds, compensated, err := readOrders(tx, batch, rids)
	if err != nil {
		return out, err
	}
	fit, err := w.judgeBatch(tx, batch, acts, byRID, holds, compensated, rowByRow, &out)
	if err != nil {
		return out, err
	}
	if err := insertFitting(tx, fit, !rowByRow, &out); err != nil {
		return out, err
	}
	if err := recordRefusals(tx, out.refused); err != nil {
		return out, err
	}
	if err := addSold(tx, acts); err != nil {
		return out, err
	}
	return out, nil
}

// judgeBatch sorts each message of the batch, in order, into out (written before,
// compensated, refused, stale, unknown or poison) or the orders that fit, which it returns;
// each fitting order adds its units to its activity's and buyer's counts, so later
// messages are judged by them. rowByRow inserts each fitting order at once; a transient
// error of that insert ends the walk.
func (w *Writer) judgeBatch(tx *gorm.DB, batch []Message, acts map[string]*guarded, byRID map[string]orderKey,
	holds map[string]*held, compensated map[string]string, rowByRow bool, out *written) ([]Message, error) {
	var fit []Message
	for _, m := range batch {
		if f, ok := byRID[m.ReservationID]; ok {
			if f.sameReservation(m) {
				out.ids[m.ReservationID] = f.ID
			} else {
				// An order under this id for another buyer or sequence: Redis handed the id
				// out again after it forgot its counter. This reservation cannot have an order
				// under its id: it fails for good (its units go back).
				out.poison = append(out.poison, poisoned{m, causeRIDConflict, "the id names another buyer's order"})
			}
			continue
		}
		a := acts[m.ActivityID]
		inc := inventory.Incarnation(m.Epoch)
		if reason, ok := compensated[m.ReservationID]; ok {
			if r, was := strings.CutPrefix(reason, refusedPrefix); was && (a == nil || inc >= a.Incarnation) {
				out.refused = append(out.refused, refusal{msg: m, reason: r})
			} else {
				out.compensated = append(out.compensated, m)
			}
			continue
		}
		if a != nil && inc < a.Incarnation {
			out.stale = append(out.stale, staleMsg{m, a.Incarnation})
			continue
		}
		h := holds[heldKey(m.ActivityID, m.UserID)]
		if h == nil {
			h = &held{seqs: map[int]bool{}}
			holds[heldKey(m.ActivityID, m.UserID)] = h
		}
		q := int64(m.Quantity)
		switch {
		case h.seqs[m.Seq]:
			// Another reservation of this buyer has this sequence: Redis handed it out again.
			out.poison = append(out.poison, poisoned{m, causeSeqConflict, ""})
		case a == nil && w.noRowFor(m.ActivityID) < w.opts.NoRowWait:
			out.unknown = append(out.unknown, m)
		case a == nil:
			// Still no row long after the reservation: not an admin create being retried.
			// Dead-lettered, so the message does not hold its queue for good.
			out.poison = append(out.poison, poisoned{m, causeNoActivity, "MySQL has no row for the activity"})
		case a.Sold+a.add+q > a.Stock:
			out.refused = append(out.refused, refusal{msg: m, reason: refusedStock, fresh: true})
		case h.units+q > a.PerUserLimit:
			out.refused = append(out.refused, refusal{msg: m, reason: refusedLimit, fresh: true})
		default:
			if rowByRow {
				if err := insertOrders(tx, []Message{m}); err != nil {
					if isTransient(err) {
						return fit, err
					}
					out.poison = append(out.poison, poisoned{m, causeInsert, err.Error()})
					continue
				}
			}
			fit = append(fit, m)
			a.add += q
			h.units += q
			h.seqs[m.Seq] = true
		}
	}
	return fit, nil
}

// addSold adds to each locked activity's sold count the units the batch's fitting orders
// took, in the order of the activity ids; an activity with none is not written.
func addSold(tx *gorm.DB, acts map[string]*guarded) error {
	for _, id := range slices.Sorted(maps.Keys(acts)) {
		if a := acts[id]; a.add != 0 {
			if err := tx.Exec("UPDATE activities SET sold = sold + ? WHERE id = ?", a.add, id).Error; err != nil {
				return fmt.Errorf("count the units sold of %s: %w", id, err)
			}
		}
	}
	return nil
}

// lockActivities locks and reads the rows of the batch's activities (step 1 of insert).
func lockActivities(tx *gorm.DB, batch []Message) (map[string]*guarded, error) {
	var ids []string
	for _, m := range batch {
		if !slices.Contains(ids, m.ActivityID) {
			ids = append(ids, m.ActivityID)
		}
	}
	slices.Sort(ids)
	lock := " FOR UPDATE"
	if tx.Dialector.Name() == "sqlite" {
		lock = ""
		if err := tx.Exec("UPDATE activities SET sold = sold WHERE id IN ?", ids).Error; err != nil {
			return nil, fmt.Errorf("lock activities: %w", err)
		}
	}
	var rows []*guarded
	if err := tx.Raw("SELECT id, stock, per_user_limit, sold, incarnation, generation FROM activities WHERE id IN ? ORDER BY id"+lock,
		ids).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("lock activities: %w", err)
	}
	out := make(map[string]*guarded, len(rows))
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

func heldKey(activity, user string) string { return activity + "\x00" + user }

// readOrders reads, in one statement, the orders under the batch's reservation ids, every
// order of the batch's buyers in their activities and the batch's compensations rows: the
// orders by reservation id, what each buyer holds (units and sequences), and the compensated
// reservations with their reasons.
func readOrders(tx *gorm.DB, batch []Message, rids []string) (map[string]orderKey, map[string]*held, map[string]string, error) {
	users := map[string][]string{}
	buyer := map[string]bool{} // heldKey of the batch's buyers
	var acts []string
	for _, m := range batch {
		if users[m.ActivityID] == nil {
			acts = append(acts, m.ActivityID)
		}
		if k := heldKey(m.ActivityID, m.UserID); !buyer[k] {
			buyer[k] = true
			users[m.ActivityID] = append(users[m.ActivityID], m.UserID)
		}
	}
	// One SELECT per index (the reservation id's, each activity's (activity, user) prefix,
	// the compensations' reservation id), not an OR the planner might answer with a scan of
	// the table under the activity's lock.
	var q strings.Builder
	q.WriteString("SELECT 0 AS src, id, reservation_id, activity_id, user_id, seq, quantity, '' AS reason FROM orders WHERE reservation_id IN ?")
	args := []any{rids}
	for _, a := range acts {
		q.WriteString(" UNION ALL SELECT 1, id, reservation_id, activity_id, user_id, seq, quantity, '' FROM orders WHERE activity_id = ? AND user_id IN ?")
		args = append(args, a, users[a])
	}
	q.WriteString(" UNION ALL SELECT 2, 0, reservation_id, activity_id, user_id, 0, quantity, reason FROM compensations WHERE reservation_id IN ?")
	args = append(args, rids)
	var rows []struct {
		Src           int
		ID            int64
		ReservationID string
		ActivityID    string
		UserID        string
		Seq           int
		Quantity      int64
		Reason        string
	}
	if err := tx.Raw(q.String(), args...).Scan(&rows).Error; err != nil {
		return nil, nil, nil, fmt.Errorf("read orders: %w", err)
	}
	inBatch := make(map[string]bool, len(rids))
	for _, r := range rids {
		inBatch[r] = true
	}
	byRID := make(map[string]orderKey, len(rids))
	holds := map[string]*held{}
	compensated := map[string]string{}
	for _, r := range rows {
		switch r.Src {
		case 2:
			compensated[r.ReservationID] = r.Reason
			continue
		case 0:
			if inBatch[r.ReservationID] {
				byRID[r.ReservationID] = orderKey{ID: r.ID, ReservationID: r.ReservationID, ActivityID: r.ActivityID, UserID: r.UserID, Seq: r.Seq}
			}
			continue
		}
		k := heldKey(r.ActivityID, r.UserID)
		if !buyer[k] {
			continue
		}
		h := holds[k]
		if h == nil {
			h = &held{seqs: map[int]bool{}}
			holds[k] = h
		}
		h.units += r.Quantity
		h.seqs[r.Seq] = true
	}
	return byRID, holds, compensated, nil
}

// insertFitting inserts the orders that fit (unless the walk did, one by one: insert false)
// and reads their ids back into out.ids. An INSERT that fails on its data is errRowData.
func insertFitting(tx *gorm.DB, fit []Message, insert bool, out *written) error {
	if len(fit) == 0 {
		return nil
	}
	if insert {
		if err := insertOrders(tx, fit); err != nil {
			if isTransient(err) {
				return err
			}
			return fmt.Errorf("%w: %w", errRowData, err)
		}
	}
	rids := make([]string, len(fit))
	for i, m := range fit {
		rids[i] = m.ReservationID
	}
	var got []orderKey
	if err := tx.Model(&sql.Order{}).Select("id", "reservation_id").Where("reservation_id IN ?", rids).Find(&got).Error; err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	for _, g := range got {
		out.ids[g.ReservationID] = g.ID
	}
	return nil
}

// insertOrders inserts rows in one statement.
func insertOrders(tx *gorm.DB, rows []Message) error {
	var b strings.Builder
	args := make([]any, 0, 6*len(rows))
	b.WriteString("INSERT INTO orders (reservation_id, activity_id, user_id, quantity, seq, status, idem_hash) VALUES ")
	for i, m := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, 'CONFIRMED', ?)")
		args = append(args, m.ReservationID, m.ActivityID, m.UserID, m.Quantity, m.Seq, m.IdemHash)
	}
	return tx.Exec(b.String(), args...).Error
}

// recordRefusals writes a compensations row per fresh refusal (a redelivery finds it and
// refuses again without counting).
func recordRefusals(tx *gorm.DB, rs []refusal) error {
	var rows []sql.Compensation
	for _, r := range rs {
		if r.fresh {
			rows = append(rows, sql.Compensation{ReservationID: r.msg.ReservationID, ActivityID: r.msg.ActivityID,
				UserID: r.msg.UserID, Quantity: r.msg.Quantity, Reason: refusedPrefix + r.reason})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rows).Error; err != nil {
		return fmt.Errorf("record refusals: %w", err)
	}
	return nil
}

// dropStale drops a message of an incarnation below its activity's in MySQL: a reservation
// of a Redis state a restore replaced. The restore rebuilt Redis from the orders MySQL held
// and counted its unit as unsold, so it never becomes an order (that would sell a unit twice)
// and is not compensated either (its shards are closed): it is counted and logged, and the
// restore's list of lost reservations names it (order/lost.go).
func (w *Writer) dropStale(m Message, current int) {
	w.m.WriterStale.Inc()
	w.log.Warn("dropped a reservation of an incarnation a restore replaced: no order (the restore counted its unit unsold)",
		"reservation", m.ReservationID, "activity", m.ActivityID, "incarnation", inventory.Incarnation(m.Epoch), "current", current)
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
