// Package redishook has the one go-redis hook the tests count Redis commands with. It
// imports nothing of the service.
package redishook

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter is a go-redis hook (client.AddHook) counting the commands a client sends, each
// command of a pipeline one. With Match set it counts only the commands Match reports true
// for. The zero value counts every command. Safe for concurrent use.
type Counter struct {
	Match func(ctx context.Context, cmd redis.Cmder) bool
	n     atomic.Int64
}

var _ redis.Hook = (*Counter)(nil)

// Load returns the commands counted so far.
func (c *Counter) Load() int64 { return c.n.Load() }

// Reset starts the count again at zero.
func (c *Counter) Reset() { c.n.Store(0) }

func (c *Counter) count(ctx context.Context, cmd redis.Cmder) {
	if c.Match == nil || c.Match(ctx, cmd) {
		c.n.Add(1)
	}
}

// DialHook is part of redis.Hook; dials are not counted.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook is part of redis.Hook.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(ctx, cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook is part of redis.Hook.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c.Match == nil {
			c.n.Add(int64(len(cmds)))
		} else {
			for _, cmd := range cmds {
				c.count(ctx, cmd)
			}
		}
		return next(ctx, cmds)
	}
}
