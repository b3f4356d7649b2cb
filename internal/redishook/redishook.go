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

// Hook is a go-redis hook made of functions, for the tests that act on some commands (hold,
// delay, fail or record them): Process runs in place of each single command and Pipeline in
// place of each pipeline, each handed the next step to call (or not); a nil one passes the
// call on untouched. Dials pass.
type Hook struct {
	Process  func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error
	Pipeline func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error
}

var _ redis.Hook = Hook{}

// DialHook is part of redis.Hook; dials pass.
func (h Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook is part of redis.Hook.
func (h Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	if h.Process == nil {
		return next
	}
	return func(ctx context.Context, cmd redis.Cmder) error { return h.Process(ctx, cmd, next) }
}

// ProcessPipelineHook is part of redis.Hook.
func (h Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	if h.Pipeline == nil {
		return next
	}
	return func(ctx context.Context, cmds []redis.Cmder) error { return h.Pipeline(ctx, cmds, next) }
}

// Each is a Hook that calls f with every command a client sends, single or in a pipeline (each
// command of the pipeline in its order), before the command goes on.
func Each(f func(ctx context.Context, cmd redis.Cmder)) Hook {
	return Hook{
		Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
			f(ctx, cmd)
			return next(ctx, cmd)
		},
		Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
			for _, cmd := range cmds {
				f(ctx, cmd)
			}
			return next(ctx, cmds)
		},
	}
}

// Fail sets err on cmd and returns it: what a hook answers for a command it fails.
func Fail(cmd redis.Cmder, err error) error {
	cmd.SetErr(err)
	return err
}

// IsScript reports whether cmd is an EVALSHA or an EVAL.
func IsScript(cmd redis.Cmder) bool {
	n := cmd.Name()
	return n == "evalsha" || n == "eval"
}
