package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeClock is a Clock that moves only when told to. Safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var _ Clock = (*fakeClock)(nil)

// uniq is a key prefix no other test (or test run) uses.
func uniq(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	n := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return "sktest:" + n + ":" + hex.EncodeToString(b[:]) + ":"
}

// cleanupKeys deletes every key under prefix when the test ends.
func cleanupKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		del := func(ctx context.Context, c *redis.Client) error {
			iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
			for iter.Next(ctx) {
				c.Del(ctx, iter.Val())
			}
			return iter.Err()
		}
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			_ = c.ForEachMaster(ctx, del)
		case *redis.Client:
			_ = del(ctx, c)
		}
	})
}

// newTestLimiter builds a Limiter whose keys live under a prefix of its own. With a clock, the
// scripts use it too (no Redis TIME), so token arithmetic is deterministic.
func newTestLimiter(t testing.TB, rdb redis.UniversalClient, clk *fakeClock, opts Options) *Limiter {
	t.Helper()
	prefix := uniq(t)
	cleanupKeys(t, rdb, prefix)
	return newTestLimiterPrefix(t, rdb, clk, opts, prefix)
}

func newTestLimiterPrefix(t testing.TB, rdb redis.UniversalClient, clk *fakeClock, opts Options, prefix string) *Limiter {
	if clk != nil {
		opts.Clock = clk
	}
	l := New(rdb, opts, nil, slog.New(slog.DiscardHandler))
	l.prefix = prefix
	l.instancesKey = prefix + "instances"
	if clk != nil {
		l.scriptNow = func() int64 { return clk.Now().UnixMicro() }
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// callCounter is a go-redis hook counting the commands sent.
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*callCounter)(nil)

// sleepHook delays every command by the current delay: latency injection without a proxy.
type sleepHook struct{ delay atomic.Int64 }

func (h *sleepHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *sleepHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d := time.Duration(h.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		return next(ctx, cmd)
	}
}
func (h *sleepHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

var _ redis.Hook = (*sleepHook)(nil)
