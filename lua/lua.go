// Package lua holds every Redis script of the service as a file, embedded at build time.
//
// A script may pull in a library file with a line of the form
//
//	--#include lib_bucket.lua
//
// which is replaced by that file's text, so the token bucket and the sliding window are
// written once and run both on their own (limiter) and inside the reservation script
// (inventory). Scripts run with EVALSHA, and EVAL on NOSCRIPT: through redis.Script (Load),
// or through Script (Open), the one implementation for callers that send the command
// themselves (through a hook, or built once).
package lua

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var files embed.FS

// Source returns the text of the named script with its includes expanded.
func Source(name string) (string, error) {
	return source(name, 0)
}

func source(name string, depth int) (string, error) {
	if depth > 4 {
		return "", fmt.Errorf("lua: include depth exceeded at %s", name)
	}
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("lua: %w", err)
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if inc, ok := strings.CutPrefix(strings.TrimSpace(line), "--#include "); ok {
			s, err := source(strings.TrimSpace(inc), depth+1)
			if err != nil {
				return "", err
			}
			out.WriteString(s)
			out.WriteString("\n")
			continue
		}
		out.WriteString(line)
	}
	return out.String(), nil
}

// Load returns the named script ready to run with EVALSHA.
func Load(name string) (*redis.Script, error) {
	src, err := Source(name)
	if err != nil {
		return nil, err
	}
	return redis.NewScript(src), nil
}

// Names lists every embedded script file, libraries included.
func Names() []string {
	ents, _ := files.ReadDir(".")
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Script is a script and its source, run with EVALSHA and, only when the server answers
// NOSCRIPT (it lost its scripts: a restart, a failover, SCRIPT FLUSH), once more with EVAL
// and the source. Process is that fallback for a command its caller built or sends its own
// way; Run builds the command. Safe for concurrent use.
type Script struct {
	src, hash string
	sha       any // hash, boxed once for Args
}

// NewScript returns the script of source src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	return &Script{src: src, hash: h, sha: h}
}

// Open returns the named script (Source) as a Script.
func Open(name string) (*Script, error) {
	src, err := Source(name)
	if err != nil {
		return nil, err
	}
	return NewScript(src), nil
}

// Hash is the script's SHA-1, as EVALSHA names it.
func (s *Script) Hash() string { return s.hash }

// Source is the script's text, as EVAL sends it.
func (s *Script) Source() string { return s.src }

// Args is the EVALSHA command of a call with keys and args, as go-redis writes it
// (EVALSHA sha numkeys keys... args...).
func (s *Script) Args(keys []string, args ...any) []any {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return append(a, args...)
}

// Processor sends a command: a redis.UniversalClient, a Pipeliner.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Run runs the script with keys and args on c (Process with c's Process).
func (s *Script) Run(ctx context.Context, c Processor, keys []string, args ...any) *redis.Cmd {
	return s.Process(ctx, c.Process, s.Args(keys, args...))
}

// Process sends cmdArgs, an EVALSHA command of the script (Args, or one its caller built the
// same way), through process; when the answer is NOSCRIPT it sends the same call once more
// as EVAL with the source. It returns the last command sent, whose error is the call's.
// Only the fallback allocates beyond the command.
func (s *Script) Process(ctx context.Context, process func(context.Context, redis.Cmder) error, cmdArgs []any) *redis.Cmd {
	cmd := newCmd(ctx, cmdArgs)
	_ = process(ctx, cmd)
	if err := cmd.Err(); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd
	}
	ev := make([]any, len(cmdArgs))
	copy(ev, cmdArgs)
	ev[0], ev[1] = "eval", s.src
	cmd = newCmd(ctx, ev)
	_ = process(ctx, cmd)
	return cmd
}

// newCmd is the command of args (EVAL or EVALSHA), routed by its first key when it has one.
func newCmd(ctx context.Context, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if n, ok := args[2].(int); !ok || n > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// Call is one invocation of a script: its keys and arguments.
type Call struct {
	Keys []string
	Args []any
}

// RunMany runs s once for each call in one pipeline (EVALSHA), then runs again one by one
// (Script.Run) the calls that met NOSCRIPT. It returns each call's command, in the order of
// calls, and the first error of any call (redis.Nil is not an error).
func RunMany(ctx context.Context, rdb redis.UniversalClient, s *Script, calls []Call) ([]*redis.Cmd, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = newCmd(ctx, s.Args(c.Keys, c.Args...))
		_ = pipe.Process(ctx, cmds[i])
	}
	if _, err := pipe.Exec(ctx); err == nil || errors.Is(err, redis.Nil) {
		return cmds, nil
	}
	var first error
	for i, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				cmds[i] = s.Run(ctx, rdb, calls[i].Keys, calls[i].Args...)
				err = cmds[i].Err()
				if err == nil || errors.Is(err, redis.Nil) {
					continue
				}
			}
			if first == nil {
				first = err
			}
		}
	}
	return cmds, first
}

// Decode turns a script's integer answer into its typed result code: one of known, or an
// error naming the script and the code (an unknown answer is never treated as any code).
func Decode[T ~int](script string, v int64, known ...T) (T, error) {
	for _, k := range known {
		if int64(k) == v {
			return k, nil
		}
	}
	return 0, fmt.Errorf("lua: %s returned unknown code %d", script, v)
}
