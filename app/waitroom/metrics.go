package waitroom

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/prom"
)

// Metrics are the waiting room's collectors, labelled by activity. Build them with NewMetrics.
type Metrics struct {
	length     *prometheus.GaugeVec
	outflow    *prometheus.GaugeVec
	joined     *prometheus.CounterVec
	admitted   *prometheus.CounterVec
	abandoned  *prometheus.CounterVec
	passesUsed *prometheus.CounterVec
	// passesReturned counts passes given back after their reservation was refused.
	passesReturned *prometheus.CounterVec
	errors         *prometheus.CounterVec
	etaError       *prometheus.HistogramVec
}

// NewMetrics builds the collectors and registers them with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := newMetrics()
	if reg == nil {
		return m, nil
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.length, m.outflow, m.joined, m.admitted, m.abandoned, m.passesUsed, m.passesReturned, m.errors, m.etaError} {
		errs = append(errs, reg.Register(c))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("waitroom: register metrics: %w", err)
	}
	return m, nil
}

func newMetrics() *Metrics {
	return &Metrics{
		length: prom.GaugeVec("seckill_waitroom_queue_length",
			"Places in line not yet reached by the inlet, as this instance last read the line.", "activity"),
		outflow: prom.GaugeVec("seckill_waitroom_outflow_per_second",
			"Places the inlet served per second (admitted or skipped) over the last 10 s, as measured by this instance.", "activity"),
		joined: prom.CounterVec("seckill_waitroom_joined_total",
			"Places taken through this instance (not rejoins).", "activity"),
		admitted: prom.CounterVec("seckill_waitroom_admitted_total",
			"Places admitted by this instance's inlet steps (while it held the lease); rate() is admitted per second.", "activity"),
		abandoned: prom.CounterVec("seckill_waitroom_abandoned_total",
			"Places skipped by this instance's inlet steps: no heartbeat within the bound.", "activity"),
		passesUsed: prom.CounterVec("seckill_waitroom_passes_used_total",
			"Passes a reservation took through this instance (those given back included).", "activity"),
		passesReturned: prom.CounterVec("seckill_waitroom_passes_returned_total",
			"Passes given back through this instance because their reservation was refused or its outcome is unknown: the buyer's turn goes on.", "activity"),
		errors: prom.CounterVec("seckill_waitroom_step_errors_total",
			"Periods of following or of the inlet that failed (Redis errors).", "activity"),
		etaError: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seckill_waitroom_eta_error_ratio",
			Help:    "|predicted - actual| / actual wait of the places admitted, for the first ETA given here once 5 s of outflow were measured.",
			Buckets: []float64{0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2},
		}, []string{"activity"}),
	}
}
