package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
)

// ipKeyOf is l's Redis key of the per-IP bucket of the limit key ip (Request.IPKey).
func ipKeyOf(l *Limiter, ip string) string { return l.ipKey([]byte(ip)) }

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

// cleanupKeys deletes, when the test ends, every key under prefix that a script touched: a
// hook records the KEYS of EVAL and EVALSHA (a SCAN of the shared test Redis would be slow).
func cleanupKeys(t testing.TB, rdb redis.UniversalClient, prefix string) {
	rec := &keyRecorder{prefix: prefix, keys: make(map[string]struct{})}
	rdb.AddHook(redishook.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		rec.note(cmd)
		return next(ctx, cmd)
	}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for k := range rec.keys {
			rdb.Del(ctx, k) // one key at a time: on a cluster they live in different slots
		}
	})
}

// keyRecorder remembers the script keys under a prefix (note, on every single command).
type keyRecorder struct {
	prefix string
	mu     sync.Mutex
	keys   map[string]struct{}
}

func (r *keyRecorder) note(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 3 {
		return
	}
	if name, _ := args[0].(string); name != "evalsha" && name != "eval" {
		return
	}
	n, ok := args[2].(int)
	if !ok {
		return
	}
	for _, a := range args[3:min(len(args), 3+n)] {
		if k, ok := a.(string); ok && strings.HasPrefix(k, r.prefix) {
			r.mu.Lock()
			r.keys[k] = struct{}{}
			r.mu.Unlock()
		}
	}
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
	l := must(New(rdb, opts, nil, slog.New(slog.DiscardHandler)))
	l.prefix = prefix
	l.instancesKey = prefix + "instances"
	if clk != nil {
		l.scriptNow = func() int64 { return clk.Now().UnixMicro() }
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// allowTimes asks l to allow r n times; it returns how many were allowed and the last
// rejection (the zero Decision when none was rejected). Errors are not checked: the caller
// checks the decisions.
func allowTimes(l *Limiter, r Request, n int) (allowed int, last Decision) {
	for range n {
		if d, _ := l.Allow(context.Background(), r); d.Allowed {
			allowed++
		} else {
			last = d
		}
	}
	return allowed, last
}

// must returns v, or stops the test binary when a constructor failed (an embedded script
// that does not load, a metric registered twice): a defect no test can go on from.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
