//go:build integration

package order

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestRocketMQFlowControlOnSeveralQueues: a handler held back fills the consumer's cache on
// every queue at once, and each queue's pull goroutine then loops in the client's flow
// control. With pulls of 64 a queue's cache stops at 1,024 messages in the max-span branch
// (a span of 1,023 over ConsumeConcurrentlyMaxSpan's 1,000; the count threshold, 1,024, is
// not passed). Those loops counted in shared fields without synchronization (a data race
// under -race, seen in make test's order tests on a fresh machine; patched in
// third_party/rocketmq-client-go). Every message still arrives after the release (at least
// once: RocketMQ may redeliver, the writer is idempotent).
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
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // runs before q.Close: no handler stays blocked
	var mu sync.Mutex
	got := map[string]int{}
	if err := q.Subscribe(func(_ context.Context, ms []Message) error {
		<-release
		mu.Lock()
		for _, m := range ms {
			got[m.ReservationID]++
		}
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The handler is held for a fixed 3 s, not waited on: the pulls fill each queue's cache to
	// 1,024 within a few pull rounds (nothing outside the client shows it), and the
	// flow-control loops then run every 50 ms on all four queues.
	time.Sleep(3 * time.Second)
	open()
	handled := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	testwait.Eventually(t, 60*time.Second, func() bool { return handled() == n }, "every reservation handled (%s of %d; the topic is the test's own)",
		testwait.Lazy(func() string { return fmt.Sprint(handled()) }), n)
}
