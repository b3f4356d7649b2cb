//go:build integration

package order

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/syncbuf"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// TestRelayOneBrokenJournalLogsOnce runs the relay on the real Redis over two journals; once
// both are discovered, one of them breaks for good (its key replaced by one of another type,
// as a journal on a dead cluster node would fail): the failure is logged once, not a failure
// and a recovery line every poll, and the other journal keeps being relayed.
func TestRelayOneBrokenJournalLogsOnce(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	rdb := testsvc.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	journals := uniq("test:journals")
	act := uniq("relaylog")
	good, broken := inventory.Shard(act, 0, 0).Journal(), inventory.Shard(act, 0, 1).Journal()
	for _, s := range []string{good, broken} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: []string{"x", "1"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.SAdd(ctx, journals, good, broken).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), journals, good, broken) })
	q := NewMemQueue(1, nil)
	t.Cleanup(func() { q.Close() })
	m := testMetrics()
	r := must(NewRelay(rdb, q, RelayOptions{InstanceID: uniq("r"), Poll: 10 * time.Millisecond,
		Discover: 10 * time.Millisecond, JournalsKey: journals}, m, log))
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// Both entries are bad journal entries (dead-lettered): once both are counted, both
	// journals were discovered and read.
	testwait.Eventually(t, 2*time.Second, func() bool { return metricValue(m.DeadLetters.WithLabelValues("bad_journal_entry")) >= 2 },
		"the relay read both journals")
	// One transaction: a relay poll between a DEL and a SET would find the journal missing
	// (a failure of its own, then a recovery) instead of broken.
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, broken)
		p.Set(ctx, broken, "not a stream", time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	recs := buf.Records(t)
	if n, _ := syncbuf.Count(recs, "relaying a journal failed", "suppressed"); n != 1 {
		t.Fatalf("%d failure lines for one journal broken for ~1 s, want 1", n)
	}
	if n, _ := syncbuf.Count(recs, "relaying journals works again", "suppressed"); n != 0 {
		t.Fatalf("%d recovery lines while a journal still fails, want 0", n)
	}
}
