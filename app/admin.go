package app

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// adminStore writes activity definitions to MySQL, the system of record.
type adminStore struct {
	db *gorm.DB
}

// saveActivity inserts the activity row unless it exists; running it twice is harmless.
func (s *adminStore) saveActivity(ctx context.Context, a inventory.Activity) error {
	row := sql.Activity{
		ID: a.ID, CampaignID: a.CampaignID, Stock: a.Stock, PerUserLimit: a.PerUserLimit,
		OpensAt: a.OpensAt.UTC(), Shards: a.Shards, RequireToken: a.RequireToken, Generation: a.Generation,
	}
	if !a.ClosesAt.IsZero() {
		t := a.ClosesAt.UTC()
		row.ClosesAt = &t
	}
	return s.db.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
}

func (a *api) requireAdmin(c *gin.Context) {
	tok, ok := bearerToken(c.GetHeader("Authorization"))
	if !ok || a.adminToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(a.adminToken)) != 1 {
		writeError(c, newError(http.StatusUnauthorized, CodeUnauthenticated, "admin bearer token required"))
		return
	}
	if snap := a.cfg.Current(); snap != nil {
		// The connection's address, never X-Forwarded-For: the admin port is reached
		// directly by operators, and a forwarded address is the client's to choose.
		if ip := connAddr(c.Request); ip.IsValid() && !snap.Cfg.AdminAllowed(ip) {
			writeError(c, newError(http.StatusForbidden, admission.CodeForbidden, "admin API not allowed from this address"))
			return
		}
	}
	c.Next()
}

// activityBody is the body of POST /admin/v1/activities.
type activityBody struct {
	ActivityID   string  `json:"activityId"`
	CampaignID   string  `json:"campaignId"`
	Stock        int64   `json:"stock"`
	PerUserLimit int     `json:"perUserLimit"`
	OpensAt      string  `json:"opensAt"`
	ClosesAt     *string `json:"closesAt"`
	Shards       int     `json:"shards"`
	RequireToken bool    `json:"requireToken"`
}

// maxStock bounds one activity's stock; far above any real sale, far below overflow.
const maxStock = 1_000_000_000

// activityOpensGiven reports whether a well-formed activity body sets opensAt.
func activityOpensGiven(raw []byte) bool {
	var b struct {
		OpensAt string `json:"opensAt"`
	}
	_ = json.Unmarshal(raw, &b)
	return b.OpensAt != ""
}

// parseActivity decodes and checks an activity definition; a missing opensAt means now.
func parseActivity(raw []byte, now time.Time) (inventory.Activity, *apiError) {
	var b activityBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || dec.More() {
		return inventory.Activity{}, badRequest("malformed JSON body")
	}
	if !keyspace.ValidName(b.ActivityID) {
		return inventory.Activity{}, badRequest("activityId must match [A-Za-z0-9_-]{1,64}")
	}
	if b.CampaignID != "" && !keyspace.ValidName(b.CampaignID) {
		return inventory.Activity{}, badRequest("campaignId must match [A-Za-z0-9_-]{1,64}")
	}
	if b.Stock < 1 || b.Stock > maxStock {
		return inventory.Activity{}, badRequest("stock must be between 1 and 1000000000")
	}
	if b.PerUserLimit < 1 || b.PerUserLimit > 1000 {
		return inventory.Activity{}, badRequest("perUserLimit must be between 1 and 1000")
	}
	if b.Shards == 0 {
		b.Shards = 4
	}
	if b.Shards < 1 || b.Shards > keyspace.MaxShards {
		return inventory.Activity{}, badRequest(fmt.Sprintf("shards must be between 1 and %d", keyspace.MaxShards))
	}
	a := inventory.Activity{
		ID: b.ActivityID, CampaignID: b.CampaignID, Stock: b.Stock, PerUserLimit: b.PerUserLimit,
		Shards: b.Shards, RequireToken: b.RequireToken, OpensAt: now.UTC().Truncate(time.Millisecond),
	}
	if b.OpensAt != "" {
		t, err := time.Parse(time.RFC3339Nano, b.OpensAt)
		if err != nil {
			return a, badRequest("opensAt must be an RFC 3339 time")
		}
		a.OpensAt = t.UTC().Truncate(time.Millisecond)
	}
	if b.ClosesAt != nil && *b.ClosesAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *b.ClosesAt)
		if err != nil {
			return a, badRequest("closesAt must be an RFC 3339 time")
		}
		a.ClosesAt = t.UTC().Truncate(time.Millisecond)
		if !a.ClosesAt.After(a.OpensAt) {
			return a, badRequest("closesAt must be after opensAt")
		}
	}
	return a, nil
}

func activityJSON(a inventory.Activity) gin.H {
	h := gin.H{
		"activityId": a.ID, "campaignId": a.CampaignID, "stock": a.Stock, "perUserLimit": a.PerUserLimit,
		"opensAt": millis(a.OpensAt), "closesAt": nil, "shards": a.Shards, "requireToken": a.RequireToken,
	}
	if !a.ClosesAt.IsZero() {
		h["closesAt"] = millis(a.ClosesAt)
	}
	return h
}

func (a *api) postActivity(c *gin.Context) {
	raw, err := io.ReadAll(io.LimitReader(c.Request.Body, 64<<10+1))
	if err != nil {
		writeError(c, badRequest("cannot read body"))
		return
	}
	if len(raw) > 64<<10 {
		writeError(c, newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 64 KiB"))
		return
	}
	act, e := parseActivity(raw, a.now())
	if e != nil {
		writeError(c, e)
		return
	}
	if row, known, err := a.admin.row(c.Request.Context(), act.ID); err != nil {
		a.log.Error("read activity from MySQL", "activity", act.ID, "err", err)
		writeError(c, unavailable("database unavailable, retry: the request is idempotent"))
		return
	} else if known && row.ArchivedAt != nil {
		writeError(c, newError(http.StatusConflict, CodeArchived, "an archived activity has this id: a new sale needs a new id").
			with("activityId", act.ID))
		return
	} else if known {
		a.createKnown(c, act, activityOfRow(row), activityOpensGiven(raw))
		return
	}
	if !activityOpensGiven(raw) {
		// "Open now" of a retried request is not a new definition: the existing activity's
		// opening stands, so an identical retry without opensAt is answered 200.
		v, ok, err := a.inv.Lookup(c.Request.Context(), act.ID)
		if err != nil {
			writeError(c, a.storeError(err))
			return
		}
		if ok {
			act.OpensAt = v.OpensAt
			if !act.ClosesAt.IsZero() && !act.ClosesAt.After(act.OpensAt) {
				writeError(c, newError(http.StatusConflict, CodeConflict, "a different activity exists under this id"))
				return
			}
		}
	}
	got, created, err := a.inv.Create(c.Request.Context(), act)
	if errors.Is(err, inventory.ErrConflict) {
		writeError(c, newError(http.StatusConflict, CodeConflict, "a different activity exists under this id"))
		return
	}
	if errors.Is(err, inventory.ErrInvalid) {
		writeError(c, badRequest(err.Error()))
		return
	}
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	if err := a.admin.saveActivity(c.Request.Context(), got); err != nil {
		a.log.Error("save activity to MySQL", "activity", got.ID, "err", err)
		writeError(c, unavailable("database unavailable, retry: the request is idempotent"))
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		a.log.Info("activity created", "activity", got.ID, "stock", got.Stock, "shards", got.Shards)
		if a.activityCreated != nil {
			a.activityCreated()
		}
	}
	c.JSON(status, activityJSON(got))
}

func (a *api) getReconciliation(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	if v, e := a.lookup(c, a.cfg.Current(), id); e != nil {
		if e.Status != http.StatusNotFound || !a.archivedRecord(c, id, "reconciliation") {
			writeError(c, e)
		}
		return
	} else if v.Recovering {
		writeError(c, newError(http.StatusServiceUnavailable, CodeRecovering,
			"Redis lost this activity's state ("+v.RecoveringReason+"): restore it with POST /admin/v1/activities/"+id+"/restore").after(5*time.Second))
		return
	}
	rep, err := a.rec.Report(c.Request.Context(), id)
	if errors.Is(err, order.ErrUnknownActivity) {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such activity"))
		return
	}
	if err != nil {
		a.log.Warn("reconciliation", "activity", id, "err", err)
		writeError(c, unavailable("reconciliation needs Redis and MySQL"))
		return
	}
	c.JSON(http.StatusOK, rep)
}

func (a *api) getConfig(c *gin.Context) {
	st := a.cfg.Status()
	var applied any
	if !st.AppliedAt.IsZero() {
		applied = millis(st.AppliedAt)
	}
	var lastErr, lastErrAt any
	if st.LastError != "" {
		lastErr, lastErrAt = st.LastError, millis(st.LastErrorAt)
	}
	c.JSON(http.StatusOK, gin.H{
		"source": st.Source, "version": st.Version, "appliedAt": applied,
		"lastError": lastErr, "lastErrorAt": lastErrAt, "lastErrorSuperseded": st.LastErrorSuperseded,
		"config": st.Config,
	})
}
