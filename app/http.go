package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
	"github.com/seckill/seckill/order"
)

const (
	maxBodyBytes = 4 << 10
	ctxOutcome   = "seckill.outcome"
	// tokenTTL is how long a grab token stays valid.
	tokenTTL = 5 * time.Minute
	// notAdmittedRetry is the Retry-After of a user outside the canary: the ratio is edited by
	// hand, so there is no point in coming back sooner.
	notAdmittedRetry = 30 * time.Second
)

// api serves the HTTP interface of docs/API.md section 4.
type api struct {
	cfg        *config.Reloader[Snapshot]
	inv        *inventory.Store
	lim        *limiter.Limiter
	rec        *order.Reconciler
	admin      *adminStore
	rdb        redis.UniversalClient
	adminToken string
	metrics    *httpMetrics
	gatherer   prometheus.Gatherer
	log        *slog.Logger
	now        func() time.Time
}

// router serves the storefront port: the API and health only (/admin/v1 and /metrics are on
// the admin listener, see adminRouter).
func (a *api) router() *gin.Engine {
	r := a.engine()
	v1 := r.Group("/api/v1")
	v1.GET("/activities/:id", a.getActivity)
	v1.POST("/activities/:id/tokens", a.postToken)
	v1.POST("/activities/:id/reservations", a.postReservation)
	v1.GET("/reservations/:rid", a.getReservation)
	a.health(r)
	return r
}

// engine is a Gin engine with the error model for unknown routes and methods.
func (a *api) engine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(a.observe, a.recover)
	r.NoRoute(func(c *gin.Context) { writeError(c, newError(http.StatusNotFound, CodeNotFound, "no such route")) })
	r.NoMethod(func(c *gin.Context) {
		writeError(c, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed on this route"))
	})
	return r
}

// adminRouter serves the admin port: /admin/v1, /metrics and health.
func (a *api) adminRouter() *gin.Engine {
	r := a.engine()
	adm := r.Group("/admin/v1", a.requireAdmin)
	adm.POST("/activities", a.postActivity)
	adm.GET("/activities/:id/reconciliation", a.getReconciliation)
	adm.GET("/config", a.getConfig)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(a.gatherer, promhttp.HandlerOpts{})))
	a.health(r)
	return r
}

func (a *api) health(r *gin.Engine) {
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", a.readyz)
}

// observe records the latency of every request by route and outcome.
func (a *api) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	outcome, _ := c.Get(ctxOutcome)
	o, _ := outcome.(string)
	o = outcomeLabel(o, c.Writer.Status())
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	a.metrics.latency.WithLabelValues(route, o).Observe(time.Since(start).Seconds())
}

// recover turns a panic into a 500 of the error model, without a stack trace in the body.
func (a *api) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			a.log.Error("panic in handler", "route", c.FullPath(), "panic", v)
			writeError(c, newError(http.StatusInternalServerError, CodeInternal, "internal error"))
		}
	}()
	c.Next()
}

// clientIP is the connection's address, or the first untrusted address of X-Forwarded-For
// (read right to left) when the connection comes from a trusted proxy.
func clientIP(c *gin.Context, cfg *config.Config) netip.Addr {
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		host = c.Request.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	addr = addr.Unmap()
	if !cfg.TrustedProxy(addr) {
		return addr
	}
	hops := strings.Split(c.GetHeader("X-Forwarded-For"), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr
		}
		h = h.Unmap()
		if !cfg.TrustedProxy(h) {
			return h
		}
		addr = h
	}
	return addr
}

// identity returns the user of a storefront request.
func identity(c *gin.Context, s *Snapshot) (string, *apiError) {
	if s.auth.mode == config.AuthJWT {
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
	u := c.GetHeader("X-User-Id")
	if u == "" {
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "X-User-Id is required")
	}
	if !config.ValidUserID(u) {
		return "", newError(http.StatusUnauthorized, CodeUnauthenticated, "X-User-Id must be 1 to 128 bytes of printable UTF-8")
	}
	return u, nil
}

// activityID validates the :id path parameter.
func activityID(c *gin.Context) (string, *apiError) {
	id := c.Param("id")
	if !inventory.ValidActivityID(id) {
		return "", badRequest("activity id must match [A-Za-z0-9_-]{1,64}")
	}
	return id, nil
}

// lookup finds an activity in the local snapshot, or once in Redis for one this instance has
// not seen yet.
func (a *api) lookup(ctx context.Context, id string) (inventory.ActivityView, *apiError) {
	if v, ok := a.inv.Activity(id); ok {
		return v, nil
	}
	v, ok, err := a.inv.Lookup(ctx, id)
	if err != nil {
		return v, a.storeError(err)
	}
	if !ok {
		return v, newError(http.StatusNotFound, CodeNotFound, "no such activity")
	}
	return v, nil
}

// storeError maps an error of Redis to 503 UNAVAILABLE: fail closed, never fall back to MySQL.
func (a *api) storeError(err error) *apiError {
	if errors.Is(err, context.Canceled) {
		return unavailable("request cancelled")
	}
	a.log.Debug("redis call failed", "err", err)
	return unavailable("stock service unavailable, retry shortly")
}

func millis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func (a *api) getActivity(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	snap := a.cfg.Current()
	v, e := a.lookup(c.Request.Context(), id)
	if e != nil {
		writeError(c, e)
		return
	}
	now := a.now()
	status := "OPEN"
	switch {
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
	c.Set(ctxOutcome, status)
	c.JSON(http.StatusOK, body)
}

func (a *api) postToken(c *gin.Context) {
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	snap := a.cfg.Current()
	user, e := identity(c, snap)
	if e != nil {
		writeError(c, e)
		return
	}
	if _, e := a.lookup(c.Request.Context(), id); e != nil {
		writeError(c, e)
		return
	}
	tok, exp, err := a.inv.IssueToken(c.Request.Context(), id, user, tokenTTL)
	if err != nil {
		writeError(c, a.storeError(err))
		return
	}
	c.Set(ctxOutcome, "TOKEN")
	c.JSON(http.StatusOK, gin.H{"token": tok, "expiresAt": millis(exp)})
}

// reservationBody is the optional body of POST .../reservations.
type reservationBody struct {
	Quantity *int   `json:"quantity"`
	Token    string `json:"token"`
}

// decodeReservationBody reads at most 4 KiB of strict JSON; an empty body means quantity 1.
func decodeReservationBody(r *http.Request) (reservationBody, *apiError) {
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

func (a *api) postReservation(c *gin.Context) {
	// 1. Malformed requests and identity first.
	id, e := activityID(c)
	if e != nil {
		writeError(c, e)
		return
	}
	if c.Request.ContentLength > maxBodyBytes {
		writeError(c, newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "body over 4 KiB"))
		return
	}
	body, e := decodeReservationBody(c.Request)
	if e != nil {
		writeError(c, e)
		return
	}
	idem := c.GetHeader("Idempotency-Key")
	if _, present := c.Request.Header["Idempotency-Key"]; present && (len(idem) < 1 || len(idem) > 128) {
		writeError(c, badRequest("Idempotency-Key must be 1 to 128 bytes"))
		return
	}
	channel := c.GetHeader("X-Channel")
	if len(channel) > 64 || (channel != "" && !inventory.ValidActivityID(channel)) {
		writeError(c, badRequest("X-Channel must match [A-Za-z0-9_-]{1,64}"))
		return
	}
	snap := a.cfg.Current()
	user, e := identity(c, snap)
	if e != nil {
		writeError(c, e)
		return
	}
	cfg := snap.Cfg

	// 2. Unknown activity.
	v, e := a.lookup(c.Request.Context(), id)
	if e != nil {
		writeError(c, e)
		return
	}
	qty := 1
	if body.Quantity != nil {
		qty = *body.Quantity
	}
	if qty > v.PerUserLimit {
		writeError(c, badRequest("quantity must be between 1 and the per-user limit").with("perUserLimit", v.PerUserLimit))
		return
	}

	// 3. Kill switches.
	if cfg.KillSwitch || cfg.ActivityKilled(id) {
		writeError(c, newError(http.StatusServiceUnavailable, CodeDisabled, "reservations are disabled").after(5*time.Second))
		return
	}
	// 4. State from the local snapshot: no Redis call for a known answer.
	now := a.now()
	if now.Before(v.OpensAt) {
		writeError(c, newError(http.StatusTooEarly, CodeNotOpen, "the activity is not open yet").with("opensAt", millis(v.OpensAt)))
		return
	}
	if !v.ClosesAt.IsZero() && !now.Before(v.ClosesAt) {
		writeError(c, newError(http.StatusGone, CodeClosed, "the activity is closed"))
		return
	}
	if v.SoldOut {
		writeError(c, newError(http.StatusGone, CodeSoldOut, "sold out"))
		return
	}
	// 5. Blacklist.
	ip := clientIP(c, cfg)
	if cfg.BlockedUser(user) || (ip.IsValid() && cfg.BlockedAddr(ip)) {
		writeError(c, newError(http.StatusForbidden, CodeForbidden, "forbidden"))
		return
	}
	// 6. Canary.
	if !cfg.CanaryAdmits(id, user) {
		writeError(c, newError(http.StatusTooManyRequests, CodeNotAdmitted, "not admitted to this sale yet").after(notAdmittedRetry))
		return
	}
	// 7. Rate limits, all dimensions at once.
	uh := inventory.UserHash(user)
	ipStr := ""
	if ip.IsValid() {
		ipStr = ip.String()
	}
	lreq := snap.limiterRequest(id, v.CampaignID, channel, ipStr, uh)
	// On a single Redis node the reservation script takes the per-IP token in its own round
	// trip, so an admitted request costs exactly one Redis call.
	ipInScript := ipStr != "" && cfg.Limits.IP.Rate > 0 && a.inv.ChecksIP()
	lreq.IPInReservation = ipInScript
	dec, err := a.lim.Allow(c.Request.Context(), lreq)
	if err != nil {
		writeError(c, unavailable("request cancelled"))
		return
	}
	if !dec.Allowed {
		writeError(c, newError(http.StatusTooManyRequests, CodeRateLimited, "too many requests").after(dec.RetryAfter).with("dimension", dec.Dimension))
		return
	}
	// 8. Grab token.
	if v.RequireToken {
		ok := false
		if body.Token != "" {
			ok, err = a.inv.ConsumeToken(c.Request.Context(), id, user, body.Token)
			if err != nil {
				a.lim.Refund(dec)
				writeError(c, a.storeError(err))
				return
			}
		}
		if !ok {
			a.lim.Refund(dec)
			writeError(c, newError(http.StatusForbidden, CodeTokenRequired, "a valid grab token is required"))
			return
		}
	}
	// 9. Reserve: idempotency, per-user limits and stock in one script on the user's shard.
	start := time.Now()
	rreq := inventory.ReserveRequest{
		ActivityID: id, UserID: user, IdempotencyKey: idem, Quantity: qty,
		UserRate:  inventory.Limit{Rate: cfg.Limits.User.Rate, Burst: cfg.Limits.User.Burst},
		Window:    cfg.Limits.UserWindow.Window.D(),
		WindowMax: cfg.Limits.UserWindow.Max,
	}
	if ipInScript {
		rreq.IPKey = a.lim.IPKey(ipStr)
		rreq.IPRate = inventory.Limit{Rate: cfg.Limits.IP.Rate, Burst: cfg.Limits.IP.Burst}
	}
	res, err := a.inv.Reserve(c.Request.Context(), rreq)
	a.lim.ObserveRedis(time.Since(start), err)
	if err != nil {
		a.lim.Refund(dec)
		writeError(c, a.storeError(err))
		return
	}
	switch res.Code {
	case inventory.Reserved:
		c.Set(ctxOutcome, "RESERVED")
		c.JSON(http.StatusAccepted, gin.H{"reservationId": res.ReservationID, "activityId": id, "status": "PENDING"})
		return
	case inventory.Replayed:
		c.Set(ctxOutcome, "REPLAYED")
		c.JSON(http.StatusOK, gin.H{"reservationId": res.ReservationID, "activityId": id, "status": "PENDING"})
		return
	}
	a.lim.Refund(dec)
	switch res.Code {
	case inventory.AlreadyPurchased:
		writeError(c, newError(http.StatusConflict, CodeAlreadyPurchased, "the per-user limit is reached").with("reservationId", res.ReservationID))
	case inventory.SoldOut:
		writeError(c, newError(http.StatusGone, CodeSoldOut, "sold out"))
	case inventory.NotOpen:
		opens := res.OpensAt
		if opens.IsZero() {
			opens = v.OpensAt
		}
		writeError(c, newError(http.StatusTooEarly, CodeNotOpen, "the activity is not open yet").with("opensAt", millis(opens)))
	case inventory.Closed:
		writeError(c, newError(http.StatusGone, CodeClosed, "the activity is closed"))
	case inventory.IPRateLimited:
		a.lim.Remember("", ipStr, res.RetryAfter)
		writeError(c, newError(http.StatusTooManyRequests, CodeRateLimited, "too many requests").after(res.RetryAfter).with("dimension", "ip"))
	case inventory.UserRateLimited, inventory.UserWindowLimited:
		a.lim.Remember(uh, "", res.RetryAfter)
		writeError(c, newError(http.StatusTooManyRequests, CodeRateLimited, "too many requests").after(res.RetryAfter).with("dimension", "user"))
	default:
		a.log.Error("unexpected reservation result", "code", res.Code)
		writeError(c, unavailable("unexpected stock answer"))
	}
}

func (a *api) getReservation(c *gin.Context) {
	snap := a.cfg.Current()
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
	c.Set(ctxOutcome, r.Status)
	c.JSON(http.StatusOK, body)
}

func (a *api) readyz(c *gin.Context) {
	st := a.cfg.Status()
	if !st.Ready {
		c.JSON(http.StatusServiceUnavailable, gin.H{"ready": false, "reason": "no configuration loaded", "configSource": st.Source})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 500*time.Millisecond)
	defer cancel()
	if err := a.rdb.Ping(ctx).Err(); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"ready": false, "reason": "redis unreachable", "configSource": st.Source})
		return
	}
	c.JSON(http.StatusOK, gin.H{"ready": true, "configSource": st.Source, "configVersion": st.Version})
}
