package backoff

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestDoubling(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		min, max time.Duration
		resetAt  int // index before which Reset is called; -1: never
		want     []time.Duration
	}{
		{name: "doubles to the cap", min: 50 * ms, max: 300 * ms, resetAt: -1, want: []time.Duration{50 * ms, 100 * ms, 200 * ms, 300 * ms, 300 * ms}},
		{name: "reset starts over", min: 10 * ms, max: time.Second, resetAt: 3, want: []time.Duration{10 * ms, 20 * ms, 40 * ms, 10 * ms, 20 * ms}},
		{name: "cap below the start wins", min: 100 * ms, max: 30 * ms, resetAt: -1, want: []time.Duration{30 * ms, 30 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Doubling{Min: tt.min, Max: tt.max}
			var got []time.Duration
			for i := range tt.want {
				if i == tt.resetAt {
					d.Reset()
				}
				got = append(got, d.Next())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pauses %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNthIsDoublingsSequence: the n-th pause of Nth is the n-th of a Doubling with the same
// bounds, for bounds of every order, a cap below the start and counts below 1 included.
func TestNthIsDoublingsSequence(t *testing.T) {
	const ms = time.Millisecond
	for _, b := range []struct{ lo, hi time.Duration }{{50 * ms, 5 * time.Second}, {100 * ms, 30 * ms}, {ms, ms}, {3 * ms, 1000 * ms}} {
		d := Doubling{Min: b.lo, Max: b.hi}
		if got := Nth(b.lo, b.hi, 0); got != min(b.lo, b.hi) {
			t.Errorf("Nth(%v, %v, 0) = %v, want the first pause %v", b.lo, b.hi, got, min(b.lo, b.hi))
		}
		for n := 1; n <= 20; n++ {
			if want, got := d.Next(), Nth(b.lo, b.hi, n); got != want {
				t.Errorf("Nth(%v, %v, %d) = %v, want %v", b.lo, b.hi, n, got, want)
			}
		}
	}
}

func TestLinear(t *testing.T) {
	const ms = time.Millisecond
	var got []time.Duration
	for n := range 15 {
		got = append(got, Linear(2*ms, 25*ms, n))
	}
	want := []time.Duration{2 * ms, 2 * ms, 4 * ms, 6 * ms, 8 * ms, 10 * ms, 12 * ms, 14 * ms, 16 * ms, 18 * ms, 20 * ms, 22 * ms, 24 * ms, 25 * ms, 25 * ms}
	if !slices.Equal(got, want) {
		t.Errorf("pauses %v, want %v", got, want)
	}
}

func TestSleep(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		d       time.Duration
		want    error
		atLeast time.Duration
	}{
		{name: "waits d", ctx: context.Background(), d: 20 * time.Millisecond, atLeast: 20 * time.Millisecond},
		{name: "no wait", ctx: context.Background(), d: 0},
		{name: "cancelled", ctx: done, d: time.Hour, want: context.Canceled},
		{name: "cancelled, no wait", ctx: done, d: -time.Second, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if err := Sleep(tt.ctx, tt.d); !errors.Is(err, tt.want) {
				t.Errorf("Sleep = %v, want %v", err, tt.want)
			}
			if took := time.Since(start); took < tt.atLeast {
				t.Errorf("Sleep took %v, want at least %v", took, tt.atLeast)
			}
		})
	}
}
