package lua

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// sentLog is a go-redis hook that keeps the name of every EVAL and EVALSHA sent, pipelined
// or not.
type sentLog struct{ names []string }

func (l *sentLog) note(cmd redis.Cmder) {
	if n := cmd.Name(); strings.HasPrefix(n, "eval") {
		l.names = append(l.names, n)
	}
}

func (l *sentLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *sentLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.note(cmd)
		return next(ctx, cmd)
	}
}

func (l *sentLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			l.note(c)
		}
		return next(ctx, cmds)
	}
}

func (l *sentLog) take() string {
	s := strings.Join(l.names, " ")
	l.names = nil
	return s
}

// TestScriptFallsBackToEvalOnNoscript: a Script is sent with EVALSHA and, only when the
// server lost it, once more with EVAL and its source (Run, Process through a caller's
// hook, RunMany), as redis.Script.Run does; its hash is the one go-redis computes.
func TestScriptFallsBackToEvalOnNoscript(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	log := &sentLog{}
	rdb.AddHook(log)
	ctx := context.Background()
	s := NewScript("return {KEYS[1], ARGV[1]}")
	if s.Hash() != redis.NewScript(s.Source()).Hash() {
		t.Fatalf("hash %s, want go-redis's", s.Hash())
	}
	want := func(what, sent string) {
		t.Helper()
		if v, err := s.Run(ctx, rdb, []string{"k"}, "a").StringSlice(); err != nil || strings.Join(v, ",") != "k,a" {
			t.Fatalf("%s: %v %v", what, v, err)
		}
		if got := log.take(); got != sent {
			t.Fatalf("%s: sent %q, want %q", what, got, sent)
		}
	}
	want("first run", "evalsha eval")
	want("loaded", "evalsha")
	rdb.ScriptFlush(ctx)
	log.take()
	want("after a flush", "evalsha eval")

	rdb.ScriptFlush(ctx)
	log.take()
	hooked := 0
	cmd := s.Process(ctx, func(ctx context.Context, c redis.Cmder) error {
		hooked++
		return rdb.Process(ctx, c)
	}, s.Args([]string{"k"}, "b"))
	if v, err := cmd.StringSlice(); err != nil || strings.Join(v, ",") != "k,b" || hooked != 2 {
		t.Fatalf("Process: %v %v, %d commands through the hook, want 2", v, err, hooked)
	}
	if got := log.take(); got != "evalsha eval" {
		t.Fatalf("Process sent %q", got)
	}

	rdb.ScriptFlush(ctx)
	log.take()
	cmds, err := RunMany(ctx, rdb, s, []Call{{Keys: []string{"k1"}, Args: []any{1}}, {Keys: []string{"k2"}, Args: []any{2}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if v, err := c.StringSlice(); err != nil || v[1] != []string{"1", "2"}[i] {
			t.Fatalf("RunMany call %d: %v %v", i, v, err)
		}
	}
	// The pipeline's EVALSHAs met NOSCRIPT: each call is run again (EVALSHA, then EVAL; the
	// second finds the script the first loaded).
	if got := log.take(); got != "evalsha evalsha evalsha eval evalsha" {
		t.Fatalf("RunMany sent %q", got)
	}
}

// TestProcessAllocatesOnlyTheCommand: when the server has the script, Process allocates the
// command and nothing else (the reservation's prebuilt command goes through it on every
// request), whatever process hook it is given.
func TestProcessAllocatesOnlyTheCommand(t *testing.T) {
	s := NewScript("return 1")
	args := s.Args([]string{"k"}, "a")
	ctx := context.Background()
	process := func(_ context.Context, c redis.Cmder) error { c.(*redis.Cmd).SetVal(int64(1)); return nil }
	n := testing.AllocsPerRun(100, func() {
		if v, err := s.Process(ctx, process, args).Int64(); err != nil || v != 1 {
			t.Fatal(v, err)
		}
	})
	if n != 1 {
		t.Errorf("%.1f allocations per Process, want 1 (the command)", n)
	}
}
