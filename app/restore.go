package app

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// Error codes of a Redis that lost an activity's state (docs/API.md section 4).
const (
	// CodeRecovering: the activity is in the recovering state (reservations 503).
	CodeRecovering = "RECOVERING"
	// CodeRestoreNeeded: the admin create of an activity MySQL knows while Redis lost it: a
	// restore (POST /admin/v1/activities/{id}/restore) is needed, never a new load of stock.
	CodeRestoreNeeded = "RESTORE_NEEDED"
)

var _ inventory.Catalog = (*adminStore)(nil)

// Known lists the activities MySQL knows with their generations: the inventory's catalog
// (a loss of Redis state is detected against it).
func (s *adminStore) Known(ctx context.Context) ([]inventory.Activity, error) {
	var rows []sql.Activity
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]inventory.Activity, len(rows))
	for i, r := range rows {
		out[i] = activityOfRow(r)
	}
	return out, nil
}

// One is the activity id as MySQL knows it (inventory.Catalog).
func (s *adminStore) One(ctx context.Context, id string) (inventory.Activity, bool, error) {
	return s.activityRow(ctx, id)
}

// activityRow reads the activity's MySQL row; false when there is none.
func (s *adminStore) activityRow(ctx context.Context, id string) (inventory.Activity, bool, error) {
	var row sql.Activity
	err := s.db.WithContext(ctx).Where("id = ?", id).First(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return inventory.Activity{}, false, nil
	}
	if err != nil {
		return inventory.Activity{}, false, err
	}
	return activityOfRow(row), true, nil
}

func activityOfRow(r sql.Activity) inventory.Activity {
	a := inventory.Activity{ID: r.ID, CampaignID: r.CampaignID, Stock: r.Stock, PerUserLimit: r.PerUserLimit,
		OpensAt: r.OpensAt.UTC(), Shards: r.Shards, RequireToken: r.RequireToken, Generation: r.Generation}
	if r.ClosesAt != nil {
		a.ClosesAt = r.ClosesAt.UTC()
	}
	return a
}

// sameDefinition reports whether two definitions are the same activity (times to the ms).
func sameDefinition(a, b inventory.Activity) bool {
	return a.ID == b.ID && a.CampaignID == b.CampaignID && a.Stock == b.Stock && a.PerUserLimit == b.PerUserLimit &&
		a.OpensAt.UnixMilli() == b.OpensAt.UnixMilli() && a.ClosesAt.UnixMilli() == b.ClosesAt.UnixMilli() &&
		a.Shards == b.Shards && a.RequireToken == b.RequireToken
}

// createKnown answers the admin create of an activity MySQL already knows (row), without
// ever loading stock: a different definition is 409 CONFLICT; the same one is the current
// state (200) while Redis holds that generation, else 409 RESTORE_NEEDED.
func (a *api) createKnown(c *gin.Context, act, row inventory.Activity, opensGiven bool) {
	if !opensGiven {
		act.OpensAt = row.OpensAt
	}
	if !sameDefinition(act, row) {
		writeError(c, newError(http.StatusConflict, CodeConflict, "a different activity exists under this id"))
		return
	}
	ctx := c.Request.Context()
	gen, ok, err := a.inv.Generation(ctx, act.ID)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	v, cached := a.inv.Activity(act.ID)
	if !ok || (row.Generation != "" && gen != row.Generation) || (cached && v.Recovering) {
		writeError(c, newError(http.StatusConflict, CodeRestoreNeeded,
			"MySQL knows this activity but Redis lost its state: restore it with POST /admin/v1/activities/"+act.ID+"/restore").
			with("activityId", act.ID))
		return
	}
	if !cached {
		if v, _, err = a.inv.Lookup(ctx, act.ID); err != nil {
			writeError(c, a.storeError(err))
			return
		}
	}
	c.JSON(http.StatusOK, activityJSON(v.Activity))
}

// postRestore serves POST /admin/v1/activities/{id}/restore: rebuild the activity's Redis
// state from MySQL (order.Reconciler.Restore) and reopen it.
func (a *api) postRestore(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Minute)
	defer cancel()
	rep, err := a.rec.Restore(ctx, a.inv, id, a.restoreOpts)
	switch {
	case err == nil:
		c.JSON(http.StatusOK, rep)
	case errors.Is(err, order.ErrUnknownActivity):
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such activity in MySQL"))
	case errors.Is(err, inventory.ErrBusy), errors.Is(err, order.ErrRestoreRace):
		writeError(c, newError(http.StatusConflict, CodeConflict, "another restore of this activity is in progress or won: "+err.Error()))
	case errors.Is(err, inventory.ErrInvalid):
		a.log.Error("restore refused", "activity", id, "err", err)
		writeError(c, newError(http.StatusConflict, CodeConflict, err.Error()))
	default:
		a.log.Warn("restore failed; the activity stays recovering, retry", "activity", id, "err", err)
		writeError(c, unavailable("restore needs Redis, MySQL and a drained pipeline; the activity stays recovering, retry: "+err.Error()).after(5*time.Second))
	}
}

// recoveringIDs are the activities this instance holds in the recovering state.
func (a *api) recoveringIDs() []string {
	if a.inv == nil {
		return nil
	}
	ids, _ := a.inv.Recovering()
	return ids
}
