package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/sql"
)

const (
	// listDefault and listMax bound one page of GET /admin/v1/activities.
	listDefault = 100
	listMax     = 1000
)

// listActivities returns activity rows from MySQL, the system of record, in id order after
// the id after ("" = from the start), at most limit.
func (s *adminStore) listActivities(ctx context.Context, after string, limit int) ([]sql.Activity, error) {
	var rows []sql.Activity
	q := s.db.WithContext(ctx).Order("id").Limit(limit)
	if after != "" {
		q = q.Where("id > ?", after)
	}
	return rows, q.Find(&rows).Error
}

// getActivities answers GET /admin/v1/activities?limit=&after=: a page of the activities'
// definitions from MySQL, and next, the after of the next page (null on the last one).
func (a *api) getActivities(c *gin.Context) {
	limit := listDefault
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > listMax {
			writeError(c, badRequest("limit must be an integer from 1 to "+strconv.Itoa(listMax)))
			return
		}
		limit = n
	}
	after := c.Query("after")
	if after != "" && !keyspace.ValidName(after) {
		writeError(c, badRequest("after must be an activity id ([A-Za-z0-9_-]{1,64})"))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Second)
	defer cancel()
	// One more than asked tells whether another page follows.
	rows, err := a.admin.listActivities(ctx, after, limit+1)
	if err != nil {
		a.log.Warn("list activities from MySQL", "err", err)
		writeError(c, unavailable("database unavailable"))
		return
	}
	var next any
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	list := make([]gin.H, 0, len(rows))
	now := a.now()
	for _, r := range rows {
		h := gin.H{
			"activityId": r.ID, "campaignId": r.CampaignID, "stock": r.Stock, "perUserLimit": r.PerUserLimit,
			"opensAt": millis(r.OpensAt), "closesAt": nil, "shards": r.Shards, "requireToken": r.RequireToken,
			"createdAt": millis(r.CreatedAt),
		}
		if r.ClosesAt != nil {
			h["closesAt"] = millis(*r.ClosesAt)
		}
		for k, v := range lifecycleJSON(r, lifecycleState(r, now)) {
			h[k] = v
		}
		list = append(list, h)
	}
	c.JSON(http.StatusOK, gin.H{"activities": list, "next": next})
}

// getAdminActivity answers GET /admin/v1/activities/{id}: the definition as Redis holds it
// (shards is the current layout's count) with the live remaining stock and sold-out mark.
func (a *api) getAdminActivity(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	v, ok, err := a.inv.Lookup(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	if !ok {
		if !a.archivedRecord(c, id, "") {
			writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such activity"))
		}
		return
	}
	h := activityJSON(v.Activity)
	if !v.EndedAt.IsZero() {
		h["endedAt"] = millis(v.EndedAt)
	}
	h["remaining"] = max(v.Remaining, 0)
	h["soldOut"] = v.SoldOut || v.Remaining <= 0
	c.JSON(http.StatusOK, h)
}

// maxProfileSeconds bounds ?seconds= of a CPU profile or a trace: under the admin listener's
// write timeout, so the answer is written before the server gives up on it.
const maxProfileSeconds = int(adminWriteTimeout/time.Second) - 5

// secretFlags are the flags whose values /debug/pprof/cmdline does not show.
var secretFlags = []string{"dsn", "password", "secret", "token", "key"}

// redactArgs is args with the value of every flag whose name holds a secret word replaced
// ("--mysql-dsn=x", "--mysql-dsn x", "-redis-password x").
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	secret := func(flag string) bool {
		name := strings.ToLower(strings.TrimLeft(flag, "-"))
		for _, w := range secretFlags {
			if strings.Contains(name, w) {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		out[i] = a
		if i == 0 || !strings.HasPrefix(a, "-") {
			continue
		}
		if name, _, ok := strings.Cut(a, "="); ok {
			if secret(name) {
				out[i] = name + "=[redacted]"
			}
			continue
		}
		if secret(a) && i+1 < len(args) { // a secret flag takes a value, whatever it starts with
			out[i+1] = "[redacted]"
			i++
		}
	}
	return out
}

// pprofHandler serves net/http/pprof under /debug/pprof/ (the admin listener, behind the
// admin token): the index, cmdline, profile, symbol, trace and every named profile.
func pprofHandler(c *gin.Context) {
	switch name := strings.TrimPrefix(c.Param("name"), "/"); name {
	case "":
		pprof.Index(c.Writer, c.Request)
	case "cmdline":
		// net/http/pprof's answer, with the values of secret flags redacted (a DSN given as
		// a flag carries the MySQL password).
		c.Header("X-Content-Type-Options", "nosniff")
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(strings.Join(redactArgs(os.Args), "\x00")))
	case "profile", "trace":
		// A profile or trace longer than the admin's write timeout is cut off with nothing
		// written: refuse it with the bound instead.
		if sec, err := strconv.Atoi(c.DefaultQuery("seconds", "1")); err != nil || sec < 1 || sec > maxProfileSeconds {
			writeError(c, badRequest(fmt.Sprintf("seconds must be a number from 1 to %d (the admin listener's write timeout is %v)", maxProfileSeconds, adminWriteTimeout)))
			return
		}
		if name == "profile" {
			pprof.Profile(c.Writer, c.Request)
		} else {
			pprof.Trace(c.Writer, c.Request)
		}
	case "symbol":
		pprof.Symbol(c.Writer, c.Request)
	default:
		pprof.Handler(name).ServeHTTP(c.Writer, c.Request)
	}
}
