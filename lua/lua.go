// Package lua holds every Redis script of the service as a file, embedded at build time.
//
// A script may pull in a library file with a line of the form
//
//	--#include lib_bucket.lua
//
// which is replaced by that file's text, so the token bucket and the sliding window are
// written once and run both on their own (limiter) and inside the reservation script
// (inventory). Scripts run through redis.Script: EVALSHA, and EVAL on NOSCRIPT.
package lua

import (
	"context"
	"embed"
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

// Call is one invocation of a script: its keys and arguments.
type Call struct {
	Keys []string
	Args []any
}

// RunMany runs s once for each call in one pipeline (EVALSHA), then runs again one by one
// (EVAL through Script.Run) the calls that met NOSCRIPT. It returns each call's command, in
// the order of calls, and the first error of any call (redis.Nil is not an error).
func RunMany(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, calls []Call) ([]*redis.Cmd, error) {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = s.EvalSha(ctx, pipe, c.Keys, c.Args...)
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
