// Package logrepeat bounds the log lines of failures that repeat: at most one line per key
// per interval, the next carrying how many it dropped, and one line when it works again.
package logrepeat

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Log logs failures that repeat, at most one line per key per interval: the first
// failure of a key logs at once, the ones that follow within the interval are only counted,
// and the next line of the key carries "suppressed" (how many it dropped since the last
// line). OK ends a key's run of failures with one line, if any failure was logged. Keys are
// a small fixed set chosen by the caller (an operation, a format string), never ids. Safe
// for concurrent use.
type Log struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time // the clock (SetClock)

	mu   sync.Mutex
	keys map[string]*repeatState // guarded by mu
}

type repeatState struct {
	last       time.Time // when the key's last line was written
	suppressed int       // failures counted but not logged since then
	total      int       // failures in the current run
}

// New returns a Log writing to log at most once per key per every (default
// 10 s when every <= 0).
func New(log *slog.Logger, every time.Duration) *Log {
	if every <= 0 {
		every = 10 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Log{log: log, every: every, now: time.Now, keys: map[string]*repeatState{}}
}

// Warn logs msg with args at warning level for key, unless a line for key was written less
// than the interval ago; then it only counts it.
func (r *Log) Warn(key, msg string, args ...any) {
	r.emit(slog.LevelWarn, key, msg, args...)
}

// Error is Warn at error level.
func (r *Log) Error(key, msg string, args ...any) {
	r.emit(slog.LevelError, key, msg, args...)
}

func (r *Log) emit(level slog.Level, key, msg string, args ...any) {
	now := r.now()
	r.mu.Lock()
	st := r.keys[key]
	if st == nil {
		st = &repeatState{}
		r.keys[key] = st
	}
	st.total++
	if st.total > 1 && now.Sub(st.last) < r.every {
		st.suppressed++
		r.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.last, st.suppressed = now, 0
	r.mu.Unlock()
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	r.log.Log(context.Background(), level, msg, args...)
}

// OK says key works again: if failures of key were logged, it writes one info line with
// msg, args and "failures" (how many there were in the run), and starts afresh.
func (r *Log) OK(key, msg string, args ...any) {
	r.mu.Lock()
	st := r.keys[key]
	if st == nil {
		r.mu.Unlock()
		return
	}
	delete(r.keys, key)
	r.mu.Unlock()
	r.log.Info(msg, append(args, "failures", st.total)...)
}

// SetClock replaces the clock (tests).
func (r *Log) SetClock(now func() time.Time) { r.now = now }
