//go:build integration

package limiter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// remaining is what is left of a leased budget: the tokens this Limiter holds plus the
// Redis bucket (at the fake clock, which does not refill unless advanced).
func remaining(t *testing.T, l *Limiter, d int, name string) int {
	t.Helper()
	held := 0
	if p, ok := l.pools[d].get(name); ok {
		held = p.available()
	}
	s, err := l.rdb.Get(context.Background(), l.budgetKey(d, name)).Result()
	if errors.Is(err, redis.Nil) {
		return -1 // never touched
	}
	if err != nil {
		t.Fatal(err)
	}
	tokens, _, _ := strings.Cut(s, "|")
	v, err := strconv.ParseFloat(tokens, 64)
	if err != nil {
		t.Fatalf("budget bucket %q: %v", s, err)
	}
	return held + int(v)
}

func TestAllowAllOrNothing(t *testing.T) {
	rdb := testsvc.Redis(t)
	slow := func(b int) tokenbucket.Limit { return tokenbucket.Limit{Rate: 0.0001, Burst: b} } // no refill during the test
	tests := []struct {
		name         string
		give         Request
		tries        int
		wantAllowed  int
		wantDim      string
		checkDim     int
		checkName    string
		wantRemained int
	}{
		{
			name:  "ip rejection consumes no activity tokens",
			give:  Request{Activity: slow(100), ActivityID: "act", IP: slow(3), IPKey: "10.0.0.1"}, // the limit key: the test takes l's Redis key of it
			tries: 20, wantAllowed: 3, wantDim: DimIP,
			checkDim: dActivity, checkName: "act", wantRemained: 97,
		},
		{
			name:  "campaign rejection consumes no global tokens",
			give:  Request{Global: slow(100), Campaign: slow(2), CampaignID: "c1"},
			tries: 10, wantAllowed: 2, wantDim: DimCampaign,
			checkDim: dGlobal, wantRemained: 98,
		},
		{
			name:  "channel rejection consumes no activity tokens",
			give:  Request{Activity: slow(50), ActivityID: "act", Channel: slow(5), ChannelName: "web"},
			tries: 10, wantAllowed: 5, wantDim: DimChannel,
			checkDim: dActivity, checkName: "act", wantRemained: 45,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := newTestLimiter(t, rdb, clk, Options{})
			allowed := 0
			var last Decision
			r := tt.give
			if r.IPKey != "" {
				r.IPKey = ipKeyOf(l, r.IPKey)
			}
			for range tt.tries {
				d, err := l.Allow(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					allowed++
					continue
				}
				last = d
			}
			if allowed != tt.wantAllowed {
				t.Fatalf("allowed %d, want %d", allowed, tt.wantAllowed)
			}
			if last.Dimension != tt.wantDim || last.RetryAfter < time.Second {
				t.Fatalf("last rejection %+v, want dimension %s with a long retry-after", last, tt.wantDim)
			}
			if got := remaining(t, l, tt.checkDim, tt.checkName); got != tt.wantRemained {
				t.Fatalf("remaining %s budget %d, want %d", dimNames[tt.checkDim], got, tt.wantRemained)
			}
		})
	}
}

func TestRefundGivesBackEverything(t *testing.T) {
	rdb := testsvc.Redis(t)
	clk := newFakeClock()
	l := newTestLimiter(t, rdb, clk, Options{})
	r := Request{Activity: tokenbucket.Limit{Rate: 0.0001, Burst: 10}, ActivityID: "act",
		IP: tokenbucket.Limit{Rate: 0.0001, Burst: 1}, IPKey: ipKeyOf(l, "10.0.0.2")}
	d, _ := l.Allow(context.Background(), r)
	if !d.Allowed {
		t.Fatalf("first request rejected: %+v", d)
	}
	if got := remaining(t, l, dActivity, "act"); got != 9 {
		t.Fatalf("remaining %d, want 9", got)
	}
	l.Refund(d)
	l.Refund(Decision{}) // a rejected decision refunds nothing
	if got := remaining(t, l, dActivity, "act"); got != 10 {
		t.Fatalf("remaining after refund %d, want 10", got)
	}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("the refunded IP token is not back: %+v", d)
	}
}

// countedLimiter is a test Limiter on a fake clock, over a Redis client of its own whose
// commands calls counts.
func countedLimiter(t *testing.T) (l *Limiter, clk *fakeClock, calls *redishook.Counter) {
	t.Helper()
	rdb := testsvc.Redis(t).(*redis.Client)
	calls = &redishook.Counter{}
	rdb.AddHook(calls)
	clk = newFakeClock()
	return newTestLimiter(t, rdb, clk, Options{}), clk, calls
}

func TestRememberedCostsNoRedisCall(t *testing.T) {
	l, clk, calls := countedLimiter(t)
	r := Request{Global: tokenbucket.Limit{Rate: 1000, Burst: 1000}, IP: tokenbucket.Limit{Rate: 1, Burst: 2},
		IPKey: ipKeyOf(l, "10.1.1.1"), UserKey: "00000000000000aa"}

	l.Remember("", r.UserKey, "", 2*time.Second)
	before := calls.Load()
	for range 1000 {
		d, _ := l.Allow(context.Background(), r)
		if d.Allowed || d.Dimension != DimUser || d.Reason != ReasonRemembered {
			t.Fatalf("remembered user: %+v", d)
		}
		if d.RetryAfter != 2*time.Second {
			t.Fatalf("retry-after %v, want 2s", d.RetryAfter)
		}
	}
	if n := calls.Load() - before; n != 0 {
		t.Fatalf("remembered user cost %d Redis calls, want 0", n)
	}

	// Past the Retry-After the user is decided by Redis again; the IP bucket of 2 rejects the
	// third request, and then the IP is remembered: no more calls.
	clk.Advance(2 * time.Second)
	for i := range 2 {
		if d, _ := l.Allow(context.Background(), r); !d.Allowed {
			t.Fatalf("request %d after the retry-after: %+v", i, d)
		}
	}
	d, _ := l.Allow(context.Background(), r)
	if d.Allowed || d.Dimension != DimIP || d.Reason != ReasonRate {
		t.Fatalf("third request: %+v, want an ip rate rejection", d)
	}
	before = calls.Load()
	for range 500 {
		d2, _ := l.Allow(context.Background(), r)
		if d2.Allowed || d2.Reason != ReasonRemembered || d2.Dimension != DimIP {
			t.Fatalf("remembered ip: %+v", d2)
		}
	}
	if n := calls.Load() - before; n != 0 {
		t.Fatalf("remembered ip cost %d Redis calls, want 0", n)
	}
	clk.Advance(d.RetryAfter)
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("after the ip's retry-after: %+v", d)
	}
}

func TestCanceledRequestIsRejected(t *testing.T) {
	rdb := testsvc.Redis(t)
	l := newTestLimiter(t, rdb, newFakeClock(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := l.Allow(ctx, Request{Global: tokenbucket.Limit{Rate: 10, Burst: 10}})
	if d.Allowed || d.Reason != ReasonCanceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %+v, %v; want a canceled rejection", d, err)
	}
}

// TestLeaseCostsFewRedisCalls: the leased budgets cost far less than one call per request.
func TestLeaseCostsFewRedisCalls(t *testing.T) {
	l, clk, calls := countedLimiter(t)
	r := Request{Global: tokenbucket.Limit{Rate: 50000, Burst: 100000}, Campaign: tokenbucket.Limit{Rate: 30000, Burst: 60000},
		CampaignID: "c", Activity: tokenbucket.Limit{Rate: 20000, Burst: 40000}, ActivityID: "a",
		Channel: tokenbucket.Limit{Rate: 20000, Burst: 40000}, ChannelName: "web"}
	_, _ = l.Allow(context.Background(), r) // loads the script
	before := calls.Load()
	const n = 10000
	for i := range n {
		if i%100 == 0 {
			clk.Advance(10 * time.Millisecond) // 10k requests over 1 s
		}
		if d, _ := l.Allow(context.Background(), r); !d.Allowed {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	perReq := float64(calls.Load()-before) / n
	t.Logf("4 leased dimensions: %.4f Redis calls per request", perReq)
	if perReq > 0.05 {
		t.Fatalf("%.4f Redis calls per request, want < 0.05", perReq)
	}
}

func TestConfigChangeClampsLeasedBudget(t *testing.T) {
	rdb := testsvc.Redis(t)
	clk := newFakeClock()
	l := newTestLimiter(t, rdb, clk, Options{})
	take := func(lim tokenbucket.Limit, tries int) int {
		got, _ := allowTimes(l, Request{Activity: lim, ActivityID: "a"}, tries)
		return got
	}
	if got := take(tokenbucket.Limit{Rate: 1000, Burst: 100}, 2); got != 2 {
		t.Fatalf("took %d, want 2", got)
	}
	// 98 left (48 leased here, 50 in Redis); a shrink to 20 leaves exactly 20.
	if got := take(tokenbucket.Limit{Rate: 1000, Burst: 20}, 100); got != 20 {
		t.Fatalf("after shrinking to 20: admitted %d, want 20", got)
	}
	// Growing never refills.
	if got := take(tokenbucket.Limit{Rate: 1000, Burst: 500}, 100); got != 0 {
		t.Fatalf("after growing: admitted %d, want 0", got)
	}
	clk.Advance(10 * time.Millisecond)
	if got := take(tokenbucket.Limit{Rate: 1000, Burst: 500}, 100); got != 10 {
		t.Fatalf("10ms later at 1000/s: admitted %d, want 10", got)
	}
}

func TestLeaseRejectionRetryAfterIsRefillTime(t *testing.T) {
	rdb := testsvc.Redis(t)
	clk := newFakeClock()
	l := newTestLimiter(t, rdb, clk, Options{})
	r := Request{Activity: tokenbucket.Limit{Rate: 4, Burst: 2}, ActivityID: "a"}
	for range 2 {
		if d, _ := l.Allow(context.Background(), r); !d.Allowed {
			t.Fatal("burst rejected")
		}
	}
	d, _ := l.Allow(context.Background(), r)
	if d.Allowed || d.Dimension != DimActivity || d.RetryAfter != 250*time.Millisecond {
		t.Fatalf("got %+v, want activity rejection with retry-after 250ms", d)
	}
	clk.Advance(250 * time.Millisecond)
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("at the retry-after: %+v", d)
	}
}

func TestLeasedBudgetOnCluster(t *testing.T) {
	rdb := testsvc.RedisCluster(t)
	clk := newFakeClock()
	l := newTestLimiter(t, rdb, clk, Options{})
	allowed := 0
	for i := range 40 {
		r := Request{Global: tokenbucket.Limit{Rate: 1, Burst: 30}, Activity: tokenbucket.Limit{Rate: 1, Burst: 25}, ActivityID: "a",
			IP: tokenbucket.Limit{Rate: 1, Burst: 1}, IPKey: ipKeyOf(l, "10.9.0."+strconv.Itoa(i))}
		if d, _ := l.Allow(context.Background(), r); d.Allowed {
			allowed++
		}
	}
	if allowed != 25 {
		t.Fatalf("allowed %d, want 25", allowed)
	}
}

// TestLeasingErrorOfGlobalRate: three Limiters share one Redis and one global budget, each
// hammered by 16 goroutines for 2 s on the real clock. Admissions must stay within
// rate*t + burst and not fall far below it.
func TestLeasingErrorOfGlobalRate(t *testing.T) {
	rdb := testsvc.Redis(t)
	const (
		rate     = 2000.0
		burst    = 200
		duration = 2 * time.Second
		slot     = 100 * time.Millisecond
	)
	prefix := uniq(t)
	cleanupKeys(t, rdb, prefix)
	var ls []*Limiter
	for i := range 3 {
		l := newTestLimiterPrefix(t, rdb, nil, Options{InstanceID: fmt.Sprint("i", i)}, prefix)
		l.healthy.Store(3)
		ls = append(ls, l)
	}
	r := Request{Global: tokenbucket.Limit{Rate: rate, Burst: burst}}
	var admitted, requests atomic.Int64
	var slots [int(duration/slot) + 2]atomic.Int64 // admissions per 100 ms
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(duration)
	for _, l := range ls {
		for range 16 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					requests.Add(1)
					d, err := l.Allow(context.Background(), r)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						admitted.Add(1)
						slots[time.Since(start)/slot].Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	ceiling := rate*elapsed + burst
	leaseCalls := 0.0
	for _, l := range ls {
		leaseCalls += testutil.ToFloat64(l.callsLease)
	}
	got := float64(admitted.Load())
	t.Logf("leasing: %d requests, %d admitted in %.3fs against rate %.0f burst %d: ceiling %.0f, "+
		"error %+.2f%% of the ceiling; %.0f lease calls (%.4f per request, %.3f per admission)",
		requests.Load(), admitted.Load(), elapsed, rate, burst, ceiling, (got-ceiling)/ceiling*100,
		leaseCalls, leaseCalls/float64(requests.Load()), leaseCalls/got)
	// After the first slot (which spends the burst), each 100 ms should admit rate*0.1.
	lo, hi := int64(1<<62), int64(0)
	for i := 1; i < int(duration/slot)-1; i++ {
		lo, hi = min(lo, slots[i].Load()), max(hi, slots[i].Load())
	}
	t.Logf("leasing: per 100 ms after the burst: min %d, max %d, ideal %.0f", lo, hi, rate*slot.Seconds())
	// Leased tokens are spent at most LeaseTTL after the bucket released them.
	if bound := rate*(slot+ls[0].opts.LeaseTTL).Seconds() + burst; float64(hi) > bound {
		t.Fatalf("a 100 ms window admitted %d, over rate*(window+leaseTTL)+burst = %.0f", hi, bound)
	}
	if got > ceiling {
		t.Fatalf("admitted %.0f, over rate*t+burst = %.0f", got, ceiling)
	}
	if floor := 0.9 * (rate*(elapsed-0.1) + burst); got < floor {
		t.Fatalf("admitted %.0f, under 90%% of the budget (%.0f)", got, floor)
	}
}

// TestRememberedRefusalsHoldForOneVersion: a refusal remembered under one configuration
// version is forgotten by the first request of another, and a refusal decided under a
// version older than the latest seen (a request in flight across the swap) is not remembered.
func TestRememberedRefusalsHoldForOneVersion(t *testing.T) {
	rdb := testsvc.Redis(t).(*redis.Client)
	l := newTestLimiter(t, rdb, newFakeClock(), Options{})
	r := Request{Global: tokenbucket.Limit{Rate: 1000, Burst: 1000}, IPKey: ipKeyOf(l, "10.1.1.9"), UserKey: "00000000000000ab", Version: "v1"}
	if d, _ := l.Allow(context.Background(), r); !d.Allowed || d.Version != "v1" {
		t.Fatalf("first: %+v", d)
	}
	l.Remember("v1", r.UserKey, r.IPKey, time.Hour)
	if d, _ := l.Allow(context.Background(), r); d.Allowed || d.Reason != ReasonRemembered {
		t.Fatalf("remembered under v1: %+v", d)
	}
	r.Version = "v2"
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("the first request of v2 is still refused from memory: %+v", d)
	}
	l.Remember("v1", r.UserKey, r.IPKey, time.Hour) // decided under v1, answered after v2
	if d, _ := l.Allow(context.Background(), r); !d.Allowed {
		t.Fatalf("a refusal of v1 was remembered after v2: %+v", d)
	}
	l.Remember("v2", r.UserKey, "", time.Hour)
	if d, _ := l.Allow(context.Background(), r); d.Allowed || d.Dimension != DimUser {
		t.Fatalf("a refusal of v2 is not remembered: %+v", d)
	}
}
