package app

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/app/admission"
)

// health serves /healthz and /readyz; detail (the admin port) adds the order writer's raw
// error, which names internal addresses and is kept off the storefront.
func (a *api) health(r *gin.Engine, detail bool) {
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", func(c *gin.Context) { a.readyz(c, detail) })
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
	ok, reason := readiness(st.Ready, redisErr, a.ready.reachedOnce(), writerErr, a.servesAPI)
	body := gin.H{"ready": ok, "configSource": st.Source, "configVersion": st.Version}
	if redisErr != nil {
		body["redis"] = "unreachable" // still ready when serving the API: see readiness
	}
	if ids := a.recoveringIDs(); len(ids) > 0 && detail {
		// Still ready (other activities sell), but the activities Redis lost are named, on
		// the admin port only: the storefront's answer names no activity.
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
		e := newError(http.StatusServiceUnavailable, admission.CodeUnavailable, reason).with("ready", false).
			with("reason", reason).with("configSource", st.Source)
		if writerErr != nil {
			e = e.with("writer", writer)
		}
		writeError(c, e)
		return
	}
	c.JSON(http.StatusOK, body)
}

// readiness decides /readyz, per dependency. A configuration is always needed: without one
// the process answers nothing useful. Redis must have been reached once since the start: a
// pod that never reached it (a wrong password, CA or network policy in a rollout: a fault of
// its own) stays out, so a bad rollout stalls instead of replacing the fleet. After that, a
// shared dependency down is no reason to take a pod out of its Service: it is down for every
// pod, so readiness failing on it would take the whole fleet out and clients would get the
// load balancer's error instead of this service's 503 with Retry-After. So a process that
// serves the API stays ready while Redis is unreachable (it answers 503 UNAVAILABLE itself,
// fail closed) and while MySQL is sick (reservations wait in the journal); both are reported
// in the body. A process without the API (relay, writer, reconciler) has no clients to
// answer: it is not ready without Redis, nor, writer-only, with a writer failing, so an
// orchestrator sees it.
func readiness(configReady bool, redisErr error, redisReached bool, writerErr error, servesAPI bool) (bool, string) {
	switch {
	case !configReady:
		return false, "no configuration loaded"
	case redisErr != nil && (!servesAPI || !redisReached):
		return false, "redis unreachable"
	case writerErr != nil && !servesAPI:
		return false, "order writer failing"
	}
	return true, ""
}

// readyProbe answers /readyz from a cached Redis probe: at most one ping per period, however
// many requests ask.
type readyProbe struct {
	ping   func(ctx context.Context) error
	period time.Duration

	mu  sync.Mutex
	at  time.Time
	err error
	// reached: a probe succeeded once since the start (readiness).
	reached bool
}

// reachedOnce reports whether a probe succeeded since the start.
func (p *readyProbe) reachedOnce() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reached
}

// check returns the latest probe result, probing again when it is older than the period.
// Concurrent callers wait for the one probe in flight.
func (p *readyProbe) check(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && now.Sub(p.at) < p.period {
		return p.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	p.err = p.ping(ctx)
	p.at = time.Now()
	p.reached = p.reached || p.err == nil
	return p.err
}
