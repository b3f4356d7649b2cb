package redishook

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestCounterCountsCommandsAndPipelines(t *testing.T) {
	ctx := context.Background()
	one := func(context.Context, redis.Cmder) error { return nil }
	many := func(context.Context, []redis.Cmder) error { return nil }
	set := func(k string) redis.Cmder { return redis.NewStatusCmd(ctx, "set", k, 1) }
	get := func(k string) redis.Cmder { return redis.NewStringCmd(ctx, "get", k) }

	var all Counter
	sets := Counter{Match: func(_ context.Context, cmd redis.Cmder) bool { return cmd.Name() == "set" }}
	for _, c := range []*Counter{&all, &sets} {
		_ = c.ProcessHook(one)(ctx, set("a"))
		_ = c.ProcessHook(one)(ctx, get("a"))
		_ = c.ProcessPipelineHook(many)(ctx, []redis.Cmder{set("b"), get("b"), set("c")})
	}
	if got := all.Load(); got != 5 {
		t.Errorf("all: %d commands, want 5", got)
	}
	if got := sets.Load(); got != 3 {
		t.Errorf("sets: %d commands, want 3", got)
	}
	all.Reset()
	_ = all.ProcessHook(one)(ctx, get("a"))
	if got := all.Load(); got != 1 {
		t.Errorf("after Reset: %d, want 1", got)
	}
}
