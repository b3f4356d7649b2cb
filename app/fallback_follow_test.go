package app

import (
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

// The configured fallback.probeEvery reaches a degraded limiter's prober when the
// configuration is applied, not with the next request: with no traffic at all, a prober of
// 60 s does not recover 1.5 s after Redis is back (before, it probed at the default 1 s,
// knowing nothing of the configuration), and shortening it to 200 ms makes it recover within a
// second or two of the edit.
func TestProbeEveryEditReachesTheProberWithoutTraffic(t *testing.T) {
	slow := testConfig + "fallback: {probeEvery: 60s}\n"
	ta := startApp(t, Options{}, slow)
	ta.mini.SetError("ERR injected: Redis down")
	testwait.Eventually(t, 10*time.Second, ta.lim.Degraded, "the limiter degraded with Redis down")
	ta.mini.SetError("")
	time.Sleep(1500 * time.Millisecond) // past a heartbeat with Redis back: a 60 s prober still waits
	if !ta.lim.Degraded() {
		t.Fatal("the limiter recovered 1.5 s after Redis came back: its prober does not follow the configured probeEvery of 60 s")
	}
	ta.setConfig(t, testConfig+"fallback: {probeEvery: 200ms}\n")
	testwait.Eventually(t, 3*time.Second, func() bool { return !ta.lim.Degraded() },
		"the limiter recovered within 3 s of the edit, with no request")
}
