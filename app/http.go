package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
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
	adm.GET("/config", a.getConfig)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(a.gatherer, promhttp.HandlerOpts{})))
	r.GET("/debug/pprof/*name", a.requireAdmin, pprofHandler)
	a.health(r, true)
	return r
}

// health serves /healthz and /readyz; detail (the admin port) adds the order writer's raw
// error, which names internal addresses and is kept off the storefront.
func (a *api) health(r *gin.Engine, detail bool) {
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", func(c *gin.Context) { a.readyz(c, detail) })
}

// reqState is what the middleware and the handlers of one request share: the snapshot
// (requireSnapshot) and the outcome (for the metrics). observe takes it from a pool and lends
// the context its own Keys map holding it, so a request allocates neither a map nor a boxed
// value for them; it clears both and takes them back when the request is done.
type reqState struct {
	keys    map[any]any
	snap    *Snapshot
	outcome string
	// adm is the request to the admission step, which holds its rejection until the answer
	// is written (see admission.Request); rej is the target of answerError's errors.As.
	adm admission.Request
	rej *admission.Rejection
	// fa is the funnel of the activity of a reservation attempt (nil: not an attempt), fo its
	// outcome, set where the answer is decided; observe counts both with the latency.
	fa *actFunnel
	fo funnelOutcome
}

// state is the request's reqState, nil outside observe.
func state(c *gin.Context) *reqState {
	v, _ := c.Get(ctxState)
	st, _ := v.(*reqState)
	return st
}

// setOutcome records the outcome of the request for observe.
func setOutcome(c *gin.Context, o string) {
	if st := state(c); st != nil {
		st.outcome = o
	}
}

// observe records the latency of every request by route and outcome.
func (a *api) observe(c *gin.Context) {
	start := time.Now()
	var st *reqState
	if a.states != nil {
		st = a.states.Get().(*reqState)
	} else {
		st = &reqState{keys: make(map[any]any, 1)}
	}
	lent := c.Keys == nil
	if lent {
		c.Keys = st.keys
	}
	c.Set(ctxState, st)
	c.Next()
	o := outcomeLabel(st.outcome, c.Writer.Status())
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	d := time.Since(start)
	a.metrics.observer(route, o).Observe(d.Seconds())
	if st.fa != nil {
		if st.fo == fReplayed && c.Writer.Status() >= http.StatusInternalServerError {
			st.fo = fUnavailable // the replayed reservation could not be read
		}
		st.fa.answer(a.funnel, st.fo, st.adm.UserID, st.adm.Quantity, d)
	}
	// Nothing keeps the context after the request (gin resets it), so the map can be reused.
	if a.states != nil && lent {
		c.Keys = nil
		clear(st.keys)
		*st = reqState{keys: st.keys}
		a.states.Put(st)
	}
}

// recover turns a panic into a 500 of the error model, without a stack trace in the body.
func (a *api) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			a.log.Error("panic in handler", "route", c.FullPath(), "panic", v)
			if c.Writer.Written() {
				// An answer is on its way already: a second body would corrupt it.
				c.Abort()
				return
			}
			writeError(c, newError(http.StatusInternalServerError, CodeInternal, "internal error"))
		}
	}()
	c.Next()
}

// maxForwardedHops bounds the X-Forwarded-For entries read from the right: past it the
// last one read stands for the client (no real chain of trusted proxies is that long).
const maxForwardedHops = 16

// connAddr is the address of the request's connection, zone stripped; invalid when the
// remote address cannot be parsed.
func connAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap().WithZone("")
}

// clientIP is the connection's address, or the first untrusted address of X-Forwarded-For
// (every line of it, in order, read right to left) when the connection comes from a trusted
// proxy. Zones are stripped: fe80::1%eth0 and fe80::1 are one client.
func clientIP(c *gin.Context, cfg *config.Config) netip.Addr {
	addr := connAddr(c.Request)
	if !addr.IsValid() || !cfg.TrustedProxy(addr) {
		return addr
	}
	// A proxy may append its own line rather than extend the first: the client's forged
	// value is then the first line and the proxy's view the last. The lines are read from
	// the last, each from its end, and never split whole: a chain of any length costs at
	// most maxForwardedHops parses and lookups, and allocates nothing.
	lines := c.Request.Header.Values("X-Forwarded-For")
	read := 0
	for l := len(lines) - 1; l >= 0; l-- {
		line := lines[l]
		for {
			if read == maxForwardedHops {
				return addr
			}
			read++
			hop := line
			i := strings.LastIndexByte(line, ',')
			if i >= 0 {
				hop = line[i+1:]
			}
			h, err := netip.ParseAddr(strings.TrimSpace(hop))
			if err != nil {
				return addr
			}
			h = h.Unmap().WithZone("")
			if !cfg.TrustedProxy(h) {
				return h
			}
			addr = h
			if i < 0 {
				break
			}
			line = line[:i]
		}
	}
	return addr
}

// requireSnapshot answers 503 UNAVAILABLE while no configuration is loaded, and hands the
// snapshot to the handler: a request loads it once.
func (a *api) requireSnapshot(c *gin.Context) {
	snap := a.cfg.Current()
	if snap == nil {
		writeError(c, newError(http.StatusServiceUnavailable, CodeUnavailable, "no configuration loaded yet").after(time.Second))
		return
	}
	if st := state(c); st != nil {
		st.snap = snap
	} else {
		c.Set(ctxSnapshot, snap)
	}
	c.Next()
}

// snapshot is the request's configuration, set by requireSnapshot.
func snapshot(c *gin.Context) *Snapshot {
	if st := state(c); st != nil && st.snap != nil {
		return st.snap
	}
	v, _ := c.Get(ctxSnapshot)
	s, _ := v.(*Snapshot)
	return s
}

// identity returns the user of a storefront request.
func identity(c *gin.Context, s *Snapshot) (string, *apiError) {
	if s.auth.mode == config.AuthJWT {
		if len(c.Request.Header.Values("Authorization")) > 1 {
			return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "exactly one Authorization header is allowed")
		}
		h := c.GetHeader("Authorization")
		tok, ok := bearerToken(h)
		if !ok {
			return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "a bearer token is required")
		}
		sub, ok := s.auth.verify(tok)
		if !ok {
			return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "invalid or expired token")
		}
		return sub, nil
	}
	if len(c.Request.Header.Values("X-User-Id")) > 1 {
		// A gateway that appends instead of replacing would let the client choose the user.
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "exactly one X-User-Id header is allowed")
	}
	u := c.GetHeader("X-User-Id")
	if u == "" {
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "X-User-Id is required")
	}
	if !config.ValidUserID(u) {
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "X-User-Id must be 1 to 128 bytes of printable UTF-8, without leading or trailing whitespace")
	}
	return u, nil
}

// activityID validates the :id path parameter.
func activityID(c *gin.Context) (string, *apiError) {
	id := c.Param("id")
	if !keyspace.ValidActivityID(id) {
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

// reserveError maps an error of the reservation to 503: UNAVAILABLE when the reservation
// surely did not happen (Redis refused the connection, no pooled connection was free, Redis
// answered with an error, the activity was busy), OUTCOME_UNKNOWN when the script may have
// run (a timeout or a dropped connection after the command was written): the client retries
// with the idempotency key, which returns the reservation if it was made.
func (a *api) reserveError(err error, key string) *apiError {
	if neverSent(err) {
		return a.storeError(err)
	}
	a.log.Debug("reservation outcome unknown", "err", err)
	return newError(http.StatusServiceUnavailable, CodeOutcomeUnknown,
		"the reservation may or may not have been made: retry with the same Idempotency-Key").
		after(time.Second).withIdempotencyKey(key)
}

func millis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

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
		writeError(c, newError(http.StatusTooManyRequests, CodeRateLimited, "too many grab tokens").after(ttl).withDimension("user"))
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

// reservationBody is the optional body of POST .../reservations.
type reservationBody struct {
	Quantity *int   `json:"quantity"`
	Token    string `json:"token"`
}

// decodeReservationBody reads at most 4 KiB of strict JSON; an empty body means quantity 1.
func decodeReservationBody(r *http.Request) (reservationBody, *apiError) {
	// Most requests carry no body: answer them before anything escapes to the heap.
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return reservationBody{}, nil
	}
	return decodeReservationJSON(r)
}

func decodeReservationJSON(r *http.Request) (reservationBody, *apiError) {
	var b reservationBody
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return b, badRequest("cannot read body")
	}
	if len(raw) > maxBodyBytes {
		return b, newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 4 KiB")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return b, nil
	}
	if err := exactKeys(raw, "quantity", "token"); err != nil {
		return b, badRequest("malformed JSON body: " + err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, badRequest("malformed JSON body")
	}
	if dec.More() {
		return b, badRequest("malformed JSON body: trailing data")
	}
	if b.Quantity != nil && *b.Quantity < 1 {
		return b, badRequest("quantity must be at least 1")
	}
	if len(b.Token) > 256 {
		return b, badRequest("token too long")
	}
	return b, nil
}

// exactKeys checks the keys of a JSON object as a strict decoder does: each at most once and
// spelled exactly as one of names (encoding/json alone would take the last of two and fold
// case). Anything but an object is left to the decoder.
func exactKeys(raw []byte, names ...string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, len(names))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		k, _ := t.(string)
		if !slices.Contains(names, k) {
			return fmt.Errorf("unknown key %q", k)
		}
		if seen[k] {
			return fmt.Errorf("key %q given twice", k)
		}
		seen[k] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
	}
	return nil
}

// postReservation serves POST .../reservations: decode, admit, reserve, answer (docs/API.md
// sections 3 and 4), every refusal answered by answerError.
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
		st.answered(funnelOutcomeOf(err))
		a.answerError(c, err)
		return
	}
	if adm.Replay != "" {
		st.answered(fReplayed)
		a.answerReplay(c, r.Activity.ID, adm.Replay)
		return
	}
	res, err := a.gate.Reserve(ctx, &adm)
	if err != nil {
		st.answered(funnelOutcomeOf(err))
		a.answerError(c, err)
		return
	}
	if res.Replayed {
		st.answered(fReplayed)
		a.answerReplay(c, r.Activity.ID, res.ID)
		return
	}
	st.answered(fAccepted)
	setOutcome(c, outcomeReserved)
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

// answered records the funnel outcome of the attempt.
func (st *reqState) answered(o funnelOutcome) { st.fo = o }

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
			return nil, newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 4 KiB")
		}
		idem = c.GetHeader("Idempotency-Key")
		if _, present := c.Request.Header["Idempotency-Key"]; present && (len(idem) < 1 || len(idem) > 128) {
			return nil, badRequest("Idempotency-Key must be 1 to 128 bytes")
		}
		channel = c.GetHeader("X-Channel")
		if len(channel) > 64 || (channel != "" && !keyspace.ValidActivityID(channel)) {
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
	if body.Quantity != nil {
		qty = *body.Quantity
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

// answerError answers an error of the admission step (see admissionError). A rejection
// allocates nothing: the target of errors.As is the pooled request state's, and the answer
// is built on the stack.
func (a *api) answerError(c *gin.Context, err error) {
	var target **admission.Rejection
	if st := state(c); st != nil {
		target = &st.rej
	} else {
		target = new(*admission.Rejection)
	}
	if errors.As(err, target) {
		e := rejectionError(*target)
		writeError(c, &e)
		return
	}
	writeError(c, a.admissionError(err))
}

// admissionError maps every error of the admission step, in one place: a
// *admission.Rejection is its status, code and fields; a *admission.Fault is 503
// (OUTCOME_UNKNOWN with the idempotency key when the reservation script may have run, else
// UNAVAILABLE); anything else is UNAVAILABLE.
func (a *api) admissionError(err error) *apiError {
	var rej *admission.Rejection
	if errors.As(err, &rej) {
		e := rejectionError(rej)
		return &e
	}
	var f *admission.Fault
	if errors.As(err, &f) && f.IdempotencyKey != "" {
		return a.reserveError(f.Err, f.IdempotencyKey)
	}
	return a.storeError(err)
}

// rejectionError is the error-model answer of a rejection.
func rejectionError(r *admission.Rejection) apiError {
	e := apiError{status: r.Status, code: r.Code, message: r.Message, retryAfter: r.RetryAfter}
	if r.Dimension != "" {
		e.withDimension(r.Dimension)
	}
	if !r.OpensAt.IsZero() {
		e.withOpensAt(millis(r.OpensAt))
	}
	if r.Code == CodeAlreadyPurchased {
		e.withReservationID(r.ReservationID)
	}
	return e
}

// answerReplay answers 200 with a replayed reservation and its current status.
func (a *api) answerReplay(c *gin.Context, id, rid string) {
	status := "PENDING"
	r, err := a.inv.Reservation(c.Request.Context(), rid)
	switch {
	case err == nil && r.Status != "":
		status = r.Status
	case err != nil && !errors.Is(err, inventory.ErrNotFound):
		writeError(c, a.storeError(err))
		return
	}
	body := gin.H{"reservationId": rid, "activityId": id, "status": status}
	if r.OrderID != "" {
		body["orderId"] = r.OrderID
	}
	setOutcome(c, outcomeReplayed)
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
	setOutcome(c, r.Status)
	c.JSON(http.StatusOK, body)
}

// readyz answers from the configuration state and a cached Redis probe (at most one PING
// per readyProbeEvery, however many ask).
func (a *api) readyz(c *gin.Context, detail bool) {
	st := a.cfg.Status()
	var redisErr, writerErr error
	if st.Ready {
		redisErr = a.ready.check(time.Now())
	}
	if a.writerHealthy != nil {
		writerErr = a.writerHealthy()
	}
	ok, reason := readiness(st.Ready, redisErr, writerErr, a.servesAPI)
	body := gin.H{"ready": ok, "configSource": st.Source, "configVersion": st.Version}
	if ids := a.recoveringIDs(); len(ids) > 0 {
		// Still ready (other activities sell), but the activities Redis lost are named.
		body["recovering"] = ids
	}
	writer := "failing"
	if writerErr != nil && detail {
		writer = writerErr.Error()
	}
	if writerErr != nil {
		body["writer"] = writer
	}
	if !ok {
		e := newError(http.StatusServiceUnavailable, CodeUnavailable, reason).with("ready", false).
			with("reason", reason).with("configSource", st.Source)
		if writerErr != nil {
			e = e.with("writer", writer)
		}
		writeError(c, e)
		return
	}
	c.JSON(http.StatusOK, body)
}

// readiness decides /readyz. A configuration and a reachable Redis are always needed. A sick
// order writer (MySQL failing) makes a writer-only process not ready, so an orchestrator sees
// it; a process that also serves the api stays ready, because reservations go on while MySQL
// is down (they wait in the journal), and the writer's state is reported in the body.
func readiness(configReady bool, redisErr, writerErr error, servesAPI bool) (bool, string) {
	switch {
	case !configReady:
		return false, "no configuration loaded"
	case redisErr != nil:
		return false, "redis unreachable"
	case writerErr != nil && !servesAPI:
		return false, "order writer failing"
	}
	return true, ""
}
