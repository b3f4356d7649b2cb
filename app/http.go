package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/app/waitroom"
	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
	"github.com/seckill/seckill/order"
)

const maxBodyBytes = 4 << 10

// api serves the HTTP interface of docs/API.md section 4.
type api struct {
	cfg *config.Reloader[Snapshot]
	inv *inventory.Store
	lim *limiter.Limiter
	// room is the waiting room of the activities that turn one on.
	room *waitroom.Room
	// gate is the admission step of the storefront routes (built by newAPI).
	gate       *admission.Gate
	rec        *order.Reconciler
	admin      *adminStore
	rdb        redis.UniversalClient
	adminToken string
	metrics    *httpMetrics
	// funnel counts the reservation attempts by activity and outcome (nil: not counted).
	funnel   *funnel
	gatherer prometheus.Gatherer
	log      *slog.Logger
	now      func() time.Time

	// local holds the per-instance budgets of reads and token requests.
	local *localLimits
	// ready caches the Redis probe of /readyz.
	ready *readyProbe
	// writerHealthy reports the order writer's health when this process runs the writer role
	// (nil otherwise); servesAPI is whether it runs the api role. See readiness.
	writerHealthy func() error
	// activityCreated, when set, is told of each activity the admin API created (the shard
	// layouts follow the configuration, which may name the new activity's shard count).
	activityCreated func()
	servesAPI       bool
	// restores runs the jobs of POST .../restore (restoreOpts: their waits, zero: order's
	// defaults).
	restores    *restores
	restoreOpts order.RestoreOptions
	// accessLog, when set, gets one line per request (SECKILL_ACCESS_LOG).
	accessLog *slog.Logger
	// states recycles the per-request state of observe.
	states *sync.Pool
}

const (
	// maxLocalKeys bounds the per-IP and per-user local buckets.
	maxLocalKeys = 100000
	// readyProbeEvery is the longest /readyz goes without pinging Redis again.
	readyProbeEvery = 250 * time.Millisecond
	ctxSnapshot     = "seckill.snapshot"
	ctxState        = "seckill.state"
)

// newAPI returns an api with its caches and probes built.
func newAPI(a api) *api {
	a.local = newLocalLimits(maxLocalKeys)
	if a.inv != nil {
		var passes admission.Passes
		if a.room != nil {
			passes = a.room
		}
		a.gate = admission.NewGate(a.inv, a.lim, a.local, passes, a.now, a.log)
	}
	rdb := a.rdb
	a.ready = &readyProbe{period: readyProbeEvery, ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}
	a.states = &sync.Pool{New: func() any { return &reqState{keys: make(map[any]any, 1)} }}
	p := &a
	p.restores = newRestores(func(ctx context.Context, id string) (order.RestoreReport, error) {
		return p.rec.Restore(ctx, p.inv, id, p.restoreOpts)
	}, a.rdb, a.log)
	return p
}

// router serves the storefront port: the API and health only (/admin/v1 and /metrics are on
// the admin listener, see adminRouter).
func (a *api) router() *gin.Engine {
	r := a.engine("storefront")
	v1 := r.Group("/api/v1", a.requireSnapshot)
	v1.GET("/activities/:id", a.getActivity)
	v1.POST("/activities/:id/tokens", a.postToken)
	v1.POST("/activities/:id/reservations", a.postReservation)
	v1.GET("/reservations/:rid", a.getReservation)
	a.queueRoutes(r, v1)
	a.health(r, false)
	return r
}

// engine is a Gin engine with the error model for unknown routes and methods.
func (a *api) engine(listener string) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	if a.accessLog != nil {
		r.Use(accessLog(a.accessLog, listener))
	}
	r.Use(a.observe, a.recover)
	r.NoRoute(func(c *gin.Context) { writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such route")) })
	r.NoMethod(func(c *gin.Context) {
		writeError(c, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this route"))
	})
	return r
}

// adminRouter serves the admin port: /admin/v1, /metrics and health.
func (a *api) adminRouter() *gin.Engine {
	r := a.engine("admin")
	adm := r.Group("/admin/v1", a.requireAdmin)
	adm.POST("/activities", a.postActivity)
	adm.GET("/activities", a.getActivities)
	adm.GET("/activities/:id", a.getAdminActivity)
	adm.GET("/activities/:id/reconciliation", a.getReconciliation)
	adm.POST("/activities/:id/restore", a.postRestore)
	adm.GET("/activities/:id/restore", a.getRestore)
	adm.GET("/activities/:id/report", a.getReport)
	adm.POST("/activities/:id/end", a.postEnd)
	adm.POST("/activities/:id/archive", a.postArchive)
	adm.GET("/config", a.getConfig)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(a.gatherer, promhttp.HandlerOpts{})))
	r.GET("/debug/pprof/*name", a.requireAdmin, pprofHandler)
	a.health(r, true)
	return r
}

// activityID validates the :id path parameter.
func activityID(c *gin.Context) (string, *apiError) {
	id := c.Param("id")
	if !keyspace.ValidName(id) {
		return "", badRequest("activity id must match [A-Za-z0-9_-]{1,64}")
	}
	return id, nil
}

// lookup finds an activity in the local snapshot, or once in Redis for one this instance has
// not seen yet. An id Redis did not know is answered 404 from inventory's memory of unknown
// ids (Store.Unknown) while it lasts, and the Redis read of an unknown id takes a token of the
// client's read budget first: a flood of random ids is refused locally, not passed to Redis.
func (a *api) lookup(c *gin.Context, snap *Snapshot, id string) (inventory.ActivityView, *apiError) {
	if v, ok := a.inv.Activity(id); ok {
		return v, nil
	}
	if a.inv.Unknown(id) {
		return inventory.ActivityView{}, newError(http.StatusNotFound, CodeNotFound, "no such activity")
	}
	if snap != nil {
		if err := a.readBudget(c, snap, ""); err != nil {
			return inventory.ActivityView{}, a.admissionError(err)
		}
	}
	v, ok, err := a.inv.Lookup(c.Request.Context(), id)
	if err != nil {
		return v, a.storeError(err)
	}
	if !ok {
		return v, newError(http.StatusNotFound, CodeNotFound, "no such activity")
	}
	return v, nil
}

// readBudget takes one token of the read budget (limits.reads) of the client's IP (prefix)
// and, when known, of the user: 429 RATE_LIMITED when either is empty.
func (a *api) readBudget(c *gin.Context, snap *Snapshot, user string) error {
	return a.gate.ReadBudget(snap.Admission, clientIP(c, snap.Cfg), user)
}

// storeError maps an error of Redis whose request surely made no reservation to 503
// UNAVAILABLE: fail closed, never fall back to MySQL.
func (a *api) storeError(err error) *apiError {
	if errors.Is(err, context.Canceled) {
		return unavailable("request cancelled")
	}
	a.log.Debug("redis call failed", "err", err)
	return unavailable("stock service unavailable, retry shortly")
}

// faultError is the answer of a failure of the admission step whose outcome is o (outcomeOf):
// a failure of the reservation script (a *admission.Fault carrying its idempotency key) is
// OUTCOME_UNKNOWN when the script may have run (a timeout or a dropped connection after the
// command was written): the client retries with the idempotency key, which returns the
// reservation if it was made; else, as any other failure, UNAVAILABLE (storeError). The
// UNAVAILABLE answer of the script's failure carries the key too: a waiting-room pass is bound
// to it (a key the server made for a request without one), and a retry with it finds the pass.
func (a *api) faultError(o outcome, err error) *apiError {
	f, ok := errors.AsType[*admission.Fault](err)
	if !ok || f.IdempotencyKey == "" {
		return a.storeError(err)
	}
	if o != oOutcomeUnknown {
		return a.storeError(f.Err).withIdempotencyKey(f.IdempotencyKey)
	}
	a.log.Debug("reservation outcome unknown", "err", f.Err)
	return newError(http.StatusServiceUnavailable, outcomes[o].answer,
		"the reservation may or may not have been made: retry with the same Idempotency-Key").
		after(time.Second).withIdempotencyKey(f.IdempotencyKey)
}

// millisLayout is the form of every time the API answers: RFC 3339 in UTC, milliseconds.
const millisLayout = "2006-01-02T15:04:05.000Z07:00"

func millis(t time.Time) string { return t.UTC().Format(millisLayout) }

func (a *api) getActivity(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	snap := snapshot(c)
	v, e := a.lookup(c, snap, id)
	if e != nil {
		writeError(c, e)
		return
	}
	now := a.now()
	status := "OPEN"
	switch {
	case v.Recovering:
		status = "RECOVERING"
	case snap.Cfg.KillSwitch || snap.Cfg.ActivityKilled(id):
		status = "DISABLED"
	case now.Before(v.OpensAt):
		status = "SCHEDULED"
	case !v.ClosesAt.IsZero() && !now.Before(v.ClosesAt):
		status = "CLOSED"
	case v.SoldOut || v.Remaining <= 0:
		status = "SOLD_OUT"
	}
	remaining := v.Remaining
	if remaining < 0 {
		remaining = 0
	}
	body := gin.H{
		"activityId": v.ID, "status": status, "opensAt": millis(v.OpensAt),
		"serverTime": millis(now), "remaining": remaining, "closesAt": nil,
	}
	if !v.ClosesAt.IsZero() {
		body["closesAt"] = millis(v.ClosesAt)
	}
	setOutcome(c, status)
	c.JSON(http.StatusOK, body)
}

// postToken issues a grab token after the admission step's layers that fit it (kill switch,
// activity state, blacklist, canary, the per-IP token budget limits.tokens) and the per-user
// cap (limits.tokensPerUser per token lifetime, in Redis, across instances).
func (a *api) postToken(c *gin.Context) {
	snap := snapshot(c)
	r, e := a.storefrontRequest(c, snap, admission.ForToken)
	if e != nil {
		writeError(c, e)
		return
	}
	if !r.Activity.RequireToken {
		// Minting one would only leave Redis keys behind.
		writeError(c, badRequest("this activity requires no grab token"))
		return
	}
	ctx := c.Request.Context()
	if _, err := a.gate.Admit(ctx, snap.Admission, r); err != nil {
		a.answerError(c, err)
		return
	}
	id, user := r.Activity.ID, r.UserID
	n, ttl, err := a.inv.CountTokenMint(ctx, id, user, admission.TokenTTL)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	if n > int64(snap.Cfg.Limits.TokensPerUser) {
		writeError(c, newError(http.StatusTooManyRequests, admission.CodeRateLimited, "too many grab tokens").after(ttl).withDimension("user"))
		return
	}
	tok, exp, err := a.inv.IssueToken(ctx, id, user, admission.TokenTTL)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	setOutcome(c, "TOKEN")
	c.JSON(http.StatusOK, gin.H{"token": tok, "expiresAt": millis(exp)})
}

var msgBadIdempotencyKey = "Idempotency-Key must be 1 to " + strconv.Itoa(keyspace.MaxIdempotencyKey) + " bytes"

// postReservation serves POST .../reservations: decode, admit, reserve, answer (docs/API.md
// sections 3 and 4). Each answer of an attempt decides its outcome once (answered: refuse,
// answerReplay, or accepted here), from which the funnel and the HTTP histogram count it.
func (a *api) postReservation(c *gin.Context) {
	snap := snapshot(c)
	r, e := a.storefrontRequest(c, snap, admission.ForReservation)
	if e != nil {
		writeError(c, e)
		return
	}
	st := a.attempt(c, r)
	ctx := c.Request.Context()
	adm, err := a.gate.Admit(ctx, snap.Admission, r)
	if err != nil {
		a.refuse(c, st, err)
		return
	}
	if adm.Replay != "" {
		a.answerReplay(c, st, r.Activity.ID, adm.Replay)
		return
	}
	res, err := a.gate.Reserve(ctx, &adm)
	if err != nil {
		a.refuse(c, st, err)
		return
	}
	if res.Replayed {
		a.answerReplay(c, st, r.Activity.ID, res.ID)
		return
	}
	st.answered(oAccepted)
	writeReserved(c, res.ID, r.Activity.ID)
}

// attempt counts a reservation attempt in the sale funnel and returns the request state that
// carries it to observe (a throwaway one outside observe or without a funnel).
func (a *api) attempt(c *gin.Context, r *admission.Request) *reqState {
	st := state(c)
	if st == nil {
		return &reqState{}
	}
	if a.funnel != nil {
		st.fa = a.funnel.activity(&r.Activity)
		st.fa.attempt(a.funnel, r.UserID)
	}
	return st
}

// answered records the outcome of the attempt, the one both its funnel count and its HTTP
// label are read from (observe).
func (st *reqState) answered(o outcome) { st.fo = o }

// storefrontRequest decodes what comes before the admission layers (docs/API.md section 4,
// precedence): what the headers show is malformed (400, 413), the identity (401), the
// activity (404), and only then, for a reservation, the body and its quantity against the
// per-user limit (400). What needs no body is answered before the body is read (and its
// connection closed, see track), and the body of a killed activity is never read. The
// request lives in the pooled state of the request when there is one.
func (a *api) storefrontRequest(c *gin.Context, snap *Snapshot, kind admission.Kind) (*admission.Request, *apiError) {
	id, e := activityID(c)
	if e != nil {
		return nil, e
	}
	var idem, channel string
	if kind == admission.ForReservation {
		if c.Request.ContentLength > maxBodyBytes {
			if c.Request.ContentLength <= drainMax {
				drain(c.Request.Body)
			}
			return nil, newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 4 KiB")
		}
		idem = c.GetHeader("Idempotency-Key")
		if _, present := c.Request.Header["Idempotency-Key"]; present && (len(idem) < 1 || len(idem) > keyspace.MaxIdempotencyKey) {
			return nil, badRequest(msgBadIdempotencyKey)
		}
		channel = c.GetHeader("X-Channel")
		if channel != "" && !keyspace.ValidName(channel) {
			return nil, badRequest("X-Channel must match [A-Za-z0-9_-]{1,64}")
		}
	}
	user, e := identity(c, snap)
	if e != nil {
		return nil, e
	}
	v, e := a.lookup(c, snap, id)
	if e != nil {
		return nil, e
	}
	var body reservationBody
	if kind == admission.ForReservation && !snap.Cfg.KillSwitch && !snap.Cfg.ActivityKilled(id) {
		if body, e = decodeReservationBody(c.Request); e != nil {
			return nil, e
		}
	}
	qty := 1
	if body.Quantity != 0 {
		qty = body.Quantity
	}
	if kind == admission.ForReservation && qty > v.PerUserLimit {
		return nil, badRequest("quantity must be between 1 and the per-user limit").withPerUserLimit(v.PerUserLimit)
	}
	var r *admission.Request
	if st := state(c); st != nil {
		r = &st.adm
	} else {
		r = new(admission.Request)
	}
	*r = admission.Request{Kind: kind, Activity: v, UserID: user, Addr: clientIP(c, snap.Cfg), Channel: channel,
		Quantity: qty, IdempotencyKey: idem, Token: body.Token}
	return r, nil
}

// answerError answers an error of the admission step (see admissionAnswer), its code the
// request's outcome. The answer is built on the stack: a rejection allocates nothing.
func (a *api) answerError(c *gin.Context, err error) {
	e, _ := a.admissionAnswer(err)
	writeError(c, &e)
}

// refuse answers an error of the admission step to a reservation attempt (see
// admissionAnswer), whose outcome it is.
func (a *api) refuse(c *gin.Context, st *reqState, err error) {
	e, o := a.admissionAnswer(err)
	st.answered(o)
	sendError(c, &e)
}

// admissionError is admissionAnswer's answer, for a caller that returns it.
func (a *api) admissionError(err error) *apiError {
	e, _ := a.admissionAnswer(err)
	return &e
}

// admissionAnswer maps every error of the admission step to its answer and outcome, in one
// place: the outcome is outcomeOf's; a *admission.Rejection is answered as it is (its
// status, code and fields), a failure by its outcome (faultError: a 503).
func (a *api) admissionAnswer(err error) (apiError, outcome) {
	o, rej := outcomeOf(err)
	if rej != nil {
		return rejectionError(rej), o
	}
	return *a.faultError(o, err), o
}

// answerReplay answers an attempt 200 with a replayed reservation and its current status
// (outcome replayed), or 503 when the reservation could not be read (unavailable).
func (a *api) answerReplay(c *gin.Context, st *reqState, id, rid string) {
	status := "PENDING"
	r, err := a.inv.Reservation(c.Request.Context(), rid)
	switch {
	case err == nil && r.Status != "":
		status = r.Status
	case err != nil && !errors.Is(err, inventory.ErrNotFound):
		st.answered(oUnavailable)
		sendError(c, a.storeError(err))
		return
	}
	body := gin.H{"reservationId": rid, "activityId": id, "status": status}
	if r.OrderID != "" {
		body["orderId"] = r.OrderID
	}
	if r.Why == inventory.WhyRefused {
		body["code"] = CodeRefused
	}
	st.answered(oReplayed)
	c.JSON(http.StatusOK, body)
}

func (a *api) getReservation(c *gin.Context) {
	snap := snapshot(c)
	user, e := identity(c, snap)
	if e != nil {
		writeError(c, e)
		return
	}
	rid := c.Param("rid")
	if _, _, ok := inventory.ParseReservationID(rid); !ok {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such reservation"))
		return
	}
	if err := a.readBudget(c, snap, user); err != nil {
		a.answerError(c, err)
		return
	}
	r, err := a.inv.Reservation(c.Request.Context(), rid)
	if errors.Is(err, inventory.ErrNotFound) || (err == nil && r.UserID != user) {
		writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such reservation"))
		return
	}
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	body := gin.H{"reservationId": r.ID, "activityId": r.ActivityID, "status": r.Status, "orderId": nil}
	if r.OrderID != "" {
		body["orderId"] = r.OrderID
	}
	if r.Why == inventory.WhyRefused {
		body["code"] = CodeRefused
	}
	setOutcome(c, r.Status)
	c.JSON(http.StatusOK, body)
}
