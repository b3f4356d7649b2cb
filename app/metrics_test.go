package app

import (
	"fmt"
	"net/http"
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

// TestMetricsAddUpToHTTPOutcomes: every rate-limit decision is counted where it is made, the
// limiter's own and those the reservation script makes for the user and the IP, so the
// limiter's counters add up to the answers clients saw and to the HTTP histogram. Users send
// four requests each from one IP: the first is reserved, the second passes the user bucket
// and meets the per-user limit (409), the third finds the user bucket empty (script), the
// fourth is answered from the limiter's memory; part way the IP bucket runs dry (script), and
// every later request is answered from the memory of that IP.
func TestMetricsAddUpToHTTPOutcomes(t *testing.T) {
	ta := startApp(t, realOptions(t), `
auth: {mode: header, trustedGateway: true}
limits:
  global:   {rate: 1000000, burst: 1000000}
  campaign: {rate: 1000000, burst: 1000000}
  activity: {rate: 1000000, burst: 1000000}
  user:     {rate: 0.001, burst: 2}
  ip:       {rate: 0.001, burst: 15}
  userWindow: {window: 60s, max: 1000}
`)
	id := uniq(t, "madd")
	ta.createActivity(t, id, 100, 1, 2, time.Now().Add(-time.Second))
	seen := map[string]int{}
	for u := range 10 {
		user := fmt.Sprintf("%s-u%d", id, u)
		for range 4 {
			a := ta.reserve(t, id, user, "")
			code, _ := a.body["code"].(string)
			if a.status == http.StatusAccepted {
				code = "RESERVED"
			}
			seen[code]++
		}
	}
	t.Logf("answers: %v", seen)
	for _, c := range []string{"RESERVED", "ALREADY_PURCHASED", "RATE_LIMITED"} {
		if seen[c] == 0 {
			t.Fatalf("no %s answer; the scenario did not run as designed: %v", c, seen)
		}
	}
	if n := seen["RESERVED"] + seen["ALREADY_PURCHASED"] + seen["RATE_LIMITED"]; n != 40 {
		t.Fatalf("unexpected answers: %v", seen)
	}

	g := ta.reg
	const (
		reqDur = "seckill_http_request_duration_seconds"
		pass   = "seckill_rate_limiter_pass_total"
		reject = "seckill_rate_limiter_reject_total"
	)
	hist := func(outcome string) float64 {
		return sumOf(t, g, reqDur, map[string]string{"route": reservationRoute, "outcome": outcome})
	}
	rej := func(dim, reason string) float64 {
		l := map[string]string{"dimension": dim}
		if reason != "" {
			l["reason"] = reason
		}
		return sumOf(t, g, reject, l)
	}
	for _, c := range []string{"RESERVED", "ALREADY_PURCHASED", "RATE_LIMITED"} {
		if got := hist(c); got != float64(seen[c]) {
			t.Errorf("HTTP histogram counts %v %s, clients saw %d", got, c, seen[c])
		}
	}
	rejected := sumOf(t, g, reject, nil) - rej("none", "canceled")
	if rejected != float64(seen["RATE_LIMITED"]) {
		t.Errorf("limiter rejections sum to %v, clients saw %d RATE_LIMITED", rejected, seen["RATE_LIMITED"])
	}
	// The script decided for the user and the IP on every request the limiter admitted.
	admitted := float64(seen["RESERVED"] + seen["ALREADY_PURCHASED"])
	for _, dim := range []string{"user", "ip"} {
		if got := sumOf(t, g, pass, map[string]string{"dimension": dim}); got != admitted {
			t.Errorf("%s{dimension=%q} = %v, want %v (reserved + already purchased)", pass, dim, got, admitted)
		}
	}
	scriptRejects := rej("user", "rate") + rej("user", "window") + rej("ip", "rate")
	if got, want := sumOf(t, g, pass, map[string]string{"dimension": "activity"}), admitted+scriptRejects; got != want {
		t.Errorf("%s{dimension=activity} = %v, want %v (admitted by the script + rejected by it)", pass, got, want)
	}
	for _, c := range []struct{ dim, reason string }{{"user", "rate"}, {"user", "remembered"}, {"ip", "rate"}, {"ip", "remembered"}} {
		if rej(c.dim, c.reason) == 0 {
			t.Errorf("%s{dimension=%q,reason=%q} is 0", reject, c.dim, c.reason)
		}
	}
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

// TestMetricsDegradedWhileRedisDown: with Redis unreachable and no traffic at all,
// seckill_rate_limiter_degraded reads 1 on /metrics within a few seconds, and 0 again once
// Redis is back.
func TestMetricsDegradedWhileRedisDown(t *testing.T) {
	ta, p := redisProxyApp(t)
	if d := metric(t, ta.adminBase, "seckill_rate_limiter_degraded"); d != 0 {
		t.Fatalf("degraded %v with Redis up", d)
	}
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	took := waitUntil(t, 5*time.Second, "seckill_rate_limiter_degraded 1 with Redis down", func() bool {
		return metric(t, ta.adminBase, "seckill_rate_limiter_degraded") == 1
	})
	t.Logf("degraded %v after Redis went away, without traffic", took.Round(10*time.Millisecond))
	if err := p.Enable(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "seckill_rate_limiter_degraded back to 0", func() bool {
		return metric(t, ta.adminBase, "seckill_rate_limiter_degraded") == 0
	})
}
