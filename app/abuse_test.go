package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

// withLimits is testConfig with the lines of the given limits replaced.
func withLimits(repl map[string]string) string {
	var b strings.Builder
	for _, line := range strings.Split(testConfig, "\n") {
		for k, v := range repl {
			if strings.HasPrefix(strings.TrimSpace(line), k+":") {
				line = "  " + k + ": " + v
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestLimitsAtTheBoundsServe: a configuration with limits at the bounds config accepts
// (MinRate, MaxRate, MaxBurst, MaxRefill) is served by the scripts: every reservation is 202
// or 429, never the 503 of a script that cannot count or expire its bucket.
func TestLimitsAtTheBoundsServe(t *testing.T) {
	for _, tt := range []struct {
		name string
		repl map[string]string
	}{
		{"max", map[string]string{"global": "{rate: 1.0e9, burst: 1000000000}", "user": "{rate: 1.0e9, burst: 1000000000}",
			"ip": "{rate: 1.0e9, burst: 1000000000}", "activity": "{rate: 1.0e9, burst: 1000000000}"}},
		{"min", map[string]string{"ip": "{rate: 0.001, burst: 1}", "user": "{rate: 0.001, burst: 1}"}},
		{"refill", map[string]string{"global": "{rate: 0.001, burst: 604}", "user": "{rate: 0.01, burst: 6048}",
			"ip": "{rate: 0.01, burst: 6048}", "userWindow": "{window: 168h, max: 1000000000}"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ta := startApp(t, Options{}, withLimits(tt.repl))
			ta.createActivity(t, "bounds-1", 1000, 1000, 2, time.Now().Add(-time.Second))
			var got []int
			for i := range 8 {
				a := ta.do(t, "POST", "/api/v1/activities/bounds-1/reservations",
					map[string]string{"X-User-Id": fmt.Sprintf("u-%d", i%2)}, "")
				if a.status != http.StatusAccepted && a.status != http.StatusTooManyRequests {
					t.Fatalf("reservation %d at the bounds: %d %v, want 202 or 429", i, a.status, a.body)
				}
				got = append(got, a.status)
			}
			if got[0] != http.StatusAccepted {
				t.Fatalf("first reservation %v, want 200", got)
			}
		})
	}
}

// TestRevertedLimitIsNotRemembered: a limit tightened by mistake (rate 0.001: Retry-After
// 1000 s) and reverted must stop refusing once the revert is applied, for the user and for
// the address; before, the local memory of refusals kept answering 429 for 1000 s.
func TestRevertedLimitIsNotRemembered(t *testing.T) {
	for _, dim := range []string{"user", "ip"} {
		t.Run(dim, func(t *testing.T) {
			ta := startApp(t, Options{}, testConfig)
			ta.createActivity(t, "revert-1", 1000, 1000, 2, time.Now().Add(-time.Second))
			ta.setConfig(t, withLimits(map[string]string{dim: "{rate: 0.001, burst: 1}"}))
			reserve := func() answer {
				return ta.do(t, "POST", "/api/v1/activities/revert-1/reservations", map[string]string{"X-User-Id": "u-1"}, "")
			}
			if a := reserve(); a.status != http.StatusAccepted {
				t.Fatalf("first: %d %v", a.status, a.body)
			}
			a := reserve()
			if a.status != http.StatusTooManyRequests || a.body["dimension"] != dim {
				t.Fatalf("second under the tight limit: %d %v, want 429 of %s", a.status, a.body, dim)
			}
			ta.setConfig(t, testConfig)
			start := time.Now()
			testwait.Eventually(t, 2*time.Second, func() bool { return reserve().status == http.StatusAccepted },
				"a reservation admitted once the revert is applied")
			if took := time.Since(start); took > time.Second {
				t.Fatalf("the revert took %v to reach the admission, want within 1 s", took)
			}
		})
	}
}
