//go:build integration

package order

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// recordingPublisher keeps what was published, by reservation id.
type recordingPublisher struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (p *recordingPublisher) Publish(_ context.Context, msgs []Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	for _, m := range msgs {
		p.seen[m.ReservationID] = true
	}
	return nil
}

func (p *recordingPublisher) has(rids ...string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range rids {
		if !p.seen[r] {
			return false
		}
	}
	return true
}

// TestRelayDurableTroubleOfOneJournalHoldsNoOther: in mode replicas:1, one journal whose
// entries cannot be made durable (its relay group vanished between the read and the claim:
// NOGROUP, as after a failover to a replica without it) must not hold the relay for the
// others: a reservation on another activity is still published, and the troubled journal's
// entries are published once its group is back.
func TestRelayDurableTroubleOfOneJournalHoldsNoOther(t *testing.T) {
	t.Parallel()
	master := testsvc.PrivateRedis(t)
	port := strings.TrimPrefix(master, "127.0.0.1:")
	testsvc.PrivateRedis(t, "--replicaof", "127.0.0.1", port)
	rdb := redis.NewClient(&redis.Options{Addr: master})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	testwait.Eventually(t, 30*time.Second, func() bool {
		info, _ := rdb.Info(ctx, "replication").Result()
		return strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	}, "the replica online")
	a := newTestActivity(t, rdb, nil, 1, 10)
	b := newTestActivity(t, rdb, nil, 1, 10)
	bJournal := inventory.Shard(b.id, 0, 0).Journal()
	aJournal := inventory.Shard(a.id, 0, 0).Journal()
	if err := rdb.SAdd(ctx, a.journals, bJournal).Err(); err != nil {
		t.Fatal(err)
	}
	pub := &recordingPublisher{}
	r := must(NewRelay(rdb, pub, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals, Discover: 100 * time.Millisecond,
		Durability: inventory.Durability{Replicas: 1, Timeout: time.Second}}, testMetrics(), testLogger(t)))
	stuck := make(chan struct{})
	var once sync.Once
	r.beforeDurable = func(stream string) {
		if stream != aJournal {
			return
		}
		once.Do(func() {
			// The group goes between the read and the claim.
			if err := rdb.XGroupDestroy(ctx, aJournal, RelayGroup).Err(); err != nil {
				t.Error(err)
			}
			close(stuck)
		})
	}
	aMsgs := a.reserve(1)
	startRelay(t, ctx, r)
	select {
	case <-stuck:
	case <-time.After(60 * time.Second):
		t.Fatal("the relay never read the first journal")
	}
	bMsgs := b.reserve(1)
	testwait.Eventually(t, 30*time.Second, func() bool { return pub.has(bMsgs[0].ReservationID) },
		"the other activity's reservation %s published while the first journal is in trouble", bMsgs[0].ReservationID)
	testwait.Eventually(t, 30*time.Second, func() bool { return pub.has(aMsgs[0].ReservationID) },
		"the troubled journal's reservation %s published once its group is back", aMsgs[0].ReservationID)
}

// TestHeldBatchKeepsItsHorizon: a batch read while the fsync horizon was ahead (a master on
// appendfsync everysec) is published only once the stream is seen to still hold it, even when
// the horizon has dropped to 0 by its next turn (Redis restarted on an AOF that lost the
// entries, on a configuration file saying always). Invariant: no entry read before a
// rollback is published after it.
func TestHeldBatchKeepsItsHorizon(t *testing.T) {
	t.Parallel()
	rdb := testsvc.Redis(t)
	ctx := context.Background()
	a := newTestActivity(t, rdb, nil, 1, 10)
	journal := inventory.Shard(a.id, 0, 0).Journal()
	// A horizon long enough that the batch is still held when the stream loses its entries
	// on a slow machine (checked below), short enough that its next turn comes soon.
	const held = 8 * time.Second
	var horizon atomic.Int64
	horizon.Store(int64(held))
	pub := &recordingPublisher{}
	relay := must(NewRelay(rdb, pub, RelayOptions{InstanceID: uniq("r"), JournalsKey: a.journals, Discover: 50 * time.Millisecond,
		FsyncHorizon: func() time.Duration { return time.Duration(horizon.Load()) }}, testMetrics(), testLogger(t)))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	msgs := a.reserve(5)
	pending := func() int64 {
		p, err := rdb.XPending(ctx, journal, RelayGroup).Result()
		if err != nil {
			return -1
		}
		return p.Count
	}
	testwait.Eventually(t, 10*time.Second, func() bool { return pending() == 5 }, "the relay holds the 5 entries it read")
	// The rollback: the stream loses the entries, and the check now sees appendfsync always.
	ids, err := rdb.XRange(ctx, journal, "-", "+").Result()
	if err != nil || len(ids) != 5 {
		t.Fatalf("journal: %d entries, %v", len(ids), err)
	}
	for _, e := range ids {
		if err := rdb.XDel(ctx, journal, e.ID).Err(); err != nil {
			t.Fatal(err)
		}
	}
	horizon.Store(0)
	for _, m := range msgs {
		if pub.has(m.ReservationID) {
			t.Fatalf("%s published before the stream lost it: the machine took longer than the %v horizon", m.ReservationID, held)
		}
	}
	testwait.Eventually(t, held+10*time.Second, func() bool { return pending() == 0 }, "the held batch taken up again")
	for _, m := range msgs {
		if pub.has(m.ReservationID) {
			t.Errorf("%s published after the stream lost it", m.ReservationID)
		}
	}
}
