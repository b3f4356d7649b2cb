package testwait

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of stopping the test; Fatalf ends
// the calling goroutine as the real one does, so the helpers run in a goroutine of their own.
type recorder struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	panic(r)
}

// run calls f with a recorder and returns the Fatalf message ("" if none).
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		f(r)
	}()
	<-done
	return r.fatal
}

func TestEventually(t *testing.T) {
	tests := []struct {
		name     string
		holdsAt  time.Duration // cond turns true this long after the start (-1: never)
		timeout  time.Duration
		wantFail bool
	}{
		{"at once", 0, 100 * time.Millisecond, false},
		{"before the timeout", 60 * time.Millisecond, time.Second, false},
		{"never", -1, 80 * time.Millisecond, true},
		{"after the timeout", 300 * time.Millisecond, 50 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			var calls atomic.Int64
			cond := func() bool {
				calls.Add(1)
				return tt.holdsAt >= 0 && time.Since(start) >= tt.holdsAt
			}
			var took time.Duration
			msg := run(t, func(tb testing.TB) { took = Eventually(tb, tt.timeout, cond, "the %s", "thing") })
			if got := msg != ""; got != tt.wantFail {
				t.Fatalf("failed = %v (%q), want %v", got, msg, tt.wantFail)
			}
			if tt.wantFail {
				if want := fmt.Sprintf("not within %v: the thing", tt.timeout); msg != want {
					t.Fatalf("message %q, want %q", msg, want)
				}
				if el := time.Since(start); el < tt.timeout {
					t.Fatalf("gave up after %v, before the timeout %v", el, tt.timeout)
				}
				return
			}
			if took < tt.holdsAt || took > tt.holdsAt+time.Second {
				t.Fatalf("returned %v, cond held from %v", took, tt.holdsAt)
			}
			if tt.holdsAt == 0 && calls.Load() != 1 {
				t.Fatalf("cond called %d times, want once", calls.Load())
			}
		})
	}
}

// The message is formatted when the wait fails, so a Stringer reports the last state.
func TestEventuallyFormatsAtFailure(t *testing.T) {
	n := 0
	msg := run(t, func(tb testing.TB) {
		Eventually(tb, 30*time.Millisecond, func() bool { n++; return false }, "count 0 (last %v)", Lazy(func() string { return fmt.Sprint(n) }))
	})
	if !strings.HasPrefix(msg, "not within 30ms: count 0 (last ") || strings.HasSuffix(msg, "(last 0)") || n < 2 {
		t.Fatalf("message %q after %d calls", msg, n)
	}
}

func TestNever(t *testing.T) {
	tests := []struct {
		name     string
		holdsAt  time.Duration // -1: never
		d        time.Duration
		wantFail bool
	}{
		{"stays false", -1, 60 * time.Millisecond, false},
		{"turns true after the bound", 500 * time.Millisecond, 40 * time.Millisecond, false},
		{"true at once", 0, time.Second, true},
		{"turns true within the bound", 30 * time.Millisecond, time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			cond := func() bool { return tt.holdsAt >= 0 && time.Since(start) >= tt.holdsAt }
			msg := run(t, func(tb testing.TB) { Never(tb, tt.d, cond, "it %s", "happened") })
			el := time.Since(start)
			if got := msg != ""; got != tt.wantFail {
				t.Fatalf("failed = %v (%q), want %v", got, msg, tt.wantFail)
			}
			switch {
			case tt.wantFail && (!strings.HasPrefix(msg, fmt.Sprintf("within %v (after ", tt.d)) || !strings.HasSuffix(msg, "): it happened")):
				t.Fatalf("message %q", msg)
			case tt.wantFail && el >= tt.d:
				t.Fatalf("failed only after %v, the whole bound %v", el, tt.d)
			case !tt.wantFail && el < tt.d:
				t.Fatalf("returned after %v, before the bound %v", el, tt.d)
			}
		})
	}
}
