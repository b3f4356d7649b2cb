//go:build integration

package limiter

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// TestExpiredLeaseGoesBack: tokens leased but not spent within LeaseTTL return to the Redis
// bucket at housekeeping, so an idle instance does not sit on the budget.
func TestExpiredLeaseGoesBack(t *testing.T) {
	rdb := testsvc.Redis(t)
	clk := newFakeClock()
	l := newTestLimiter(t, rdb, clk, Options{LeaseWindow: 10000 * time.Second})
	r := Request{Activity: tokenbucket.Limit{Rate: 0.001, Burst: 100}, ActivityID: "a"} // lease of 10
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatal(d)
	}
	p, _ := l.pools[dActivity].get("a")
	if got := p.available(); got != 9 {
		t.Fatalf("held %d, want 9", got)
	}
	l.housekeep(context.Background()) // not expired yet: kept
	if got := p.available(); got != 9 {
		t.Fatalf("held %d before expiry, want 9", got)
	}
	clk.Advance(l.opts.LeaseTTL)
	l.housekeep(context.Background())
	if got := p.available(); got != 0 {
		t.Fatalf("held %d after expiry, want 0", got)
	}
	if got := remaining(t, l, dActivity, "a"); got != 99 {
		t.Fatalf("budget %d after the hand-back, want 99", got)
	}
	if got := testutil.ToFloat64(l.returned); got != 9 {
		t.Fatalf("returned tokens %v, want 9", got)
	}
}

func TestMetricsCountDecisions(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := must(NewMetrics(reg))
	rdb := testsvc.Redis(t)
	clk := newFakeClock()
	prefix := uniq(t)
	cleanupKeys(t, rdb, prefix)
	l := must(New(rdb, Options{Clock: clk}, m, slog.New(slog.DiscardHandler)))
	l.prefix, l.instancesKey = prefix, prefix+"instances"
	l.scriptNow = func() int64 { return clk.Now().UnixMicro() }
	r := Request{Activity: tokenbucket.Limit{Rate: 0.001, Burst: 2}, ActivityID: "a", UserKey: "u"}
	for range 3 {
		_, _ = l.Allow(context.Background(), r)
	}
	l.Remember("", "u", "", time.Second)
	_, _ = l.Allow(context.Background(), r)
	for _, c := range []struct {
		give prometheus.Collector
		want float64
	}{
		{m.pass.WithLabelValues(DimActivity), 2},
		{m.reject.WithLabelValues(DimActivity, ReasonRate), 1},
		{m.reject.WithLabelValues(DimUser, ReasonRemembered), 1},
		{m.redisCalls.WithLabelValues("lease"), 3}, // a lease of 1 token per call at this rate
		{m.degraded, 0},
	} {
		if got := testutil.ToFloat64(c.give); got != c.want {
			t.Errorf("%v = %v, want %v", c.give, got, c.want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "seckill_rate_limiter_retry_after_seconds"); err != nil || n != 1 {
		t.Errorf("retry-after histogram: %d series, %v", n, err)
	}
}

func TestBurstZeroActsAsOne(t *testing.T) {
	rdb := testsvc.Redis(t)
	l := newTestLimiter(t, rdb, newFakeClock(), Options{})
	r := Request{Activity: tokenbucket.Limit{Rate: 0.001}, ActivityID: "a", IP: tokenbucket.Limit{Rate: 0.001}, IPKey: ipKeyOf(l, "10.6.0.1")}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("burst 0 never admits: %+v", d)
	}
	if d, _ := l.Allow(context.Background(), r); d.Allowed {
		t.Fatal("burst 0 admitted twice")
	}
}
