//go:build integration

package limiter

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// proxied returns a client that reaches the test Redis through a fault proxy.
func proxied(t *testing.T) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	testsvc.Need(t, "redis", testsvc.RedisAddr)
	p, err := faultproxy.New("127.0.0.1:0", testsvc.RedisAddr)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), DisableIdentity: true, PoolSize: 16,
		MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() {
		c.Close()
		p.Close()
	})
	return p, c
}

func runLimiter(t *testing.T, l *Limiter) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- l.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = l.Close()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

var drillFallback = Fallback{RedisSlow: 20 * time.Millisecond, SlowCallsToDegrade: 5,
	ProbeEvery: 50 * time.Millisecond, Global: tokenbucket.Limit{Rate: 1000, Burst: 1000}}

// TestDegradeOnLatencyAndRecover injects latency between the Limiter and Redis: it must
// degrade within SlowCallsToDegrade calls plus those made while the prober's confirmRounds
// PINGs run, make no Redis call on the request path while
// degraded, stay degraded while Redis is slow, and recover once the latency goes.
func TestDegradeOnLatencyAndRecover(t *testing.T) {
	t.Parallel()
	proxy, rdb := proxied(t)
	l := newTestLimiter(t, rdb, nil, Options{CallTimeout: 2 * time.Second})
	runLimiter(t, l)
	r := Request{IP: tokenbucket.Limit{Rate: 10000, Burst: 10000}, IPKey: ipKeyOf(l, "10.2.0.1"), Fallback: drillFallback}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed || l.Degraded() {
		t.Fatalf("before the drill: %+v, degraded %v", d, l.Degraded())
	}

	proxy.SetLatency(30 * time.Millisecond)
	before := testutil.ToFloat64(l.callsBucket)
	for i := 0; !l.Degraded(); i++ {
		if i > 50 {
			t.Fatal("not degraded after 50 slow calls")
		}
		if d, _ := l.Allow(context.Background(), r); !d.Allowed {
			t.Fatalf("slow but answering Redis rejected: %+v", d)
		}
	}
	calls := testutil.ToFloat64(l.callsBucket) - before
	t.Logf("degraded after %.0f slow calls (slowCallsToDegrade %d)", calls, drillFallback.SlowCallsToDegrade)
	if bound := drillFallback.SlowCallsToDegrade + confirmRounds + 1; calls > float64(bound) {
		t.Fatalf("degraded after %.0f calls, want <= %d", calls, bound)
	}

	before = testutil.ToFloat64(l.callsBucket)
	for range 200 {
		if d, _ := l.Allow(context.Background(), r); !d.Allowed {
			t.Fatalf("fallback rejected within its budget: %+v", d)
		}
	}
	if n := testutil.ToFloat64(l.callsBucket) - before; n != 0 {
		t.Fatalf("degraded limiter made %.0f Redis calls on the request path", n)
	}
	// Several probes against a still slow Redis.
	testwait.Never(t, 300*time.Millisecond, func() bool { return !l.Degraded() }, "recovered while Redis is still slow")

	proxy.SetLatency(0)
	testwait.Eventually(t, 3*time.Second, func() bool { return !l.Degraded() }, "recovered")
	before = testutil.ToFloat64(l.callsBucket)
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("after recovery: %+v", d)
	}
	if n := testutil.ToFloat64(l.callsBucket) - before; n != 1 {
		t.Fatalf("after recovery %.0f Redis calls per request, want 1", n)
	}
	if got := testutil.ToFloat64(l.toDegraded); got != 1 {
		t.Fatalf("degrade transitions %v, want 1", got)
	}
}

// TestDegradeOnSlowAppCalls: the app's own Redis latency (ObserveRedis) raises the suspicion
// too; with Redis really slow the prober confirms it and the Limiter degrades. Reported slow
// calls against a fast Redis are refuted (the process was short of CPU) and do not degrade.
func TestDegradeOnSlowAppCalls(t *testing.T) {
	t.Parallel()
	report := func(l *Limiter) {
		for range drillFallback.SlowCallsToDegrade { // net +1 per round
			l.ObserveRedis(50*time.Millisecond, nil)
			l.ObserveRedis(time.Millisecond, redis.Nil) // a miss is a fast answer, not a failure
			l.ObserveRedis(50*time.Millisecond, nil)
		}
	}

	fast := newTestLimiter(t, testsvc.Redis(t), nil, Options{})
	runLimiter(t, fast)
	_, _ = fast.Allow(context.Background(), Request{Fallback: drillFallback})
	report(fast)
	testwait.Eventually(t, 3*time.Second, func() bool {
		return testutil.ToFloat64(fast.checkC[checkRefuted]) >= 1 && !fast.health.suspect.Load()
	}, "suspicion refuted")

	report(fast) // the score may have been reset mid-report; reach the threshold again
	testwait.Never(t, 200*time.Millisecond, fast.Degraded, "degraded on reported slow calls while Redis answers fast")

	proxy, rdb := proxied(t)
	slow := newTestLimiter(t, rdb, nil, Options{CallTimeout: 2 * time.Second})
	runLimiter(t, slow)
	_, _ = slow.Allow(context.Background(), Request{Fallback: drillFallback})
	proxy.SetLatency(30 * time.Millisecond)
	report(slow)
	testwait.Eventually(t, 2*time.Second, func() bool { return testutil.ToFloat64(slow.checkC[checkConfirmed]) >= 1 }, "confirmed")
	report(slow) // the score reaches the threshold within confirmFresh of the confirmation
	if !slow.Degraded() {
		t.Fatal("not degraded after slow reservation calls against a slow Redis")
	}
}

// TestRedisDownFallsBackAndRecovers: with Redis unreachable the first failed call degrades,
// that very request is decided locally, and the prober recovers once Redis is back.
func TestRedisDownFallsBackAndRecovers(t *testing.T) {
	t.Parallel()
	proxy, rdb := proxied(t)
	l := newTestLimiter(t, rdb, nil, Options{})
	runLimiter(t, l)
	r := Request{Global: tokenbucket.Limit{Rate: 1, Burst: 100}, IP: tokenbucket.Limit{Rate: 100, Burst: 100}, IPKey: ipKeyOf(l, "10.3.0.1"),
		Fallback: Fallback{RedisSlow: 20 * time.Millisecond, SlowCallsToDegrade: 5,
			ProbeEvery: 50 * time.Millisecond, Global: tokenbucket.Limit{Rate: 0.001, Burst: 3}}}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("before the drill: %+v", d)
	}
	if err := proxy.Disable(); err != nil {
		t.Fatal(err)
	}
	d, err := l.Allow(context.Background(), r)
	if err != nil || !d.Allowed || !l.Degraded() {
		t.Fatalf("with Redis down: %+v, %v, degraded %v; want allowed locally and degraded", d, err, l.Degraded())
	}
	// The fallback global budget (burst 3, one instance known) is enforced locally.
	allowed, last := allowTimes(l, r, 10)
	allowed++ // with the request that found Redis down
	if allowed != 3 || last.Dimension != DimGlobal || last.Reason != ReasonFallback || last.RetryAfter < time.Second {
		t.Fatalf("fallback allowed %d (want 3), last rejection %+v", allowed, last)
	}
	testwait.Never(t, 200*time.Millisecond, func() bool { return !l.Degraded() }, "recovered while Redis is down")
	if err := proxy.Enable(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 3*time.Second, func() bool { return !l.Degraded() }, "recovered")
}

// TestFallbackBudgetDividedByHealthy: the fallback global budget is divided by the healthy
// instance count, from Options.Healthy or from the heartbeat set.
func TestFallbackBudgetDividedByHealthy(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	fb := Fallback{Global: tokenbucket.Limit{Rate: 0.001, Burst: 40}}
	admitted := func(l *Limiter, ipLimit tokenbucket.Limit) int {
		n := 0
		for i := range 100 {
			r := Request{Fallback: fb, IP: ipLimit, IPKey: ipKeyOf(l, "10.4.0."+string(rune('a'+i%26)))}
			if d, _ := l.Allow(context.Background(), r); d.Allowed {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name    string
		healthy func() int
		want    int
	}{
		{name: "healthy func says 4", healthy: func() int { return 4 }, want: 10},
		{name: "healthy func says 1", healthy: func() int { return 1 }, want: 40},
		{name: "a count below 1 is ignored", healthy: func() int { return 0 }, want: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestLimiter(t, rdb, newFakeClock(), Options{Healthy: tt.healthy})
			l.degrade("test", nil)
			if got := admitted(l, tokenbucket.Limit{}); got != tt.want {
				t.Fatalf("admitted %d, want %d", got, tt.want)
			}
		})
	}

	t.Run("heartbeat set counts 2", func(t *testing.T) {
		prefix := uniq(t)
		cleanupKeys(t, rdb, prefix)
		clk := newFakeClock()
		a := newTestLimiterPrefix(t, rdb, clk, Options{InstanceID: "a"}, prefix)
		b := newTestLimiterPrefix(t, rdb, clk, Options{InstanceID: "b"}, prefix)
		runLimiter(t, a)
		runLimiter(t, b)
		testwait.Eventually(t, 3*time.Second, func() bool { return a.healthyCount() == 2 && b.healthyCount() == 2 }, "2 healthy")
		a.degrade("test", nil)
		if got := admitted(a, tokenbucket.Limit{}); got != 20 {
			t.Fatalf("admitted %d, want 20 (40 / 2)", got)
		}
		_ = b.Close() // leaves the set: a sees 1 at its next heartbeat
		testwait.Eventually(t, 3*time.Second, func() bool { return a.healthyCount() == 1 }, "1 healthy")
	})

	t.Run("registry never reachable means 1", func(t *testing.T) {
		proxy, prdb := proxied(t)
		_ = proxy.Disable()
		l := newTestLimiter(t, prdb, newFakeClock(), Options{})
		runLimiter(t, l)
		d, _ := l.Allow(context.Background(), Request{Fallback: fb, Global: tokenbucket.Limit{Rate: 10, Burst: 10}})
		if !d.Allowed || !l.Degraded() {
			t.Fatalf("%+v degraded %v", d, l.Degraded())
		}
		if got := admitted(l, tokenbucket.Limit{}); got != 39 {
			t.Fatalf("admitted %d, want 39 (40 - 1 already taken)", got)
		}
	})

	t.Run("last known count is kept when the registry goes away", func(t *testing.T) {
		l := newTestLimiter(t, rdb, newFakeClock(), Options{})
		l.healthy.Store(5)
		l.rdb = redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DisableIdentity: true, MaxRetries: -1})
		l.heartbeat(context.Background())
		if got := l.healthyCount(); got != 5 {
			t.Fatalf("healthy %d after a failed heartbeat, want the last known 5", got)
		}
	})

	t.Run("per-IP fallback is divided too and remembered", func(t *testing.T) {
		l := newTestLimiter(t, rdb, newFakeClock(), Options{Healthy: func() int { return 2 }})
		l.degrade("test", nil)
		r := Request{Fallback: fb, IP: tokenbucket.Limit{Rate: 0.001, Burst: 6}, IPKey: ipKeyOf(l, "10.4.1.1")}
		n, last := allowTimes(l, r, 10)
		if n != 3 || last.Dimension != DimIP || last.Reason != ReasonRemembered {
			t.Fatalf("admitted %d (want 3), last %+v (want remembered ip)", n, last)
		}
	})
}

// TestFallbackConfigChangeClamps: a reload while degraded reconfigures the local buckets in
// place: tokens clamped to the new burst, never refilled.
func TestFallbackConfigChangeClamps(t *testing.T) {
	l := newTestLimiter(t, testsvc.Redis(t), newFakeClock(), Options{Healthy: func() int { return 1 }})
	l.degrade("test", nil)
	take := func(lim tokenbucket.Limit, tries int) int {
		r := Request{Fallback: Fallback{Global: lim}, Activity: tokenbucket.Limit{Rate: 0.001, Burst: 1000}, ActivityID: "a"}
		n, _ := allowTimes(l, r, tries)
		return n
	}
	steps := []struct {
		give tokenbucket.Limit
		want int
	}{
		{give: tokenbucket.Limit{Rate: 0.001, Burst: 10}, want: 2},
		{give: tokenbucket.Limit{Rate: 0.001, Burst: 5}, want: 5},
		{give: tokenbucket.Limit{Rate: 0.001, Burst: 50}, want: 0},
	}
	tries := []int{2, 20, 20}
	for i, s := range steps {
		if got := take(s.give, tries[i]); got != s.want {
			t.Fatalf("step %d (%+v): admitted %d, want %d", i, s.give, got, s.want)
		}
	}
	// The activity bucket was given back every token the global rejections took.
	b, _ := l.local[dActivity].get("a")
	if got := int(b.Tokens(l.clock.Now())); got != 1000-7 {
		t.Fatalf("activity tokens %d, want %d", got, 1000-7)
	}
}

// TestDegradeUnderConcurrentLoad is the drill of docs/API.md acceptance item 9 (and the limiter degrading on Redis slowness, not on its own CPU starvation): 100 ms
// of latency with 32 callers at once. The limiter degrades within 1 s (the slow calls raise a
// suspicion, the prober confirms it in confirmRounds PINGs), then makes no Redis call on the
// request path beyond the calls already in flight.
func TestDegradeUnderConcurrentLoad(t *testing.T) {
	t.Parallel()
	proxy, rdb := proxied(t)
	l := newTestLimiter(t, rdb, nil, Options{CallTimeout: 2 * time.Second})
	runLimiter(t, l)
	fb := Fallback{RedisSlow: 20 * time.Millisecond, SlowCallsToDegrade: 20,
		ProbeEvery: 100 * time.Millisecond, Global: tokenbucket.Limit{Rate: 1e6, Burst: 1e6}}
	r := Request{IP: tokenbucket.Limit{Rate: 1e6, Burst: 1e6}, IPKey: ipKeyOf(l, "10.5.0.1"), Fallback: fb}
	_, _ = l.Allow(context.Background(), r)
	proxy.SetLatency(100 * time.Millisecond)
	const callers = 32
	before := testutil.ToFloat64(l.callsBucket)
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	for range callers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if d, _ := l.Allow(context.Background(), r); !d.Allowed {
					t.Errorf("rejected: %+v", d)
					return
				}
			}
		})
	}
	start := time.Now()
	testwait.Eventually(t, 3*time.Second, l.Degraded, "degraded")
	took := time.Since(start)
	atDegrade := testutil.ToFloat64(l.callsBucket) - before
	wg.Wait()
	total := testutil.ToFloat64(l.callsBucket) - before
	t.Logf("100 ms latency, %d callers: degraded after %v and %.0f Redis calls started, %.0f in all",
		callers, took.Round(time.Millisecond), atDegrade, total)
	if took > time.Second {
		t.Fatalf("degraded %v after the latency started, want within 1 s", took)
	}
	if bound := atDegrade + callers; total > bound {
		t.Fatalf("%.0f Redis calls on the request path, want <= %.0f (in flight at the degrade)", total, bound)
	}
	proxy.SetLatency(0)
	testwait.Eventually(t, 3*time.Second, func() bool { return !l.Degraded() }, "recovered")
}

// TestDegradeOnCluster injects latency with a client hook (a proxy cannot sit in front of a
// cluster that redirects to its nodes' own addresses).
func TestDegradeOnCluster(t *testing.T) {
	t.Parallel()
	rdb := testsvc.RedisCluster(t).(*redis.ClusterClient)
	var delay atomic.Int64
	rdb.AddHook(sleepHook(&delay))
	l := newTestLimiter(t, rdb, nil, Options{})
	runLimiter(t, l)
	r := Request{Activity: tokenbucket.Limit{Rate: 1, Burst: 1000}, ActivityID: "a", IP: tokenbucket.Limit{Rate: 100, Burst: 100},
		IPKey: ipKeyOf(l, "10.5.1.1"), Fallback: drillFallback}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatal(d)
	}
	delay.Store(int64(30 * time.Millisecond))
	for i := 0; !l.Degraded(); i++ {
		if i >= drillFallback.SlowCallsToDegrade+confirmRounds+1 {
			t.Fatalf("not degraded after %d slow calls", i)
		}
		_, _ = l.Allow(context.Background(), r)
	}
	delay.Store(0)
	testwait.Eventually(t, 3*time.Second, func() bool { return !l.Degraded() }, "recovered")
}

// TestDegradedWhileRedisDownWithoutTraffic: an operator who kills Redis sees
// seckill_rate_limiter_degraded 1 within a few seconds even when no request reaches the
// limiter (the heartbeat is a Redis call like any other), and 0 again once Redis is back.
func TestDegradedWhileRedisDownWithoutTraffic(t *testing.T) {
	t.Parallel()
	proxy, rdb := proxied(t)
	m := must(NewMetrics(prometheus.NewRegistry()))
	prefix := uniq(t)
	l := must(New(rdb, Options{}, m, slog.New(slog.DiscardHandler)))
	l.prefix, l.instancesKey = prefix, prefix+"instances"
	runLimiter(t, l)
	if got := testutil.ToFloat64(m.degraded); got != 0 {
		t.Fatalf("degraded gauge %v with Redis up", got)
	}
	if err := proxy.Disable(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, func() bool {
		return l.Degraded() && testutil.ToFloat64(m.degraded) == 1
	}, "degraded with Redis down and no traffic")

	if err := proxy.Enable(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, func() bool {
		return !l.Degraded() && testutil.ToFloat64(m.degraded) == 0
	}, "recovered once Redis is back")

}

// TestProbeEveryEditReachesTheRunningProber: a limiter degraded while fallback.probeEvery is
// an hour must not wait out that hour once an edit shortens it: the next request carrying the
// new policy re-arms the prober, which recovers within a few new periods. An over-long period
// that reaches the limiter anyway is clamped to MaxProbeEvery.
func TestProbeEveryEditReachesTheRunningProber(t *testing.T) {
	t.Parallel()
	proxy, rdb := proxied(t)
	l := newTestLimiter(t, rdb, nil, Options{})
	runLimiter(t, l)
	slow := Fallback{RedisSlow: 20 * time.Millisecond, SlowCallsToDegrade: 5,
		ProbeEvery: time.Hour, Global: tokenbucket.Limit{Rate: 1000, Burst: 1000}}
	r := Request{Global: tokenbucket.Limit{Rate: 1, Burst: 100}, IP: tokenbucket.Limit{Rate: 100, Burst: 100},
		IPKey: ipKeyOf(l, "10.3.0.2"), Fallback: slow}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("before the drill: %+v", d)
	}
	if got := l.policy().ProbeEvery; got != MaxProbeEvery {
		t.Fatalf("probeEvery of an hour is in force as %s, want it clamped to %s", got, MaxProbeEvery)
	}
	if err := proxy.Disable(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(context.Background(), r); err != nil || !l.Degraded() {
		t.Fatalf("with Redis down: %v, degraded %v", err, l.Degraded())
	}
	if err := proxy.Enable(); err != nil {
		t.Fatal(err)
	}
	// Still on the long period: no recovery for a while.
	testwait.Never(t, 500*time.Millisecond, func() bool { return !l.Degraded() }, "recovered before its probe period")
	r.Fallback.ProbeEvery = 50 * time.Millisecond
	if _, err := l.Allow(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 3*time.Second, func() bool { return !l.Degraded() }, "recovered after the edit")
}

// sleepHook delays every command by the current delay: latency injection without a proxy.
func sleepHook(delay *atomic.Int64) redishook.Hook {
	return redishook.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if d := time.Duration(delay.Load()); d > 0 {
			time.Sleep(d)
		}
		return next(ctx, cmd)
	}}
}
