package limiter

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/lua"
)

// RedisBucket is an exact token bucket in Redis (lua/limiter_bucket.lua over
// lua/lib_bucket.lua, the library the reservation script runs for the per-user bucket). Each
// call is one round trip; time comes from Redis TIME. Safe for concurrent use.
type RedisBucket struct {
	rdb    redis.UniversalClient
	script *redis.Script
	now    func() int64 // tests: microseconds passed as the script clock; nil = Redis TIME
}

// NewRedisBucket returns a RedisBucket over rdb; an error means its script did not load.
func NewRedisBucket(rdb redis.UniversalClient) (*RedisBucket, error) {
	s, err := lua.Load("limiter_bucket.lua")
	if err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	return &RedisBucket{rdb: rdb, script: s}, nil
}

// Take takes n >= 1 tokens from the bucket at key, all or nothing, under lim. When it cannot,
// it returns false and the time until n tokens are there. A Limit with Rate 0 always allows.
func (b *RedisBucket) Take(ctx context.Context, key string, lim tokenbucket.Limit, n int) (bool, time.Duration, error) {
	if n < 1 {
		return false, 0, fmt.Errorf("limiter: take %d tokens: n must be >= 1", n)
	}
	return b.run(ctx, key, lim, n)
}

// Give returns n >= 1 tokens to the bucket at key, clamped to its burst.
func (b *RedisBucket) Give(ctx context.Context, key string, lim tokenbucket.Limit, n int) error {
	if n < 1 {
		return fmt.Errorf("limiter: give %d tokens: n must be >= 1", n)
	}
	_, _, err := b.run(ctx, key, lim, -n)
	return err
}

func (b *RedisBucket) run(ctx context.Context, key string, lim tokenbucket.Limit, n int) (bool, time.Duration, error) {
	var now int64
	if b.now != nil {
		now = b.now()
	}
	res, err := b.script.Run(ctx, b.rdb, []string{key}, lim.Rate, lim.Capacity(), n, now).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("limiter: bucket %s: %w", key, err)
	}
	return decode(res)
}

// Window is a sliding-window limit: at most Max events within Size. Max 0 switches it off.
type Window struct {
	Size time.Duration
	Max  int
}

// RedisWindow is an exact sliding-window log in Redis (lua/limiter_window.lua: a sorted set
// of the events, sw_check and sw_commit of lua/lib_window.lua). The reservation script's
// per-user window is the same library's other form, the two-counter approximation wc_check,
// kept in the user's field. Each call is one round trip; time comes from Redis TIME. Safe for
// concurrent use.
type RedisWindow struct {
	rdb    redis.UniversalClient
	script *redis.Script
	now    func() int64 // tests: microseconds passed as the script clock; nil = Redis TIME
}

// NewRedisWindow returns a RedisWindow over rdb; an error means its script did not load.
func NewRedisWindow(rdb redis.UniversalClient) (*RedisWindow, error) {
	s, err := lua.Load("limiter_window.lua")
	if err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	return &RedisWindow{rdb: rdb, script: s}, nil
}

// Take records the event member (unique per event) in the window at key when fewer than w.Max
// events lie within w.Size; otherwise it returns false and the time until the oldest leaves.
func (w *RedisWindow) Take(ctx context.Context, key string, win Window, member string) (bool, time.Duration, error) {
	var now int64
	if w.now != nil {
		now = w.now()
	}
	res, err := w.script.Run(ctx, w.rdb, []string{key}, win.Size.Milliseconds(), win.Max, member, now).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("limiter: window %s: %w", key, err)
	}
	return decode(res)
}
