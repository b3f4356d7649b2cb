package limiter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/tokenbucket"
)

// suiteBucket is what the shared suite drives: one take of one token at the clock's time.
type suiteBucket interface {
	take(key string, lim tokenbucket.Limit) (bool, time.Duration, error)
}

// bucketKind says which cases of the suite apply: a sliding window frees its whole budget at
// once when the window passes, a token bucket refills gradually and keeps its tokens when the
// limit grows.
type bucketKind struct {
	gradual bool
}

// runBucketSuite runs the same cases against every limiter implementation: the Redis token
// bucket, the Redis sliding window and the local fallback bucket.
func runBucketSuite(t *testing.T, kind bucketKind, newBucket func(t *testing.T, clk *fakeClock) suiteBucket) {
	type step struct {
		advance time.Duration
		key     string
		lim     tokenbucket.Limit
		tries   int
		want    int // admitted of tries
	}
	r10b5 := tokenbucket.Limit{Rate: 10, Burst: 5}
	tests := []struct {
		name        string
		gradualOnly bool
		windowOnly  bool
		give        []step
	}{
		{name: "burst then reject", give: []step{{key: "a", lim: r10b5, tries: 8, want: 5}}},
		{name: "budget back after burst/rate", give: []step{
			{key: "a", lim: r10b5, tries: 5, want: 5},
			{advance: 500 * time.Millisecond, key: "a", lim: r10b5, tries: 8, want: 5},
		}},
		{name: "window frees nothing before it passes", windowOnly: true, give: []step{
			{key: "a", lim: r10b5, tries: 5, want: 5},
			{advance: 499 * time.Millisecond, key: "a", lim: r10b5, tries: 1, want: 0},
			{advance: time.Millisecond, key: "a", lim: r10b5, tries: 8, want: 5},
		}},
		{name: "refills one token per 1/rate", gradualOnly: true, give: []step{
			{key: "a", lim: r10b5, tries: 5, want: 5},
			{advance: 100 * time.Millisecond, key: "a", lim: r10b5, tries: 3, want: 1},
			{advance: 250 * time.Millisecond, key: "a", lim: r10b5, tries: 3, want: 2},
		}},
		{name: "rate 0 is off", give: []step{{key: "a", lim: tokenbucket.Limit{}, tries: 50, want: 50}}},
		{name: "keys are independent", give: []step{
			{key: "a", lim: r10b5, tries: 6, want: 5},
			{key: "b", lim: r10b5, tries: 6, want: 5},
		}},
		{name: "shrinking clamps a full bucket", give: []step{
			{key: "a", lim: tokenbucket.Limit{Rate: 20, Burst: 10}, tries: 0, want: 0},
			{key: "a", lim: tokenbucket.Limit{Rate: 20, Burst: 3}, tries: 10, want: 3},
		}},
		{name: "shrinking clamps a partly used bucket", gradualOnly: true, give: []step{
			{key: "a", lim: tokenbucket.Limit{Rate: 20, Burst: 10}, tries: 2, want: 2},
			{key: "a", lim: tokenbucket.Limit{Rate: 20, Burst: 5}, tries: 10, want: 5},
		}},
		{name: "growing does not refill", gradualOnly: true, give: []step{
			{key: "a", lim: tokenbucket.Limit{Rate: 10, Burst: 3}, tries: 5, want: 3},
			{key: "a", lim: tokenbucket.Limit{Rate: 10, Burst: 100}, tries: 5, want: 0},
			{advance: 100 * time.Millisecond, key: "a", lim: tokenbucket.Limit{Rate: 10, Burst: 100}, tries: 5, want: 1},
		}},
	}
	for _, tt := range tests {
		if tt.gradualOnly && !kind.gradual || tt.windowOnly && kind.gradual {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			b := newBucket(t, clk)
			for i, s := range tt.give {
				clk.Advance(s.advance)
				got := 0
				for range s.tries {
					ok, retry, err := b.take(s.key, s.lim)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if ok {
						got++
					} else if retry < time.Millisecond {
						t.Fatalf("step %d: rejected with retry-after %v, want >= 1ms", i, retry)
					}
				}
				if got != s.want {
					t.Fatalf("step %d: admitted %d of %d, want %d", i, got, s.tries, s.want)
				}
			}
		})
	}

	t.Run("retry-after is honest", func(t *testing.T) {
		for _, lim := range []tokenbucket.Limit{{Rate: 10, Burst: 5}, {Rate: 3, Burst: 1}, {Rate: 1000, Burst: 20}} {
			clk := newFakeClock()
			b := newBucket(t, clk)
			for {
				ok, _, err := b.take("a", lim)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
			}
			_, retry, _ := b.take("a", lim)
			if retry > time.Millisecond {
				clk.Advance(retry - time.Millisecond)
				if ok, _, _ := b.take("a", lim); ok {
					t.Fatalf("%+v: admitted 1ms before its retry-after %v", lim, retry)
				}
				clk.Advance(time.Millisecond)
			} else {
				clk.Advance(retry)
			}
			if ok, _, _ := b.take("a", lim); !ok {
				t.Fatalf("%+v: rejected at its retry-after %v", lim, retry)
			}
		}
	})

	t.Run("concurrent takers get exactly the burst", func(t *testing.T) {
		clk := newFakeClock()
		b := newBucket(t, clk)
		lim := tokenbucket.Limit{Rate: 1, Burst: 50}
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				for range 5 {
					ok, _, err := b.take("hot", lim)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						admitted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if got := admitted.Load(); got != 50 {
			t.Fatalf("admitted %d of 200, want exactly 50", got)
		}
	})
}

type redisBucketAdapter struct {
	b      *RedisBucket
	prefix string
}

func (a redisBucketAdapter) take(key string, lim tokenbucket.Limit) (bool, time.Duration, error) {
	return a.b.Take(context.Background(), a.prefix+"{"+key+"}", lim, 1)
}

type redisWindowAdapter struct {
	w      *RedisWindow
	prefix string
	seq    *atomic.Int64
}

func (a redisWindowAdapter) take(key string, lim tokenbucket.Limit) (bool, time.Duration, error) {
	win := Window{}
	if lim.Limited() {
		win = Window{Size: time.Duration(float64(lim.Burst) / lim.Rate * float64(time.Second)), Max: lim.Burst}
	}
	return a.w.Take(context.Background(), a.prefix+"{"+key+"}", win, fmt.Sprint(a.seq.Add(1)))
}

// localAdapter drives the fallback buckets the way allowLocal does: one bucket per key,
// reconfigured in place when the limit changes.
type localAdapter struct {
	clk *fakeClock
	m   *shardMap[*tokenbucket.Bucket]
}

func (a localAdapter) take(key string, lim tokenbucket.Limit) (bool, time.Duration, error) {
	if !lim.Limited() {
		return true, 0, nil
	}
	now := a.clk.Now()
	b := a.m.getOrAdd(key, func() *tokenbucket.Bucket { return tokenbucket.NewBucket(lim, now) }, nil)
	b.Configure(lim, now)
	ok, retry := b.Take(now)
	return ok, retry, nil
}

func TestSuiteLocalFallback(t *testing.T) {
	t.Parallel()
	runBucketSuite(t, bucketKind{gradual: true}, func(t *testing.T, clk *fakeClock) suiteBucket {
		return localAdapter{clk: clk, m: newShardMap[*tokenbucket.Bucket](1000)}
	})
}
