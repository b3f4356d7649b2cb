package waitroom

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
		length: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_waitroom_queue_length", Help: "Places in line not yet reached by the inlet, as this instance last read the line.",
		}, []string{"activity"}),
		outflow: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "seckill_waitroom_outflow_per_second", Help: "Places the inlet served per second (admitted or skipped) over the last 10 s, as measured by this instance.",
		}, []string{"activity"}),
		joined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitroom_joined_total", Help: "Places taken through this instance (not rejoins).",
		}, []string{"activity"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitroom_admitted_total", Help: "Places admitted by this instance's inlet steps (while it held the lease); rate() is admitted per second.",
		}, []string{"activity"}),
		abandoned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitroom_abandoned_total", Help: "Places skipped by this instance's inlet steps: no heartbeat within the bound.",
		}, []string{"activity"}),
		passesUsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitroom_passes_used_total", Help: "Passes a reservation took through this instance (those given back included).",
		}, []string{"activity"}),
		passesReturned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitroom_passes_returned_total", Help: "Passes given back through this instance because their reservation was refused or its outcome is unknown: the buyer's turn goes on.",
		}, []string{"activity"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_waitroom_step_errors_total", Help: "Periods of following or of the inlet that failed (Redis errors).",
		}, []string{"activity"}),
		etaError: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seckill_waitroom_eta_error_ratio",
			Help:    "|predicted - actual| / actual wait of the places admitted, for the first ETA given here once 5 s of outflow were measured.",
			Buckets: []float64{0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2},
		}, []string{"activity"}),
	}
}
