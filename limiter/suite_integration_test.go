//go:build integration

package limiter

import (
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/internal/testsvc"
)

func TestSuiteRedisBucket(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	runBucketSuite(t, bucketKind{gradual: true}, func(t *testing.T, clk *fakeClock) suiteBucket {
		p := uniq(t)
		cleanupKeys(t, rdb, p)
		b := must(NewRedisBucket(rdb))
		b.now = func() int64 { return clk.Now().UnixMicro() }
		return redisBucketAdapter{b: b, prefix: p}
	})
}

func TestSuiteRedisBucketCluster(t *testing.T) {
	t.Parallel()
	rdb := testsvc.RedisCluster(t)
	runBucketSuite(t, bucketKind{gradual: true}, func(t *testing.T, clk *fakeClock) suiteBucket {
		p := uniq(t)
		cleanupKeys(t, rdb, p)
		b := must(NewRedisBucket(rdb))
		b.now = func() int64 { return clk.Now().UnixMicro() }
		return redisBucketAdapter{b: b, prefix: p}
	})
}

func TestSuiteRedisWindow(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	runBucketSuite(t, bucketKind{gradual: false}, func(t *testing.T, clk *fakeClock) suiteBucket {
		p := uniq(t)
		cleanupKeys(t, rdb, p)
		w := must(NewRedisWindow(rdb))
		w.now = func() int64 { return clk.Now().UnixMicro() }
		return redisWindowAdapter{w: w, prefix: p, seq: new(atomic.Int64)}
	})
}
