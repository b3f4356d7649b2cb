package app

import (
	_ "embed"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/app/waitroom"
	"github.com/seckill/seckill/config"
)

// queueRoutes are the waiting room's storefront routes (docs/API.md section 4, "Waiting room"):
// the API and the page.
func (a *api) queueRoutes(r *gin.Engine, v1 *gin.RouterGroup) {
	v1.POST("/activities/:id/queue", a.postQueue)
	v1.GET("/activities/:id/queue/:ticket", a.getQueue)
	r.GET("/waiting-room", getQueuePage)
}

// queuePage is the waiting room's page: static, the activity and the credentials come from
// its URL (the query and the fragment) and go to the API from the browser.
//
//go:embed waitroom_page.html
var queuePage []byte

func getQueuePage(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "no-referrer")
	// No framing (frame-ancestors, and X-Frame-Options for older browsers): the page reserves
	// by itself once admitted, so another site must not wrap it.
	c.Header("X-Frame-Options", "DENY")
	c.Header("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	c.Data(http.StatusOK, "text/html; charset=utf-8", queuePage)
}

var errNoRoom = newError(http.StatusNotFound, CodeNotFound, "this activity has no waiting room")

// queueRequest is the storefront request of a join or a poll (kind) of an activity with its
// waiting room on, and the room's settings; false when it was answered already.
func (a *api) queueRequest(c *gin.Context, kind admission.Kind) (*Snapshot, *admission.Request, config.WaitingRoom, bool) {
	snap := snapshot(c)
	r, e := a.storefrontRequest(c, snap, kind)
	if e != nil {
		writeError(c, e)
		return nil, nil, config.WaitingRoom{}, false
	}
	w, on := snap.Cfg.WaitingRoom(r.Activity.ID)
	if !on {
		writeError(c, errNoRoom)
		return nil, nil, config.WaitingRoom{}, false
	}
	return snap, r, w, true
}

// postQueue takes the user's place in line (or returns the one the user has) after the
// admission layers that fit it: kill switch, state (from the prequeue before the opening),
// sold out, canary and the per-IP budget of limits.tokens; a blacklisted user gets a place
// that never advances.
func (a *api) postQueue(c *gin.Context) {
	snap, r, w, ok := a.queueRequest(c, admission.ForQueue)
	if !ok {
		return
	}
	id := r.Activity.ID
	ctx := c.Request.Context()
	adm, err := a.gate.Admit(ctx, snap.Admission, r)
	if err != nil {
		a.answerError(c, err)
		return
	}
	t, err := a.room.Join(ctx, id, r.UserID, !adm.Blocked)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	st, err := a.room.Status(ctx, id, r.UserID, t.N, w, r.Activity.OpensAt, adm.Blocked, a.now())
	switch {
	case errors.Is(err, waitroom.ErrUnknownLine):
		st = waitroom.Status{State: waitroom.StateWaiting, ETA: -1, PollAfter: time.Second}
	case err != nil: // the place is taken: joining again returns it
		writeError(c, a.storeError(err))
		return
	}
	code := http.StatusOK
	if t.New {
		code = http.StatusCreated
	}
	setOutcome(c, "QUEUED")
	c.Header("Cache-Control", "no-store") // the answer may carry a pass
	c.JSON(code, queueBody(id, t.Token, st, a.now()))
}

// getQueue answers a poll of a ticket from this instance's memory: no Redis call, but one
// for a place whose turn came (is it the user's, is its pass used?), a place skipped, or a
// ticket newer than the instance's reading of the line (waitroom.Room.Poll).
func (a *api) getQueue(c *gin.Context) {
	snap, r, w, ok := a.queueRequest(c, admission.ForPoll)
	if !ok {
		return
	}
	id := r.Activity.ID
	ticket := c.Param("ticket")
	n, ok := a.room.ParseTicket(id, r.UserID, ticket)
	if !ok {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such ticket"))
		return
	}
	adm, err := a.gate.Admit(c.Request.Context(), snap.Admission, r)
	if err != nil {
		a.answerError(c, err)
		return
	}
	now := a.now()
	st, err := a.room.Poll(c.Request.Context(), id, r.UserID, n, w, r.Activity.OpensAt, adm.Blocked, now)
	switch {
	case errors.Is(err, waitroom.ErrUnknownLine):
		writeError(c, unavailable("the line is not known on this instance yet, retry shortly"))
		return
	case errors.Is(err, waitroom.ErrNotYourPlace):
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "this ticket's place in line is no longer yours (the line lost it): join again"))
		return
	case err != nil:
		writeError(c, a.storeError(err))
		return
	}
	setOutcome(c, st.State)
	c.Header("Cache-Control", "no-store") // the answer may carry a pass
	c.JSON(http.StatusOK, queueBody(id, ticket, st, now))
}

// queueBody is the answer of a join or a poll.
func queueBody(id, ticket string, st waitroom.Status, now time.Time) gin.H {
	b := gin.H{"activityId": id, "ticket": ticket, "status": st.State, "position": nil, "ahead": nil,
		"etaSeconds": nil, "pollAfterMs": st.PollAfter.Milliseconds(), "pass": nil, "passExpiresAt": nil,
		"serverTime": millis(now)}
	if st.Known {
		b["position"], b["ahead"] = st.Position, st.Ahead
	}
	if st.ETA >= 0 {
		b["etaSeconds"] = math.Round(st.ETA.Seconds()*10) / 10
	}
	if st.Pass != "" {
		b["pass"], b["passExpiresAt"] = st.Pass, millis(st.PassExpires)
	}
	return b
}
