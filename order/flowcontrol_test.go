//go:build integration

package order

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestRocketMQFlowControlOnSeveralQueues: a handler slower than the broker fills the
// consumer's cache past its per-queue threshold (1,024 messages) on every queue at once, and
// each queue's pull goroutine then loops in the client's flow control. Those loops counted in
// one shared field without synchronization (a data race under -race, seen in make test's
// order tests on a fresh machine; patched in third_party/rocketmq-client-go). Every message
// still arrives once the handler catches up.
func TestRocketMQFlowControlOnSeveralQueues(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	const n = 4 * 1400
	a := newTestActivity(t, rdb, nil, 4, n)
	q, err := NewRocketMQ(rmqOptions(t, a)) // 4 queues
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	msgs := a.reserve(n)
	for i := 0; i < len(msgs); i += 200 {
		if err := q.Publish(context.Background(), msgs[i:min(i+200, len(msgs))]); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	var got atomic.Int64
	if err := q.Subscribe(func(ctx context.Context, ms []Message) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		got.Add(int64(len(ms)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The pulls fill each queue's cache past 1,024 within a few pull rounds; the flow-control
	// loops then run every 50 ms on all four queues.
	time.Sleep(3 * time.Second)
	close(release)
	testwait.Eventually(t, 60*time.Second, func() bool { return got.Load() >= n }, "every message handled")
}
