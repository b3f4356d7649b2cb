package limiter

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the limiter's Prometheus series. Build one with NewMetrics per registry; a nil
// *Metrics given to New means unregistered metrics. Labels are dimension, reason and op only,
// never a user, an IP or an activity.
type Metrics struct {
	pass        *prometheus.CounterVec
	reject      *prometheus.CounterVec
	retryAfter  prometheus.Histogram
	degraded    prometheus.Gauge
	slowCalls   prometheus.Counter
	slowChecks  *prometheus.CounterVec
	redisCalls  *prometheus.CounterVec
	transitions *prometheus.CounterVec
	leaseTokens *prometheus.CounterVec
}

// NewMetrics builds the limiter metrics and registers them with reg (nil: not registered).
// It panics, like prometheus.MustRegister, when reg already holds these series.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		pass: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rate_limiter_pass_total",
			Help: "Requests admitted, counted once for every dimension that limited and admitted them.",
		}, []string{"dimension"}),
		reject: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rate_limiter_reject_total",
			Help: "Requests rejected, by the rejecting dimension and the reason (rate, remembered, fallback, canceled).",
		}, []string{"dimension", "reason"}),
		retryAfter: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rate_limiter_retry_after_ms",
			Help:    "Retry-After given with rejections, in milliseconds.",
			Buckets: []float64{1, 5, 10, 50, 100, 250, 500, 1000, 5000, 30000, 60000},
		}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rate_limiter_degraded",
			Help: "1 while the limiter decides locally because Redis is slow or failing, else 0.",
		}),
		slowCalls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "redis_slow_call_total",
			Help: "Redis calls (the limiter's and those reported by ObserveRedis) slower than fallback.redisSlowMs.",
		}),
		slowChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rate_limiter_slow_checks_total",
			Help: "Suspicions of a slow Redis (slowCallsToDegrade net slow calls) checked by the prober against a local control, by result (confirmed: degraded; refuted: the process was short of CPU).",
		}, []string{"result"}),
		redisCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rate_limiter_redis_calls_total",
			Help: "Redis calls made by the limiter, by operation (lease, bucket, refund, heartbeat, probe, confirm).",
		}, []string{"op"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rate_limiter_mode_changes_total",
			Help: "Switches between Redis and local limiting, by the mode switched to (degraded, recovered).",
		}, []string{"to"}),
		leaseTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rate_limiter_lease_tokens_total",
			Help: "Budget tokens leased from Redis and handed back unused after their lease expired.",
		}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.pass, m.reject, m.retryAfter, m.degraded, m.slowCalls, m.slowChecks, m.redisCalls,
			m.transitions, m.leaseTokens)
	}
	return m
}
