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
	"embed"
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
