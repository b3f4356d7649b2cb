//go:build integration

package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// The periodic durability check (runDurabilityCheck) follows what the master provides: on a
// private Redis in mode aof, CONFIG SET appendonly no sets seckill_redis_durability_provided
// to 0 within a few check periods and logs one ERROR line however many checks see it, and
// CONFIG SET appendonly yes sets it back to 1 with one INFO line.
func TestDurabilityCheckFollowsAppendonly(t *testing.T) {
	t.Parallel()
	rp := startRedisProc(t, false, "--appendonly", "yes", "--appendfsync", "always")
	opts := realOptions(t)
	opts.RedisAddr = rp.addr()
	opts.RedisDurability = inventory.Durability{AOF: true}
	opts.durabilityCheckEvery = 50 * time.Millisecond
	var logs lockedLog
	ta := startAppLogged(t, opts, testConfig, slog.New(slog.NewTextHandler(&logs, nil)))
	ta.waitReady(t)
	const gauge = `seckill_redis_durability_provided{mode="aof"}`
	if v := scrapeSum(t, ta, gauge); v != 1 {
		t.Fatalf("%s %v at start on appendonly yes, want 1", gauge, v)
	}
	const lost, back = `level=ERROR msg="redis no longer provides the durability mode"`, `level=INFO msg="redis provides the durability mode again"`

	rdb := rp.client()
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, func() bool { return scrapeSum(t, ta, gauge) == 0 },
		"%s 0 after CONFIG SET appendonly no", gauge)
	time.Sleep(10 * opts.durabilityCheckEvery) // more checks that still see it
	if n := logs.count(lost); n != 1 {
		t.Errorf("%d lines %s after appendonly no, want 1; the log:\n%s", n, lost, logs.String())
	}
	if n := logs.count(back); n != 0 {
		t.Errorf("%d lines %s while appendonly is off, want 0", n, back)
	}

	if err := rdb.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, func() bool { return scrapeSum(t, ta, gauge) == 1 },
		"%s 1 after CONFIG SET appendonly yes", gauge)
	time.Sleep(10 * opts.durabilityCheckEvery)
	if n := logs.count(back); n != 1 {
		t.Errorf("%d lines %s after appendonly yes, want 1; the log:\n%s", n, back, logs.String())
	}
	if n := logs.count(lost); n != 1 {
		t.Errorf("%d lines %s in all, want 1", n, lost)
	}
}

// lockedLog is a log sink safe for the instance's goroutines and the test's reads.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// count is how many lines hold s.
func (l *lockedLog) count(s string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}
