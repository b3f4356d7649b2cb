package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
)

// TestOutcomeOf: an error of the admission step has the outcome of its rejection's row, or of
// its fault.
func TestOutcomeOf(t *testing.T) {
	rl := func(dim, reason string) error {
		return &admission.Rejection{Status: http.StatusTooManyRequests, Code: admission.CodeRateLimited, Dimension: dim, Reason: reason}
	}
	code := func(c string) error { return &admission.Rejection{Code: c} }
	tests := []struct {
		give error
		want string
	}{
		{code(admission.CodeDisabled), "killswitch"},
		{code(admission.CodeNotOpen), "not_open"},
		{code(admission.CodeClosed), "closed"},
		{code(admission.CodeForbidden), "blacklist"},
		{code(admission.CodeNotAdmitted), "canary"},
		{code(admission.CodeTokenRequired), "token"},
		{code(admission.CodeAlreadyPurchased), "user_limit"},
		{code(admission.CodeSoldOut), "sold_out"},
		{code(admission.CodeUnavailable), "unavailable"},
		{rl(limiter.DimGlobal, limiter.ReasonRate), "rate_global"},
		{rl(limiter.DimCampaign, limiter.ReasonFallback), "rate_campaign"},
		{rl(limiter.DimActivity, limiter.ReasonRate), "rate_activity"},
		{rl(limiter.DimChannel, limiter.ReasonRate), "rate_channel"},
		{rl(limiter.DimIP, ""), "rate_ip"},
		{rl(limiter.DimUser, ""), "rate_user"},
		{rl(limiter.DimUser, limiter.ReasonRemembered), "remembered"},
		{rl(limiter.DimIP, limiter.ReasonRemembered), "remembered"},
		{&admission.Fault{Err: errors.New("i/o timeout")}, "unavailable"},
		{&admission.Fault{Err: errors.New("i/o timeout"), IdempotencyKey: "k"}, "outcome_unknown"},
		{&admission.Fault{Err: redis.ErrPoolTimeout, IdempotencyKey: "k"}, "unavailable"},
		{code(admission.CodeRecovering), "unavailable"},
		{fmt.Errorf("wrapped: %w", code(admission.CodeSoldOut)), "sold_out"},
	}
	for _, tt := range tests {
		if o, _ := outcomeOf(tt.give); o.funnelName() != tt.want {
			t.Errorf("outcomeOf(%v) = %s, want %s", tt.give, o.funnelName(), tt.want)
		}
	}
}

func TestFunnelQuantiles(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	counts := make([]int64, nFunnelBuckets)
	if q := quantiles(counts); q.Count != 0 || q.P50Ms != nil || q.P99Ms != nil {
		t.Fatalf("empty: %+v", q)
	}
	counts[funnelBucket(0.0007)] = 60 // 1 ms bucket
	counts[funnelBucket(0.03)] = 39   // 50 ms bucket
	counts[funnelBucket(0.3)] = 1     // 500 ms bucket
	q := quantiles(counts)
	if q.Count != 100 || *q.P50Ms != *ms(1) || *q.P99Ms != *ms(50) {
		t.Fatalf("got count %d p50 %v p99 %v, want 100, 1, 50", q.Count, *q.P50Ms, *q.P99Ms)
	}
	counts[len(counts)-1] = 900 // past 5 s
	if q := quantiles(counts); q.P99Ms != nil || q.P50Ms != nil {
		t.Fatalf("past the last bound: %+v", q)
	}
}

// The writer's series are exported only by a process that runs the writer: an API-only pod
// would otherwise read "no order written since 1970" and fire the staleness alert.
func TestWriterSeriesOnlyWhereTheWriterRuns(t *testing.T) {
	for _, tt := range []struct {
		roles string
		want  bool
	}{{"api", false}, {"api,relay,writer,reconciler", true}} {
		ta := startApp(t, Options{Roles: tt.roles}, testConfig)
		raw := metricsText(t, ta)
		for _, name := range []string{"seckill_order_writer_last_success_timestamp_seconds", "seckill_order_writer_consecutive_failures"} {
			if got := strings.Contains(raw, "\n"+name+" "); got != tt.want {
				t.Errorf("roles %s: %s exported %v, want %v", tt.roles, name, got, tt.want)
			}
		}
	}
}

// An activity gone from Redis that MySQL does not know (one MySQL knows is recovering,
// generation.go, and keeps its series) is dropped from the cache and its series (the
// funnel's, the stock gauge) are deleted.
func TestFunnelSeriesGoWithTheActivity(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id, other := uniq(t, "gone"), uniq(t, "stays")
	// id is created in Redis alone (no MySQL row), other through the admin API.
	if _, _, err := ta.inv.Create(context.Background(), inventory.Activity{ID: id, Stock: 10, PerUserLimit: 1, Shards: 1,
		OpensAt: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	ta.createActivity(t, other, 10, 1, 1, time.Now().Add(-time.Second))
	for _, a := range []string{id, other} {
		if r := ta.reserve(t, a, "u-1", ""); r.status != http.StatusAccepted {
			t.Fatalf("reserve %s: %d %v", a, r.status, r.body)
		}
	}
	// seriesOf names the series labelled with the activity.
	seriesOf := func(activity string) []string {
		mfs, err := ta.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "activity" && lp.GetValue() == activity {
						names = append(names, mf.GetName())
					}
				}
			}
		}
		return names
	}
	series := func(activity string) int { return len(seriesOf(activity)) }
	if n := series(id); n < int(nOutcomes) {
		t.Fatalf("%d series of %s before, want the funnel's %d at least", n, id, nOutcomes)
	}
	// The writer handles the unit first: a late answer would count it again. MySQL has no row
	// for id, so the writer holds its reservation (order/insert.go: neither written nor
	// refused until the row exists) and says so in its error counter.
	handled := func() bool {
		mfs, err := ta.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "seckill_order_writer_retries_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if m.GetCounter().GetValue() > 0 {
					return true
				}
			}
		}
		return false
	}
	testwait.Eventually(t, 5*time.Second, handled, "the reservation of %s held by the writer (MySQL has no such activity)", id)
	if err := ta.rdb.Del(context.Background(), inventory.Meta(id)).Err(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, func() bool { return series(id) == 0 },
		"series of %s deleted (left %v)", id, testwait.Lazy(func() string { return fmt.Sprint(seriesOf(id)) }))
	if _, ok := ta.inv.Activity(id); ok {
		t.Fatalf("%s still cached", id)
	}
	if n := series(other); n < int(nOutcomes) {
		t.Fatalf("%d series of %s left, want its funnel's", n, other)
	}
}

// BenchmarkFunnelAttempt is the hot path's cost of the funnel: one attempt and its answer
// (Prometheus children resolved once, atomic deltas, the user added to the buffer of the
// distinct-user estimate), from every core at once.
func BenchmarkFunnelAttempt(b *testing.B) {
	f := newFunnel(nil, userHash64, newFunnelMetrics(prometheus.NewRegistry()), slog.Default(), time.Now)
	v := inventory.ActivityView{Activity: inventory.Activity{ID: "bench", CampaignID: "c"}}
	users := make([]string, 4096)
	for i := range users {
		users[i] = fmt.Sprintf("user-%d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			af := f.activity(&v)
			u := users[i%len(users)]
			af.attempt(f, u)
			af.answer(f, oSoldOut, u, 1, time.Millisecond)
			i++
		}
	})
}

// The funnel's series of an activity exist at 0 from its creation, before its first request,
// on the instance that created it and on one that only loaded it from Redis: rate() over a
// sale shorter than a scrape then starts from 0 instead of from its first count.
func TestFunnelSeriesAtZeroBeforeTheFirstRequest(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	id := uniq(t, "zero")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(time.Hour))
	want := []string{
		`seckill_funnel_attempts_total{activity="` + id + `"}`,
		`seckill_funnel_answers_total{activity="` + id + `",outcome="accepted"}`,
		`seckill_funnel_answers_total{activity="` + id + `",outcome="sold_out"}`,
		`seckill_funnel_reserved_units_total{activity="` + id + `"}`,
	}
	raw := metricsText(t, ta)
	for _, s := range want {
		if !strings.Contains(raw, s+" 0\n") {
			t.Errorf("no series %s at 0 before the first request", s)
		}
	}
}

// The funnel hash of an activity stays bounded however long it lives: counts by second only
// in the sale's first hour, the totals after it; its keys expire with the activity. A week of
// one request a second (a flush a second for two hours, then one a minute: each minute's
// flush stands for sixty seconds of fields when every second were kept) leaves a few
// thousand fields, where keeping every second left one per second of the week.
func TestFunnelHashBoundedOverAWeek(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	opens := time.Unix(1_800_000_000, 0)
	now := opens
	f := newFunnel(rdb, userHash64, newFunnelMetrics(prometheus.NewRegistry()), slog.Default(), func() time.Time { return now })
	f.local = true // miniredis keeps no HyperLogLog in Redis's layout: the embedded mode's way
	v := inventory.ActivityView{Activity: inventory.Activity{ID: "week", OpensAt: opens}}
	ctx := context.Background()
	flushes := 0
	for now.Before(opens.Add(7 * 24 * time.Hour)) {
		af := f.activity(&v)
		af.attempt(f, "u")
		af.answer(f, oSoldOut, "u", 0, time.Millisecond)
		if err := f.flushActivity(ctx, af); err != nil {
			t.Fatal(err)
		}
		flushes++
		if now.Before(opens.Add(2 * time.Hour)) {
			now = now.Add(time.Second)
		} else {
			now = now.Add(time.Minute)
		}
	}
	n, err := rdb.HLen(ctx, inventory.Funnel("week")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n > int64(2*3660+2*nFunnelBuckets+int(nOutcomes)+10) {
		t.Fatalf("%d fields in the funnel hash after %d flushes over a week, want it bounded by the first hour's seconds", n, flushes)
	}
	attempts, err := rdb.HGet(ctx, inventory.Funnel("week"), "attempts").Int()
	if err != nil || attempts != flushes {
		t.Fatalf("attempts %d %v, want every one of the %d counted", attempts, err, flushes)
	}
	if ttl := mr.TTL(inventory.Funnel("week")); ttl <= 0 {
		t.Fatalf("the funnel hash has no expiry (TTL %v)", ttl)
	}
}

// metricsText is the instance's /metrics page.
func metricsText(t *testing.T, ta *testApp) string {
	t.Helper()
	_, text := ta.page(t, "/metrics", "")
	return text
}
