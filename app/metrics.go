package app

import "github.com/prometheus/client_golang/prometheus"

// httpMetrics are the HTTP layer's metrics.
type httpMetrics struct {
	latency *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Latency of HTTP requests by route and outcome (the answer's code, e.g. RESERVED, SOLD_OUT, RATE_LIMITED).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "outcome"}),
	}
	reg.MustRegister(m.latency)
	return m
}
