package backoff

import (
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
