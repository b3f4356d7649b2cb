package redishook

import (
	"context"
	"errors"
	"strings"
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

func TestHookRunsItsFunctionsAndPassesTheRest(t *testing.T) {
	ctx := context.Background()
	var sent []string
	one := func(_ context.Context, cmd redis.Cmder) error { sent = append(sent, cmd.Name()); return nil }
	many := func(_ context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			sent = append(sent, c.Name())
		}
		return nil
	}
	boom := errors.New("boom")
	h := Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		if cmd.Name() == "set" {
			return Fail(cmd, boom)
		}
		return next(ctx, cmd)
	}}
	set := redis.NewStatusCmd(ctx, "set", "k", 1)
	if err := h.ProcessHook(one)(ctx, set); !errors.Is(err, boom) || !errors.Is(set.Err(), boom) {
		t.Fatalf("a failed command: %v, its error %v; want boom on both", err, set.Err())
	}
	if err := h.ProcessHook(one)(ctx, redis.NewStringCmd(ctx, "get", "k")); err != nil {
		t.Fatal(err)
	}
	if err := h.ProcessPipelineHook(many)(ctx, []redis.Cmder{redis.NewStatusCmd(ctx, "set", "k", 2)}); err != nil {
		t.Fatal(err) // no Pipeline: the pipeline passes, its SET too
	}
	if got := strings.Join(sent, " "); got != "get set" {
		t.Fatalf("sent %q, want \"get set\"", got)
	}

	var seen []string
	e := Each(func(_ context.Context, cmd redis.Cmder) { seen = append(seen, cmd.Name()) })
	_ = e.ProcessHook(one)(ctx, redis.NewStringCmd(ctx, "get", "a"))
	_ = e.ProcessPipelineHook(many)(ctx, []redis.Cmder{redis.NewStringCmd(ctx, "hlen", "b"), redis.NewStringCmd(ctx, "hget", "c", "f")})
	if got := strings.Join(seen, " "); got != "get hlen hget" {
		t.Fatalf("Each saw %q, want \"get hlen hget\"", got)
	}
	if !IsScript(redis.NewCmd(ctx, "evalsha", "x", 0)) || !IsScript(redis.NewCmd(ctx, "EVAL", "x", 0)) || IsScript(set) {
		t.Fatal("IsScript: want true for EVALSHA and EVAL only")
	}
}
