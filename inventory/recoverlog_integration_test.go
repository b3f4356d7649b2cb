//go:build integration

package inventory

import (
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/syncbuf"
	"github.com/seckill/seckill/internal/testsvc"
)

// TestBackgroundSettleLogsNoFlood: the background pass that settles transfers in transit and
// retires old layouts (every 2 s) writes nothing for an activity whose Redis state is gone
// (the recovering state says that once), and while Redis is down at most one line per kind
// per 10 s: before, each pass wrote a line per activity and kind (2,502 of 2,543 lines in 5
// minutes of one recovering activity).
func TestBackgroundSettleLogsNoFlood(t *testing.T) {
	addr := testsvc.PrivateRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	var out syncbuf.Buffer
	s, err := New(rdb, Options{InstanceID: "i1"}, nil, slog.New(slog.NewTextHandler(&out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"gone-a", "gone-b"} {
		if _, _, err := s.Create(ctx, Activity{ID: id, Stock: 10, PerUserLimit: 1, Shards: 2, OpensAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, Meta(id)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		s.recoverAll(ctx)
	}
	if n := strings.Count(out.String(), "level=WARN"); n != 0 {
		t.Fatalf("%d warnings for activities whose Redis state is gone, want none:\n%s", n, out.String())
	}
	host, port, _ := strings.Cut(addr, ":")
	if b, err := exec.Command("redis-cli", "-h", host, "-p", port, "shutdown", "nosave").CombinedOutput(); err != nil && !strings.Contains(string(b), "closed") && len(b) > 0 {
		t.Logf("redis-cli shutdown: %v %s", err, b)
	}
	for i := 0; i < 5; i++ {
		s.recoverAll(ctx)
	}
	if n := strings.Count(out.String(), "settling transfers in transit failed"); n != 1 {
		t.Fatalf("%d lines of settling failures in 5 passes over 2 activities with Redis down, want 1:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "retiring old layouts failed"); n > 1 {
		t.Fatalf("%d lines of retiring failures in 5 passes with Redis down, want at most 1:\n%s", n, out.String())
	}
}
