package inventory

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/prom"
)

// Metrics are the inventory's Prometheus collectors. Build them once with NewMetrics; New
// takes a nil *Metrics for unregistered collectors. Labels are
// activity, script and source, never a user.
type Metrics struct {
	remaining   *prometheus.GaugeVec     // seckill_stock_remaining_units{activity}
	issued      *prometheus.CounterVec   // seckill_reservations_accepted_total{activity}
	calls       *prometheus.CounterVec   // seckill_redis_script_calls_total{script}
	callSeconds *prometheus.HistogramVec // seckill_redis_script_duration_seconds{script}
	soldOut     *prometheus.CounterVec   // seckill_soldout_marks_total{activity,source}
	recovering  *prometheus.GaugeVec     // seckill_activity_recovering{activity}
	batchSize   prometheus.Histogram     // seckill_reserve_batch_size
}

// NewMetrics builds the collectors and registers them with reg (nil: not registered); New
// creates the series of every script at 0. A collector that another part already
// registered under the same name and labels is shared instead of failing; any other
// refusal of reg is returned.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := newMetrics()
	if reg == nil {
		return m, nil
	}
	var err [7]error
	m.remaining, err[0] = register(reg, m.remaining)
	m.issued, err[1] = register(reg, m.issued)
	m.calls, err[2] = register(reg, m.calls)
	m.callSeconds, err[3] = register(reg, m.callSeconds)
	m.soldOut, err[4] = register(reg, m.soldOut)
	m.recovering, err[5] = register(reg, m.recovering)
	m.batchSize, err[6] = register(reg, m.batchSize)
	if err := errors.Join(err[:]...); err != nil {
		return nil, fmt.Errorf("inventory: register metrics: %w", err)
	}
	return m, nil
}

// newMetrics builds the collectors, unregistered.
func newMetrics() *Metrics {
	m := &Metrics{
		remaining: prom.GaugeVec("seckill_stock_remaining_units",
			"Units left in Redis over every shard of the activity's current layout, as last refreshed.", "activity"),
		issued: prom.CounterVec("seckill_reservations_accepted_total",
			"Reservations accepted (new ones, not replays).", "activity"),
		calls: prom.CounterVec("seckill_redis_script_calls_total",
			"Redis script calls of the inventory, by script.", "script"),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_redis_script_duration_seconds", Help: "Latency of the inventory's Redis script calls, by script, in seconds.",
			Buckets: []float64{.0002, .0005, .001, .002, .005, .01, .02, .05, .1, .25, 1},
		}, []string{"script"}),
		soldOut: prom.CounterVec("seckill_soldout_marks_total",
			"Times this instance marked an activity sold out, by source (reserve, event, refresh).", "activity", "source"),
		recovering: prom.GaugeVec("seckill_activity_recovering",
			"1 while this instance holds the activity in the recovering state: Redis lost its state, reservations are refused until a restore from MySQL.", "activity"),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_reserve_batch_size", Help: "Reservations per reservation script call (group commit: the requests of one activity, on a cluster of one shard, that arrived while its previous call was in flight).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
	}
	return m
}

// register registers c, or returns the collector already registered under its name; any
// other refusal is an error.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex, nil
			}
		}
		return c, err
	}
	return c, nil
}

// forget deletes the series of an activity that went away.
func (m *Metrics) forget(activity string) {
	m.remaining.DeleteLabelValues(activity)
	m.issued.DeleteLabelValues(activity)
	m.soldOut.DeletePartialMatch(prometheus.Labels{"activity": activity})
	m.recovering.DeleteLabelValues(activity)
}
