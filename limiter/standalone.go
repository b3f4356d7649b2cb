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
type RedisBucket struct{ scriptOn }

// scriptOn is a limiter script on a client, with the clock the script is given.
type scriptOn struct {
	rdb    redis.UniversalClient
	script *redis.Script
	now    func() int64 // tests: microseconds passed as the script clock; nil = Redis TIME
}

// loadScript is the embedded script name on rdb; an error means it did not load.
func loadScript(rdb redis.UniversalClient, name string) (scriptOn, error) {
	s, err := lua.Load(name)
	if err != nil {
		return scriptOn{}, fmt.Errorf("limiter: %w", err)
	}
	return scriptOn{rdb: rdb, script: s}, nil
}

// clock is the time passed to the script: 0 (the script reads Redis TIME) unless now is set.
func (s *scriptOn) clock() int64 {
	if s.now != nil {
		return s.now()
	}
	return 0
}

// NewRedisBucket returns a RedisBucket over rdb; an error means its script did not load.
func NewRedisBucket(rdb redis.UniversalClient) (*RedisBucket, error) {
	s, err := loadScript(rdb, "limiter_bucket.lua")
	if err != nil {
		return nil, err
	}
	return &RedisBucket{s}, nil
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
	res, err := b.script.Run(ctx, b.rdb, []string{key}, lim.Rate, lim.Capacity(), n, b.clock()).Int64Slice()
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
type RedisWindow struct{ scriptOn }

// NewRedisWindow returns a RedisWindow over rdb; an error means its script did not load.
func NewRedisWindow(rdb redis.UniversalClient) (*RedisWindow, error) {
	s, err := loadScript(rdb, "limiter_window.lua")
	if err != nil {
		return nil, err
	}
	return &RedisWindow{s}, nil
}

// Take records the event member (unique per event) in the window at key when fewer than w.Max
// events lie within w.Size; otherwise it returns false and the time until the oldest leaves.
func (w *RedisWindow) Take(ctx context.Context, key string, win Window, member string) (bool, time.Duration, error) {
	res, err := w.script.Run(ctx, w.rdb, []string{key}, win.Size.Milliseconds(), win.Max, member, w.clock()).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("limiter: window %s: %w", key, err)
	}
	return decode(res)
}
