//go:build integration

package waitroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/testsvc"
)

// BenchmarkETAError measures the ETA's error on the real Redis (docs/BENCHMARKS.md, "Waiting
// room"): 3,000 users join a shuffled line with an inlet of 200/s, 5 % of them never poll
// again, the others poll two instances (Rooms) in turn as the answers tell them. For each
// polling user, the first ETA given once 5 s of outflow were measured is compared with when
// the inlet actually admitted the place (q:adm, Redis ms): error = |predicted - actual| /
// actual wait. Reported: p50 and p90 of that error from ground truth, and the share of the
// service's own seckill_waitroom_eta_error_ratio observations at or below 0.25.
//
//	go test -tags integration -run '^$' -bench ETAError -benchtime 1x ./app/waitroom/
func BenchmarkETAError(b *testing.B) {
	for i := 0; i < b.N; i++ {
		etaRun(b)
	}
}

func etaRun(b *testing.B) {
	const (
		users     = 3000
		abandoned = 150
		rate      = 200
		heartbeat = 4 * time.Second
	)
	rdb := testsvc.Redis(b)
	id := fmt.Sprintf("wr-eta-%d", time.Now().UnixNano()%1_000_000_000)
	opensAt := time.Now().Add(heartbeat + 2*time.Second)
	w := config.DefaultWaitingRoom()
	w.Enabled, w.Rate, w.Heartbeat, w.PassTTL = true, rate, config.Duration(heartbeat), config.Duration(time.Minute)
	cfg := &config.Config{Activities: map[string]config.Activity{id: {WaitingRoom: &w}}}
	fs := &fakeStock{}
	fs.v.ID, fs.v.OpensAt, fs.v.Remaining = id, opensAt, 1_000_000 // the stock never bounds the inlet
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	var rooms []*Room
	for i := 0; i < 2; i++ {
		r, err := New(rdb, fakeSigner{}, fs, func() *config.Config { return cfg }, Options{InstanceID: fmt.Sprintf("%s-i%d", id, i)}, m, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		rooms = append(rooms, r)
		runs.Add(1)
		go func() { defer runs.Done(); _ = r.Run(ctx) }()
	}
	defer func() { cancel(); runs.Wait(); etaCleanup(rdb, id) }()

	tickets := make([]uint64, users)
	for i := range tickets {
		tk, err := rooms[i%2].Join(ctx, id, "u"+strconv.Itoa(i), true)
		if err != nil {
			b.Fatal(err)
		}
		tickets[i] = tk.N
	}
	b.ResetTimer()
	type prediction struct {
		made, at time.Time
		set      bool
	}
	preds := make([]prediction, users)
	var wg sync.WaitGroup
	for i := abandoned; i < users; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := "u" + strconv.Itoa(i)
			for k := 0; ctx.Err() == nil; k++ {
				now := time.Now()
				st, err := rooms[k%2].Status(ctx, id, user, tickets[i], w, opensAt, false, now)
				if errors.Is(err, ErrUnknownLine) {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				if err != nil {
					b.Error(err)
					return
				}
				switch st.State {
				case StateAdmitted, StateSkipped, StateExpired, StateUsed:
					return
				}
				if !preds[i].set && st.ETA >= time.Second && now.Sub(opensAt) >= 5*time.Second+200*time.Millisecond {
					preds[i] = prediction{made: now, at: now.Add(st.ETA), set: true}
				}
				time.Sleep(st.PollAfter)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()

	k := keysOf(id)
	adm, err1 := rdb.HGetAll(context.Background(), k.adm).Result()
	st, err3 := rdb.HGetAll(context.Background(), k.st).Result()
	if err := errors.Join(err1, err3); err != nil {
		b.Fatal(err)
	}
	pre := atoi(st["pre"])
	placeOf := map[uint64]string{} // the order every instance derives from the seed
	for i, n := range Shuffle(atoi(st["seed"]), pre) {
		placeOf[n] = strconv.Itoa(i + 1)
	}
	var errs []float64
	for i := abandoned; i < users; i++ {
		p := preds[i]
		if !p.set {
			continue
		}
		e := strconv.FormatUint(tickets[i], 10)
		if tickets[i] <= pre {
			e = placeOf[tickets[i]]
		}
		ms, ok := adm[e]
		if !ok {
			continue // skipped: no admission to compare with
		}
		at := time.UnixMilli(int64(atoi(ms)))
		actual := at.Sub(p.made)
		if actual <= 0 {
			continue
		}
		errs = append(errs, math.Abs(float64(p.at.Sub(at)))/float64(actual))
	}
	if len(errs) < 100 {
		b.Fatalf("%d predictions made 5 s into the outflow: too few to measure", len(errs))
	}
	slices.Sort(errs)
	q := func(f float64) float64 { return errs[int(f*float64(len(errs)-1))] }
	within := histogramShareAtMost(b, reg, 0.25)
	b.ReportMetric(float64(len(errs)), "predictions")
	b.ReportMetric(q(0.5), "p50-error")
	b.ReportMetric(q(0.9), "p90-error")
	b.ReportMetric(within, "metric-share<=0.25")
	b.Logf("ETA error over %d predictions (ground truth): p50 %.3f p90 %.3f max %.3f; metric: %.3f of its observations <= 0.25; admitted %s skipped %s",
		len(errs), q(0.5), q(0.9), errs[len(errs)-1], within, st["admitted"], st["skipped"])
}

// histogramShareAtMost is the share of seckill_waitroom_eta_error_ratio's observations in
// buckets up to le.
func histogramShareAtMost(b *testing.B, reg *prometheus.Registry, le float64) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "seckill_waitroom_eta_error_ratio" {
			continue
		}
		var total, at uint64
		for _, mt := range mf.GetMetric() {
			h := mt.GetHistogram()
			total += h.GetSampleCount()
			for _, bk := range h.GetBucket() {
				if bk.GetUpperBound() == le {
					at += bk.GetCumulativeCount()
				}
			}
		}
		if total == 0 {
			return 0
		}
		return float64(at) / float64(total)
	}
	return 0
}

func atoi(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// etaCleanup deletes the line's keys by name.
func etaCleanup(rdb redis.UniversalClient, id string) {
	k := keysOf(id)
	rdb.Del(context.Background(), k.users, k.st, k.hb, k.adm, k.live, k.used, k.steps, k.skip, k.lease)
}
