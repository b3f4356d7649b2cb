//go:build integration

package limiter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// saturationFor is how long TestNoDegradeUnderCPUSaturation saturates the CPU: 60 s, or the Go
// duration in SECKILL_LIMITER_SATURATION (e.g. "15s" in a full test run).
func saturationFor(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("SECKILL_LIMITER_SATURATION")
	if s == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 5*time.Minute {
		t.Fatalf("SECKILL_LIMITER_SATURATION=%q: want a duration in (0, 5m]", s)
	}
	return d
}

// saturate runs the process on one P (GOMAXPROCS 1) with 4 goroutines spinning on it until the
// returned stop is called, so every other goroutine of the process waits for the CPU: the
// process is starved while the machine keeps a core for Redis, as when the service's own
// machine is saturated and Redis runs elsewhere. (Spinning on every core of this 2-core machine
// would starve Redis itself, which is then really slow for every client.)
func saturate() (stop func()) {
	procs := runtime.GOMAXPROCS(1)
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			x := uint64(1)
			for !done.Load() {
				for range 10_000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		})
	}
	return func() {
		done.Store(true)
		wg.Wait()
		runtime.GOMAXPROCS(procs)
	}
}

// TestNoDegradeUnderCPUSaturation is goal 5 of issue 12: with Redis healthy and the process's
// CPU saturated (see saturate), the Limiter must not declare Redis slow (client wall time then measures the Go
// run queue, not Redis); with 100 ms of real latency added under the same saturation it must
// still degrade (within 3 s here, where the starved process needs time to gather 20 slow calls;
// TestDegradeUnderConcurrentLoad asserts 1 s without saturation). 32 callers take a per-IP token (one Redis call each, observed) and
// report an extra timed Redis call through ObserveRedis, as the app does with its reservation
// script, at the default policy (20 ms, 20 net slow calls).
func TestNoDegradeUnderCPUSaturation(t *testing.T) {
	run := saturationFor(t)
	fb := Fallback{Global: tokenbucket.Limit{Rate: 1e6, Burst: 1e6}} // RedisSlow 20 ms, 20 slow calls, probe 1 s
	// The IP key is l's: load sets it.
	r := Request{IP: tokenbucket.Limit{Rate: 1e9, Burst: 1e9}, Fallback: fb}
	// load runs 32 callers against l until the returned stop is called.
	load := func(l *Limiter, rdb redis.UniversalClient) (stop func()) {
		r := r
		r.IPKey = ipKeyOf(l, "10.6.0.1")
		var done atomic.Bool
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for !done.Load() {
					if d, err := l.Allow(context.Background(), r); err != nil || !d.Allowed {
						t.Errorf("rejected: %+v, %v", d, err)
						return
					}
					start := time.Now()
					err := rdb.Get(context.Background(), "sk:saturation-test-absent").Err()
					l.ObserveRedis(time.Since(start), err)
				}
			})
		}
		return func() { done.Store(true); wg.Wait() }
	}

	// Healthy Redis, reached directly (an in-process proxy would itself be starved).
	rdb := testsvc.Redis(t)
	l := newTestLimiter(t, rdb, nil, Options{CallTimeout: 2 * time.Second})
	runLimiter(t, l)
	if d, _ := l.Allow(context.Background(), r); !d.Allowed || l.Degraded() {
		t.Fatalf("before saturation: %+v, degraded %v", d, l.Degraded())
	}
	stopCPU := saturate()
	stopLoad := load(l, rdb)
	deadline := time.Now().Add(run)
	for time.Now().Before(deadline) && !t.Failed() && !l.Degraded() {
		time.Sleep(100 * time.Millisecond)
	}
	stopLoad()
	stopCPU()
	slow := testutil.ToFloat64(l.slowC)
	refuted := testutil.ToFloat64(l.checkC[checkRefuted])
	degrades := testutil.ToFloat64(l.toDegraded)
	t.Logf("%v saturated: %.0f client-side slow calls, %.0f suspicions refuted, %.0f degrade events",
		run, slow, refuted, degrades)
	if degrades != 0 {
		t.Fatalf("degraded %.0f times against a healthy Redis under CPU saturation", degrades)
	}
	if refuted == 0 {
		t.Fatal("no suspicion of slowness was raised: the CPU was not saturated enough to test anything")
	}

	// The same saturation with 100 ms added between the Limiter and Redis by a fault proxy in a
	// child process (one in this process would be starved too and add far more).
	paddr, slowDown := childProxy(t, 100*time.Millisecond)
	prdb := redis.NewClient(&redis.Options{Addr: paddr, DisableIdentity: true, PoolSize: 16,
		MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = prdb.Close() })
	pl := newTestLimiter(t, prdb, nil, Options{CallTimeout: 2 * time.Second})
	runLimiter(t, pl)
	if d, _ := pl.Allow(context.Background(), r); !d.Allowed || pl.Degraded() {
		t.Fatalf("before the latency: %+v, degraded %v", d, pl.Degraded())
	}
	stopCPU = saturate()
	defer stopCPU()
	start := time.Now()
	slowDown()
	stopLoad = load(pl, prdb)
	defer stopLoad()
	testwait.Eventually(t, 3*time.Second, pl.Degraded, "degraded")
	took := time.Since(start)
	t.Logf("100 ms of latency under saturation: degraded after %v", took.Round(time.Millisecond))
}

// childProxy runs a faultproxy in front of the test Redis in a child process (this test binary,
// running TestFaultProxyChild) and returns its address and a func that turns the latency on.
func childProxy(t *testing.T, latency time.Duration) (string, func()) {
	t.Helper()
	in, out := testsvc.Child(t, []string{"SECKILL_FAULTPROXY_CHILD=" + latency.String()}, os.Stderr,
		"-test.run=^TestFaultProxyChild$", "-test.count=1") // the child exits on EOF of its stdin
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "faultproxy "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return addr, func() {
				if _, err := io.WriteString(in, "on\n"); err != nil {
					t.Errorf("child proxy: %v", err)
				}
			}
		}
	}
	t.Fatalf("child proxy printed no address: %v", sc.Err())
	return "", nil
}

// TestFaultProxyChild is the child process of childProxy; run on its own it does nothing.
func TestFaultProxyChild(t *testing.T) {
	lat := os.Getenv("SECKILL_FAULTPROXY_CHILD")
	if lat == "" {
		return
	}
	d, err := time.ParseDuration(lat)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New("127.0.0.1:0", testsvc.RedisAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fmt.Printf("faultproxy %s\n", p.Addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "on" {
			p.SetLatency(d)
		}
	}
}
