//go:build integration

package limiter

import (
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
)

func TestSuiteRedisBucket(t *testing.T) {
	t.Parallel()
	runBucketSuite(t, bucketKind{gradual: true}, redisBuckets(testsvc.Redis(t)))
}

func TestSuiteRedisBucketCluster(t *testing.T) {
	t.Parallel()
	runBucketSuite(t, bucketKind{gradual: true}, redisBuckets(testsvc.RedisCluster(t)))
}

// redisBuckets makes the suite's Redis token buckets on rdb: keys under a prefix of their own,
// deleted when the test ends, and the suite's clock in place of Redis TIME.
func redisBuckets(rdb redis.UniversalClient) func(t *testing.T, clk *fakeClock) suiteBucket {
	return func(t *testing.T, clk *fakeClock) suiteBucket {
		p := uniq(t)
		cleanupKeys(t, rdb, p)
		b := must(NewRedisBucket(rdb))
		b.now = func() int64 { return clk.Now().UnixMicro() }
		return redisBucketAdapter{b: b, prefix: p}
	}
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
