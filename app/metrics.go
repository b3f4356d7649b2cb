package app

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/app/admission"
)

// Outcomes of a successful request (the outcome label); an error's outcome is its code.
const (
	outcomeReserved = "RESERVED" // 202, a new reservation
	outcomeReplayed = "REPLAYED" // 200, a replayed Idempotency-Key
	outcomeOK       = "OK"       // any other 2xx or 3xx answer
)

// errorOutcomes are the error codes of the JSON error model that the outcome label takes:
// app's own, then the labels of the refused and failed reservation outcomes (outcomes, the
// table: the admission step's codes), so that a rejection's row brings its code.
var errorOutcomes = append([]string{
	CodeBadRequest, CodeTooLarge, CodeUnauthenticated, CodeNotFound, CodeMethodNotAllowed, CodeConflict, CodeInternal,
}, outcomeLabels(oKillSwitch)...)

// httpOutcomes is the closed set of the outcome label: the successes and every error code.
var httpOutcomes = append([]string{outcomeReserved, outcomeReplayed, outcomeOK}, errorOutcomes...)

// reservationOutcomes are the outcome labels of POST /api/v1/activities/:id/reservations,
// created at 0 so the dashboard's panels of that route never read "No data": those of the
// answers refused before the admission step (malformed, unauthenticated, unknown activity, a
// panic), then the label of every reservation outcome.
func reservationOutcomes() []string {
	return append([]string{CodeBadRequest, CodeTooLarge, CodeUnauthenticated, CodeNotFound, CodeInternal}, outcomeLabels(oAccepted)...)
}

// outcomeLabels are the distinct HTTP labels of the reservation outcomes from first on.
func outcomeLabels(first outcome) []string {
	var labels []string
	for o := first; o < nOutcomes; o++ {
		if l := o.httpLabel(); !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	return labels
}

// reservationRoute is the route label of the reservation endpoint (Gin's full path).
const reservationRoute = "/api/v1/activities/:id/reservations"

// httpMetrics are the HTTP layer's metrics.
type httpMetrics struct {
	latency *prometheus.HistogramVec
	// reservation holds the latency children of the reservation route by outcome label, and
	// answers by reservation outcome (the child of its label), resolved once (read-only
	// after newHTTPMetrics), so its requests skip the label lookup.
	reservation map[string]prometheus.Observer
	answers     [nOutcomes]prometheus.Observer
}

// observer is the latency child of (route, outcome).
func (m *httpMetrics) observer(route, outcome string) prometheus.Observer {
	if route == reservationRoute {
		if o, ok := m.reservation[outcome]; ok {
			return o
		}
	}
	return m.latency.WithLabelValues(route, outcome)
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_http_request_duration_seconds",
			Help: "Latency of HTTP requests in seconds, by route (the router's pattern, \"unmatched\" for none) " +
				"and outcome (RESERVED, REPLAYED, OK, or the error code of the answer).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "outcome"}),
	}
	labels := reservationOutcomes()
	m.reservation = make(map[string]prometheus.Observer, len(labels))
	for _, l := range labels {
		m.reservation[l] = m.latency.WithLabelValues(reservationRoute, l)
	}
	for o := oAccepted; o < nOutcomes; o++ {
		m.answers[o] = m.reservation[o.httpLabel()]
	}
	reg.MustRegister(m.latency)
	return m
}

// outcomeLabel maps what a handler recorded (set, "" for nothing) and the answer's HTTP status
// to the closed set httpOutcomes: a success is RESERVED, REPLAYED or OK (a resource state such
// as OPEN or PENDING is not an outcome), an error keeps its code, and an error without one
// (the router's own, /readyz) gets the code of its status.
func outcomeLabel(set string, status int) string {
	if status < http.StatusBadRequest {
		if set == outcomeReserved || set == outcomeReplayed {
			return set
		}
		return outcomeOK
	}
	for _, o := range errorOutcomes {
		if o == set {
			return o
		}
	}
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return admission.CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusTooManyRequests:
		return admission.CodeRateLimited
	case http.StatusServiceUnavailable:
		return admission.CodeUnavailable
	}
	if status >= http.StatusInternalServerError {
		return CodeInternal
	}
	return CodeBadRequest
}
