package app

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// sumOf sums the samples of the family name (a counter's value, a gauge's value, a histogram's
// count) whose labels include every pair of want.
func sumOf(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// TestMetricsFollowTheNamingGuide: every metric of the service has the one seckill_ prefix and
// passes promlint (base units, _total on counters); the outcome label of the HTTP histogram
// takes its values from one closed set of codes (no status texts such as "Created"); the
// Nacos instance count is not exported in file mode, where there is no Nacos naming.
func TestMetricsFollowTheNamingGuide(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "mname")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second)) // 201
	ta.reserve(t, id, "mname-user", "")                              // 202
	ta.do(t, "GET", "/api/v1/activities/"+id, nil, "")               // 200
	ta.do(t, "GET", "/no/such/route", nil, "")                       // 404
	ta.do(t, "DELETE", "/api/v1/activities/"+id, nil, "")            // 405
	ta.do(t, "GET", "/readyz", nil, "")                              // 200 without a code
	ta.admin(t, "GET", "/admin/v1/config", "")                       // 200 without a code

	mfs, err := ta.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var own []*dto.MetricFamily
	outcomes := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") {
			continue // the Go runtime's and the process's standard collectors
		}
		if !strings.HasPrefix(n, "seckill_") {
			t.Errorf("metric %s lacks the seckill_ prefix", n)
		}
		if strings.Contains(n, "healthy_instances") && strings.Contains(n, "nacos") {
			t.Errorf("%s is exported in file mode", n)
		}
		own = append(own, mf)
		if n == "seckill_http_request_duration_seconds" {
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "outcome" {
						outcomes[lp.GetValue()] = true
					}
				}
			}
		}
	}
	problems, err := promlint.NewWithMetricFamilies(own).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	closed := map[string]bool{}
	for _, o := range httpOutcomes {
		closed[o] = true
	}
	for _, want := range []string{"RESERVED", "OK", "NOT_FOUND", "METHOD_NOT_ALLOWED"} {
		if !outcomes[want] {
			t.Errorf("no outcome %q on the HTTP histogram (have %v)", want, outcomes)
		}
	}
	for o := range outcomes {
		if !closed[o] {
			t.Errorf("outcome %q is outside the closed set %v", o, httpOutcomes)
		}
	}
	if got := sumOf(t, ta.reg, "seckill_rate_limiter_healthy_instances", nil); got != 1 {
		t.Errorf("seckill_rate_limiter_healthy_instances = %v, want 1 (this instance)", got)
	}
}
