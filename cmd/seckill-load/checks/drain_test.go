package checks

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitDrained(t *testing.T) {
	ctx := context.Background()
	far := time.Now().Add(time.Minute)

	// Known plus the whole slack, settled: done at the first read.
	reads := 0
	if err := waitDrained(ctx, far, 10, 2, func(context.Context) (int64, bool, error) { reads++; return 12, true, nil }); err != nil || reads != 1 {
		t.Fatalf("full count: err %v after %d reads, want nil after 1", err, reads)
	}

	// Not settled yet: it keeps reading until read says settled.
	reads = 0
	if err := waitDrained(ctx, far, 10, 0, func(context.Context) (int64, bool, error) { reads++; return 10, reads >= 3, nil }); err != nil || reads != 3 {
		t.Fatalf("settling: err %v after %d reads, want nil after 3", err, reads)
	}

	// At known, short of the slack: it ends once the count stood still for drainSettle.
	start := time.Now()
	if err := waitDrained(ctx, far, 10, 5, func(context.Context) (int64, bool, error) { return 10, true, nil }); err != nil {
		t.Fatalf("standing count: %v", err)
	}
	if waited := time.Since(start); waited < drainSettle {
		t.Fatalf("a count short of the slack ended the wait after %v, before drainSettle", waited)
	}

	// Failing reads until the deadline: the last error comes back.
	boom := errors.New("boom")
	if err := waitDrained(ctx, time.Now().Add(300*time.Millisecond), 10, 0, func(context.Context) (int64, bool, error) { return 99, true, boom }); !errors.Is(err, boom) {
		t.Fatalf("failing reads: %v, want boom", err)
	}

	// Short of known at the deadline: nil error, the caller judges the count.
	if err := waitDrained(ctx, time.Now().Add(300*time.Millisecond), 10, 0, func(context.Context) (int64, bool, error) { return 3, true, nil }); err != nil {
		t.Fatalf("short count: %v", err)
	}
}
