//go:build integration

package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

// TestMetricsAddUpToHTTPOutcomes: every rate-limit decision is counted where it is made, the
// limiter's own and those the reservation script makes for the user and the IP, so the
// limiter's counters add up to the answers clients saw and to the HTTP histogram. Users send
// four requests each from one IP: the first is reserved, the second passes the user bucket
// and meets the per-user limit (409), the third finds the user bucket empty (script), the
// fourth is answered from the limiter's memory; part way the IP bucket runs dry (script), and
// every later request is answered from the memory of that IP.
func TestMetricsAddUpToHTTPOutcomes(t *testing.T) {
	ta := startApp(t, realOptions(t), withLimits(map[string]string{
		"user": "{rate: 0.001, burst: 2}",
		"ip":   "{rate: 0.001, burst: 15}",
	}))
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
	took := testwait.Eventually(t, 5*time.Second, func() bool {
		return metric(t, ta.adminBase, "seckill_rate_limiter_degraded") == 1
	}, "seckill_rate_limiter_degraded 1 with Redis down")

	t.Logf("degraded %v after Redis went away, without traffic", took.Round(10*time.Millisecond))
	if err := p.Enable(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, func() bool {
		return metric(t, ta.adminBase, "seckill_rate_limiter_degraded") == 0
	}, "seckill_rate_limiter_degraded back to 0")

}
