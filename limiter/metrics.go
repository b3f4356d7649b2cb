package limiter

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/prom"
)

// Metrics are the limiter's Prometheus series. Build one with NewMetrics per registry; a nil
// *Metrics given to New means unregistered metrics. Labels are dimension, reason, op and to,
// each with a closed set of values, never a user, an IP or an activity. Every series of those
// closed sets is created at 0 by NewMetrics, so dashboards and alerts never read "No data".
type Metrics struct {
	pass        *prometheus.CounterVec
	reject      *prometheus.CounterVec
	retryAfter  prometheus.Histogram
	degraded    prometheus.Gauge
	healthy     prometheus.Gauge
	slowCalls   prometheus.Counter
	slowChecks  *prometheus.CounterVec
	redisCalls  *prometheus.CounterVec
	transitions *prometheus.CounterVec
	leaseTokens *prometheus.CounterVec
}

// Label values of the limiter's metrics, one closed set per label.
var (
	// passDims are the dimensions counted by seckill_rate_limiter_pass_total.
	passDims = []string{DimGlobal, DimCampaign, DimActivity, DimChannel, DimIP, DimUser}
	// rejectLabels are the (dimension, reason) pairs seckill_rate_limiter_reject_total takes:
	// the leased budgets reject for rate (Redis) or fallback (local), the IP for rate (Redis,
	// in the limiter or the reservation script), remembered or fallback, the user for rate or
	// window (the reservation script) or remembered; a request whose context ended is
	// rejected with dimension "none".
	rejectLabels = [][2]string{
		{DimGlobal, ReasonRate}, {DimGlobal, ReasonFallback},
		{DimCampaign, ReasonRate}, {DimCampaign, ReasonFallback},
		{DimActivity, ReasonRate}, {DimActivity, ReasonFallback},
		{DimChannel, ReasonRate}, {DimChannel, ReasonFallback},
		{DimIP, ReasonRate}, {DimIP, ReasonRemembered}, {DimIP, ReasonFallback},
		{DimUser, ReasonRate}, {DimUser, ReasonWindow}, {DimUser, ReasonRemembered},
		{DimNone, ReasonCanceled},
	}
	redisOps     = []string{"lease", "bucket", "refund", "heartbeat", "probe"}
	modes        = []string{"degraded", "recovered"}
	leaseOps     = []string{"leased", "returned"}
	retryBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 5, 30, 60, 300, 1800}
)

// NewMetrics builds the limiter metrics, creates every labelled series at 0 and registers
// them with reg (nil: not registered); an error when reg refuses one (already registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := newMetrics()
	if reg != nil {
		if err := prom.Register(reg, m.pass, m.reject, m.retryAfter, m.degraded, m.healthy, m.slowCalls, m.slowChecks, m.redisCalls,
			m.transitions, m.leaseTokens); err != nil {
			return nil, fmt.Errorf("limiter: register metrics: %w", err)
		}
	}
	return m, nil
}

// rejectCounter is the reject series of (dimension, reason), or nil for a pair outside
// rejectLabels (which the limiter does not produce; resolved on first use if it ever does).
func (m *Metrics) rejectCounter(dim, reason string) prometheus.Counter {
	for _, l := range rejectLabels {
		if l[0] == dim && l[1] == reason {
			return m.reject.WithLabelValues(dim, reason)
		}
	}
	return nil
}

// countReject counts one rejection by dimension index d and reason index reason, with its
// Retry-After.
func (l *Limiter) countReject(d, reason int, retry time.Duration) {
	c := l.rejectC[d][reason]
	if c == nil {
		c = l.rejectVec.WithLabelValues(dimNames[d], reasonNames[reason])
	}
	c.Inc()
	if retry > 0 {
		l.retryH.Observe(retry.Seconds())
	}
}

// ScriptAdmitted counts a request that the reservation script admitted: one pass of the user
// dimension when user is true (a per-user token bucket or sliding window was in force) and
// one of the IP dimension when ip is true (the script took the IP token, see
// Request.IPInReservation). The admission step reports it, once per answer of the script;
// the limiter's own decisions are counted by Allow. Safe for concurrent use.
func (l *Limiter) ScriptAdmitted(user, ip bool) {
	if user {
		l.passC[dUser].Inc()
	}
	if ip {
		l.passC[dIP].Inc()
	}
}

// ScriptRejected counts a request that the reservation script rejected: dimension DimUser with
// ReasonRate (token bucket) or ReasonWindow (sliding window), or DimIP with ReasonRate, and
// its Retry-After. Unknown names are counted under their own labels. Safe for concurrent use.
func (l *Limiter) ScriptRejected(dimension, reason string, retryAfter time.Duration) {
	d, r := -1, -1
	for i, n := range dimNames {
		if n == dimension {
			d = i
		}
	}
	for i, n := range reasonNames {
		if n == reason {
			r = i
		}
	}
	if d < 0 || r < 0 {
		l.rejectVec.WithLabelValues(dimension, reason).Inc()
		return
	}
	l.countReject(d, r, retryAfter)
}

// setHealthy records n, the healthy instance count the fallback budget is divided by.
func (l *Limiter) setHealthy(n int64) {
	l.healthy.Store(n)
	l.healthyG.Set(float64(n))
}

// newMetrics builds the limiter metrics with every labelled series at 0, unregistered.
func newMetrics() *Metrics {
	m := &Metrics{
		pass: prom.CounterVec("seckill_rate_limiter_pass_total",
			"Requests admitted, counted once for every dimension that limited and admitted them "+
				"(user and IP: decided in the reservation script when it takes their tokens).", "dimension"),
		reject: prom.CounterVec("seckill_rate_limiter_reject_total",
			"Requests rejected, by the rejecting dimension and the reason (rate, window, remembered, "+
				"fallback; canceled with dimension none). Without canceled, the sum is the number of 429 RATE_LIMITED answers.", "dimension", "reason"),
		retryAfter: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seckill_rate_limiter_retry_after_seconds",
			Help:    "Retry-After given with rate-limit rejections, in seconds.",
			Buckets: retryBuckets,
		}),
		degraded: prom.Gauge("seckill_rate_limiter_degraded",
			"1 while the local limiter is in force because Redis is slow or unreachable, else 0."),
		healthy: prom.Gauge("seckill_rate_limiter_healthy_instances",
			"Healthy instances the fallback budget is divided by (Nacos naming or the Redis heartbeat set; at least 1, this instance)."),
		slowCalls: prom.Counter("seckill_redis_slow_calls_total",
			"Redis calls (the limiter's and those reported by ObserveRedis) slower than fallback.redisSlowMs."),
		slowChecks: prom.CounterVec("seckill_rate_limiter_slow_checks_total",
			"Suspicions of a slow Redis (slowCallsToDegrade net slow calls) checked by the prober against a local control, by result (confirmed: degraded; refuted: the process was short of CPU).", "result"),
		redisCalls: prom.CounterVec("seckill_rate_limiter_redis_calls_total",
			"Redis calls made by the limiter, by operation (lease, bucket, refund, heartbeat, probe, confirm).", "op"),
		transitions: prom.CounterVec("seckill_rate_limiter_mode_changes_total",
			"Switches between Redis and local limiting, by the mode switched to (degraded, recovered).", "to"),
		leaseTokens: prom.CounterVec("seckill_rate_limiter_lease_tokens_total",
			"Budget tokens leased from Redis and handed back unused after their lease expired, by op (leased, returned).", "op"),
	}
	for _, d := range passDims {
		m.pass.WithLabelValues(d)
	}
	for _, l := range rejectLabels {
		m.reject.WithLabelValues(l[0], l[1])
	}
	for _, op := range redisOps {
		m.redisCalls.WithLabelValues(op)
	}
	for _, to := range modes {
		m.transitions.WithLabelValues(to)
	}
	for _, op := range leaseOps {
		m.leaseTokens.WithLabelValues(op)
	}
	m.healthy.Set(1)
	return m
}
