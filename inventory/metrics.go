package inventory

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the inventory's Prometheus collectors. Build them once with NewMetrics; a
// nil *Metrics is not valid, pass NewMetrics(nil) for unregistered collectors.
type Metrics struct {
	remaining   *prometheus.GaugeVec     // coupon_stock_remaining{activity}
	issued      *prometheus.CounterVec   // coupon_issue_success_total{activity}
	calls       *prometheus.CounterVec   // redis_calls_total{script}
	callSeconds *prometheus.HistogramVec // redis_call_seconds{script}
	soldOut     *prometheus.CounterVec   // coupon_soldout_marks_total{activity,source}
}

// NewMetrics builds the collectors and registers them with reg (nil: not registered). A
// collector that another package already registered under the same name and labels is
// shared instead of failing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coupon_stock_remaining", Help: "Units left in Redis over every shard of the activity's current layout, as last refreshed.",
		}, []string{"activity"}),
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coupon_issue_success_total", Help: "Reservations accepted (new ones, not replays).",
		}, []string{"activity"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redis_calls_total", Help: "Redis script calls by script.",
		}, []string{"script"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "redis_call_seconds", Help: "Latency of Redis script calls by script.",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .02, .05, .1, .25, 1},
		}, []string{"script"}),
		soldOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coupon_soldout_marks_total", Help: "Times this instance marked an activity sold out, by source (reserve, event, refresh).",
		}, []string{"activity", "source"}),
	}
	if reg != nil {
		m.remaining = register(reg, m.remaining)
		m.issued = register(reg, m.issued)
		m.calls = register(reg, m.calls)
		m.callSeconds = register(reg, m.callSeconds)
		m.soldOut = register(reg, m.soldOut)
	}
	return m
}

// register registers c, or returns the collector already registered under its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex
			}
		}
	}
	return c
}
