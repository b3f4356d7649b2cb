package order

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/syncbuf"
)

// deadRedis returns a client of an address nobody listens on.
func deadRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1, DialerRetries: 1,
		DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestRelayWithRedisDownLogsOnce runs a relay against a Redis that is down for 2 s: one
// "reading the journal list failed" line however many rounds fail, and the go-redis client's
// own lines arrive as structured JSON records through the service's logger, also once. Not
// parallel: it installs the process-wide go-redis logger.
func TestRelayWithRedisDownLogsOnce(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	redis.SetLogger(NewRedisLogger(log))
	t.Cleanup(func() { redis.SetLogger(NewRedisLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))) })
	m := testMetrics()
	q := NewMemQueue(1, nil)
	t.Cleanup(func() { q.Close() })
	r := must(NewRelay(deadRedis(t), q, RelayOptions{InstanceID: uniq("r"), Poll: 10 * time.Millisecond,
		Discover: 10 * time.Millisecond, JournalsKey: uniq("test:journals")}, m, log))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	fails := metricValue(m.RelayErrors.WithLabelValues("discover"))
	if fails < 5 {
		t.Fatalf("only %v failed discover rounds in 2 s", fails)
	}
	recs := buf.Records(t)
	if n, _ := syncbuf.Count(recs, "reading the journal list failed", "suppressed"); n != 1 {
		t.Fatalf("%d lines for %v failed rounds, want 1", n, fails)
	}
	n, _ := syncbuf.Count(recs, "redis client", "suppressed")
	if n == 0 {
		t.Fatal("no go-redis client line came through the structured logger")
	}
	if n > 2 {
		t.Fatalf("%d go-redis client lines in 2 s, want at most one per kind", n)
	}
}
