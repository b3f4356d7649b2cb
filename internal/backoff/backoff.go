// Package backoff owns the pauses of the service's retry and idle loops: the one doubling
// pause (the relay's publish and held batches, its idle poll, the configuration's retry of a
// slow build, the layouts' reshard retry), the one linear ramp (waits on a reshard) and the
// one wait that a context cuts short (Sleep). It imports nothing of the service.
package backoff

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done, whichever comes first; it returns ctx.Err() when ctx
// ended the wait (or was done already with d <= 0), else nil.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Doubling is a pause that doubles on every Next, from Min up to Max: Min, 2*Min, 4*Min, ...,
// never above Max (Max wins when Min > Max). Reset starts it over at Min. The zero value of
// the pause state, with Min and Max set, is ready to use. Not safe for concurrent use.
type Doubling struct {
	Min, Max time.Duration
	last     time.Duration // the pause Next returned last; 0 before the first or after Reset
}

// Next returns the pause to wait now and doubles the following one.
func (d *Doubling) Next() time.Duration {
	d.last = min(max(2*d.last, d.Min), d.Max)
	return d.last
}

// Reset makes the next Next return Min again.
func (d *Doubling) Reset() { d.last = 0 }

// Nth is the n-th pause of a Doubling from lo to hi (n from 1; below 1 counts as 1): lo
// doubled n-1 times, capped at hi. For a pause that follows a count kept elsewhere (the
// writer's failures in a row, shared by its batches).
func Nth(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

// Linear is the n-th pause of a ramp that grows by step up to hi: n*step, capped at hi (n
// below 1 counts as 1).
func Linear(step, hi time.Duration, n int) time.Duration {
	return min(time.Duration(max(n, 1))*step, hi)
}
