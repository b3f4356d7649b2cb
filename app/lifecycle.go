package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// A sale has an end (docs/API.md, "Lifecycle"). LIVE until an operator ends it (POST .../end:
// closed now on every instance, whatever its closesAt says); ENDED once ended, or once its
// close passed, or sold out; ARCHIVED once an operator archived it (POST .../archive): the
// pipeline drained, MySQL keeps the final counts and report in the row, and the activity's
// Redis keys are deleted. MySQL is the record of each step and goes first: a crash between a
// step's MySQL write and its Redis one is finished by the same POST again.

// Lifecycle states and codes.
const (
	stateLive     = "LIVE"
	stateEnded    = "ENDED"
	stateArchived = "ARCHIVED"
	// CodeNotEnded: an archive of a sale that may still sell (not ended, not closed, not
	// sold out).
	CodeNotEnded = "NOT_ENDED"
	// CodeNotDrained: an archive while reservations are still on their way to MySQL.
	CodeNotDrained = "NOT_DRAINED"
	// CodeArchived: a create or a restore of an archived activity.
	CodeArchived = "ARCHIVED"
)

// archivePurgeTimeout bounds the steps after the archive's commit (the event, two purges).
const archivePurgeTimeout = 2 * time.Minute

// archiveSettle is how long the archive waits, after it told the instances, before it deletes
// the keys again: an instance that had not dropped the activity yet may have written its
// funnel counts once more.
const archiveSettle = time.Second

// closedAt is when the row's sale closed (ended or closesAt, the earlier), zero when neither.
func closedAt(r sql.Activity) time.Time {
	var at time.Time
	if r.EndedAt != nil {
		at = *r.EndedAt
	}
	if r.ClosesAt != nil && (at.IsZero() || r.ClosesAt.Before(at)) {
		at = *r.ClosesAt
	}
	return at
}

// row reads the activity's MySQL row, archived or not; false when there is none.
func (s *adminStore) row(ctx context.Context, id string) (sql.Activity, bool, error) {
	var r sql.Activity
	err := s.db.WithContext(ctx).Where("id = ?", id).First(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r, false, nil
	}
	return r, err == nil, err
}

// lifecycleState is the state of a row at now. A sold-out sale is not ended: a compensation
// or a unit in transit puts stock back on sale.
func lifecycleState(r sql.Activity, now time.Time) string {
	switch {
	case r.ArchivedAt != nil:
		return stateArchived
	case r.EndedAt != nil, r.ClosesAt != nil && !now.Before(*r.ClosesAt):
		return stateEnded
	}
	return stateLive
}

// lifecycleJSON is the answer of the end and archive routes.
func lifecycleJSON(r sql.Activity, state string) gin.H {
	h := gin.H{"activityId": r.ID, "state": state, "endedAt": nil, "archivedAt": nil}
	if r.EndedAt != nil {
		h["endedAt"] = millis(*r.EndedAt)
	}
	if r.ArchivedAt != nil {
		h["archivedAt"] = millis(*r.ArchivedAt)
	}
	return h
}

// lifecycleRow reads the row of the route's activity, answering the errors itself (false).
func (a *api) lifecycleRow(c *gin.Context) (sql.Activity, bool) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return sql.Activity{}, false
	}
	r, ok, err := a.admin.row(c.Request.Context(), id)
	if err != nil {
		writeError(c, unavailable("reading the activity from MySQL failed").after(5*time.Second))
		return r, false
	}
	if !ok {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such activity in MySQL"))
		return r, false
	}
	return r, true
}

// postEnd serves POST /admin/v1/activities/{id}/end: the sale ends now (the first end
// stands: a second POST answers the same endedAt). MySQL records it, then Redis's meta, which
// every instance applies within a refresh: reservations, tokens and the waiting room answer
// 410 CLOSED from then on.
func (a *api) postEnd(c *gin.Context) {
	r, ok := a.lifecycleRow(c)
	if !ok {
		return
	}
	if r.ArchivedAt != nil {
		c.JSON(http.StatusOK, lifecycleJSON(r, stateArchived))
		return
	}
	ctx := c.Request.Context()
	if !a.notRestoring(c, r.ID) {
		return
	}
	now := a.now().UTC().Truncate(time.Millisecond)
	if err := a.admin.db.WithContext(ctx).Model(&sql.Activity{}).Where("id = ? AND ended_at IS NULL", r.ID).
		Update("ended_at", now).Error; err != nil {
		writeError(c, unavailable("writing the end to MySQL failed; retry: the request is idempotent").after(time.Second))
		return
	}
	r, ok, err := a.admin.row(ctx, r.ID)
	if err != nil || !ok || r.EndedAt == nil {
		writeError(c, unavailable("reading the end back from MySQL failed; retry: the request is idempotent").after(time.Second))
		return
	}
	if _, err := a.inv.End(ctx, r.ID, *r.EndedAt); err != nil && !errors.Is(err, inventory.ErrNotFound) {
		// MySQL has the end; Redis's meta has not: the same POST writes it.
		writeError(c, a.storeError(err))
		return
	}
	a.log.Info("activity ended", "activity", r.ID, "endedAt", millis(*r.EndedAt))
	c.JSON(http.StatusOK, lifecycleJSON(r, stateEnded))
}

// notRestoring answers 409 and reports false while a restore of the activity runs: it
// rewrites meta from the MySQL row it read at its start, so an end written meanwhile would be
// lost, and its rebuild would write keys after an archive deleted them.
func (a *api) notRestoring(c *gin.Context, id string) bool {
	busy, err := a.inv.Restoring(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.storeError(err))
		return false
	}
	if busy {
		writeError(c, newError(http.StatusConflict, CodeConflict, "a restore of this activity is running: retry once it finished (GET .../restore)"))
		return false
	}
	return true
}

// finalReport is what MySQL keeps of an archived activity (activities.final_report), the
// answer of the archive and of the report, reconciliation and definition routes after it.
type finalReport struct {
	ActivityID string `json:"activityId"`
	EndedAt    string `json:"endedAt"`
	ArchivedAt string `json:"archivedAt"`
	// Stock and Sold are the row's at the archive: units on sale and units in orders.
	Stock int64 `json:"stock"`
	Sold  int64 `json:"sold"`
	// Orders are MySQL's orders, Compensated the units of its compensation rows.
	Orders      reportOrders `json:"orders"`
	Compensated int64        `json:"compensated"`
	// RedisLost: archived while Redis had lost the activity's state (?force=true): the
	// report and reconciliation below are null, and a reservation answered 202 that never
	// reached MySQL is not listed.
	RedisLost      bool          `json:"redisLost"`
	Report         *saleReport   `json:"report"`
	Reconciliation *order.Report `json:"reconciliation"`
	// Lost are the reservations answered 202 that never reached MySQL, as restores listed
	// them (the activity's lost set, whole: it goes with the Redis keys).
	Lost []string `json:"lost"`
}

// postArchive serves POST /admin/v1/activities/{id}/archive[?force=true]. An activity is
// archived once its sale ended (ended, or closed by its closesAt: 409 NOT_ENDED before; a
// sold-out sale is ended first, since a compensation puts units back on sale), the end settled
// in Redis and every reservation reached MySQL (journal and in-flight 0: 409 NOT_DRAINED
// before). A running restore is waited for (409 CONFLICT). One MySQL
// transaction, under the row's lock (the order writer's guard waits on it), records the
// final counts and report, sets archived_at and moves the incarnation on: a message of the
// activity that comes later is dropped as stale, never an order. Then every instance is told
// and the Redis keys are deleted. A recovering activity (Redis lost its state) is archived
// only with ?force=true: its lost 202s cannot be listed once its keys are gone. POST again
// on an archived activity deletes what keys are left and answers the record.
func (a *api) postArchive(c *gin.Context) {
	r, ok := a.lifecycleRow(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	id := r.ID
	fin := finalReport{ActivityID: id}
	if r.ArchivedAt == nil {
		if !a.archiveReady(c, r, &fin) {
			return
		}
		if err := a.admin.archive(ctx, id, a.now(), &fin); err != nil {
			a.log.Warn("archive: MySQL", "activity", id, "err", err)
			writeError(c, unavailable("writing the archive to MySQL failed; retry: the request is idempotent").after(time.Second))
			return
		}
		a.log.Info("activity archived", "activity", id, "sold", fin.Sold, "orders", fin.Orders.Count, "redisLost", fin.RedisLost)
	}
	// From here the steps finish whatever the client does: a hang-up after the commit would
	// leave MySQL archived and the keys in Redis until the next POST.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), archivePurgeTimeout)
	defer cancel()
	if err := a.inv.Archived(ctx, id); err != nil {
		a.log.Warn("archive: telling the instances failed; each finds the archive's mark when it misses the keys", "activity", id, "err", err)
	}
	n, err := a.inv.Purge(ctx, id)
	if err == nil {
		_ = backoff.Sleep(ctx, archiveSettle)
		var m int
		m, err = a.inv.Purge(ctx, id)
		n += m
	}
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	r, ok, err = a.admin.row(ctx, id)
	if err != nil || !ok {
		writeError(c, unavailable("reading the archive back from MySQL failed"))
		return
	}
	h := lifecycleJSON(r, stateArchived)
	h["keysDeleted"] = n
	h["report"] = nil
	if r.FinalReport != nil {
		h["report"] = json.RawMessage(*r.FinalReport)
	}
	c.JSON(http.StatusOK, h)
}

// archiveReady checks that the activity may be archived now and fills what Redis says of it
// into fin; it answers the refusal itself (false). The sale must have ended (ended, or its
// closesAt passed), and Redis must say the end settled (EndSettle since it was written, by
// Redis's clock: every instance applied it), so that the drain read after it counts every
// reservation of the sale; then nothing may be between Redis and MySQL. An activity Redis lost
// is archived only when forced, without the drain (its journals are gone or unreadable).
func (a *api) archiveReady(c *gin.Context, r sql.Activity, fin *finalReport) bool {
	ctx, id := c.Request.Context(), r.ID
	if lifecycleState(r, a.now()) == stateLive {
		writeError(c, newError(http.StatusConflict, CodeNotEnded,
			"the sale may still sell: end it first with POST /admin/v1/activities/"+id+"/end"))
		return false
	}
	if !a.notRestoring(c, id) {
		return false
	}
	v, known, err := a.inv.Lookup(ctx, id)
	if err != nil {
		writeError(c, a.storeError(err))
		return false
	}
	fin.RedisLost = !known || v.Recovering
	if fin.RedisLost && c.Query("force") != "true" {
		writeError(c, newError(http.StatusConflict, CodeRecovering,
			"Redis lost this activity's state: restore it (POST /admin/v1/activities/"+id+"/restore) to list the 202s it lost, "+
				"or archive it as it is with ?force=true"))
		return false
	}
	if lost, err := a.rdb.SMembers(ctx, inventory.LostKey(id)).Result(); err != nil {
		writeError(c, a.storeError(err))
		return false
	} else {
		fin.Lost = lost
	}
	if fin.RedisLost {
		return true
	}
	end := closedAt(r)
	ended, err := a.inv.End(ctx, id, end)
	if errors.Is(err, inventory.ErrNotFound) {
		writeError(c, newError(http.StatusConflict, CodeRecovering, "Redis lost this activity's state meanwhile: retry"))
		return false
	}
	if err != nil {
		writeError(c, a.storeError(err))
		return false
	}
	if !ended.Settled {
		writeError(c, newError(http.StatusConflict, CodeNotDrained,
			"the sale ended less than "+inventory.EndSettle.String()+" ago: instances may still be applying it; retry in a few seconds"))
		return false
	}
	rec, err := a.rec.Report(ctx, id)
	if err != nil {
		a.log.Warn("archive: reconciliation", "activity", id, "err", err)
		writeError(c, unavailable("the archive needs Redis and MySQL"))
		return false
	}
	if rec.JournalPending != 0 || rec.InFlight != 0 {
		writeError(c, newError(http.StatusConflict, CodeNotDrained,
			"reservations are still on their way to MySQL; retry once they arrived").
			with("journalPending", rec.JournalPending).with("inFlight", rec.InFlight))
		return false
	}
	rep, err := a.saleReport(ctx, v)
	if err != nil {
		a.log.Warn("archive: sale report", "activity", id, "err", err)
		writeError(c, unavailable("the archive needs Redis and MySQL"))
		return false
	}
	fin.Report, fin.Reconciliation = rep, &rec
	return true
}

// archive writes the archive in one transaction under the activity row's lock: the final
// counts (read under the lock, so no writer moves them meanwhile) into fin, fin into
// final_report, archived_at, ended_at if it had none, and incarnation + 1. A row archived
// meanwhile is left as it is.
func (s *adminStore) archive(ctx context.Context, id string, now time.Time, fin *finalReport) error {
	now = now.UTC().Truncate(time.Millisecond)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if tx.Dialector.Name() != "mysql" {
			// SQLite: a write first takes the database's write lock (order/insert.go).
			if err := tx.Exec("UPDATE activities SET incarnation = incarnation WHERE id = ?", id).Error; err != nil {
				return err
			}
		}
		var r sql.Activity
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", id).First(&r).Error; err != nil {
			return err
		}
		if r.ArchivedAt != nil {
			return nil
		}
		if err := tx.Model(&sql.Order{}).Where("activity_id = ?", id).
			Select("COUNT(*) AS count, COALESCE(SUM(quantity), 0) AS units, COUNT(DISTINCT user_id) AS distinct_buyers").
			Scan(&fin.Orders).Error; err != nil {
			return err
		}
		if err := tx.Model(&sql.Compensation{}).Where("activity_id = ?", id).
			Select("COALESCE(SUM(quantity), 0)").Scan(&fin.Compensated).Error; err != nil {
			return err
		}
		ended := closedAt(r)
		if ended.IsZero() {
			ended = now
		}
		fin.Stock, fin.Sold = r.Stock, r.Sold
		fin.EndedAt, fin.ArchivedAt = millis(ended), millis(now)
		b, err := json.Marshal(fin)
		if err != nil {
			return fmt.Errorf("final report: %w", err)
		}
		text := string(b)
		return tx.Model(&sql.Activity{}).Where("id = ? AND archived_at IS NULL", id).Updates(map[string]any{
			"archived_at": now, "ended_at": ended, "final_report": text,
			"incarnation": gorm.Expr("incarnation + 1"),
		}).Error
	})
}

// archivedRecord answers an admin read of an archived activity from its MySQL row (the
// part of the final report the route names: "" the whole definition and record) and reports
// true; false when the activity is not archived (the route goes on). A MySQL that cannot be
// read is answered 503.
func (a *api) archivedRecord(c *gin.Context, id, part string) bool {
	r, ok, err := a.admin.row(c.Request.Context(), id)
	if err != nil {
		writeError(c, unavailable("reading the activity from MySQL failed").after(time.Second))
		return true
	}
	if !ok || r.ArchivedAt == nil || r.FinalReport == nil {
		return false
	}
	var fin map[string]json.RawMessage
	if err := json.Unmarshal([]byte(*r.FinalReport), &fin); err != nil {
		a.log.Error("the kept record of an archived activity is not JSON", "activity", id, "err", err)
		writeError(c, unavailable("the kept record of this activity cannot be read"))
		return true
	}
	if part != "" {
		v := fin[part]
		if len(v) == 0 || string(v) == "null" {
			writeError(c, newError(http.StatusGone, CodeArchived, "the activity was archived while Redis had lost its state: no "+part+" was kept").
				with("activityId", id))
			return true
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", v)
		return true
	}
	h := activityJSON(activityOfRow(r))
	for k, v := range lifecycleJSON(r, stateArchived) {
		h[k] = v
	}
	h["final"] = json.RawMessage(*r.FinalReport)
	c.JSON(http.StatusOK, h)
	return true
}
