// Package testwait is how tests wait: Eventually polls a condition until it holds, with a
// stated timeout, and Never checks that a condition stays false for a stated time. No test
// sleeps a fixed duration in the hope that something happened, or did not happen, by then.
// It needs no server, so pure tests and integration tests use it alike.
package testwait

import (
	"fmt"
	"testing"
	"time"
)

// Polling starts at firstPoll and doubles up to maxPoll: a condition that holds at once costs
// a millisecond, one that takes seconds is checked 20 times a second.
const (
	firstPoll = time.Millisecond
	maxPoll   = 50 * time.Millisecond
)

// Eventually polls cond until it returns true and returns how long that took. If it has
// not held after timeout, it fails t with "not within <timeout>: " and msg formatted with args
// (formatted at that moment, so an argument that is a fmt.Stringer can report the last state
// seen). cond runs on the caller's goroutine; it may call t.Fatal.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for poll := firstPoll; !cond(); poll = min(2*poll, maxPoll) {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("not within %v: %s", timeout, fmt.Sprintf(msg, args...))
		}
		time.Sleep(min(poll, left))
	}
	return time.Since(start)
}

// Lazy is a message argument computed only when the message is formatted, that is when a
// wait fails: Eventually(t, d, cond, "... (last seen %v)", Lazy(func() string { return last })).
type Lazy func() string

// String returns l().
func (l Lazy) String() string { return l() }

// Never checks that cond stays false for the whole of d (it polls as Eventually does) and
// fails t with "within <d>: " and msg formatted with args the first time cond returns true.
// The bound d is the claim the test makes: "nothing happens for d", not "nothing ever happens".
func Never(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	for poll := firstPoll; ; poll = min(2*poll, maxPoll) {
		if cond() {
			t.Fatalf("within %v (after %v): %s", d, time.Since(start).Round(time.Millisecond), fmt.Sprintf(msg, args...))
		}
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(poll, left))
	}
}
