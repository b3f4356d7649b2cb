//go:build integration

package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/syncbuf"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// The periodic durability check (runDurabilityCheck) follows what the master provides: on a
// private Redis in mode aof, CONFIG SET appendonly no sets seckill_redis_durability_provided
// to 0 within a few check periods and logs one ERROR line however many checks see it, and
// CONFIG SET appendonly yes sets it back to 1 with one INFO line.
func TestDurabilityCheckFollowsAppendonly(t *testing.T) {
	t.Parallel()
	rp, opts := aofAlwaysOptions(t)
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

// aofAlwaysOptions starts a private Redis with appendonly yes and appendfsync always, and
// returns it and the options of an instance on it that checks its durability (mode aof)
// every 50 ms.
func aofAlwaysOptions(t *testing.T) (*redisProc, Options) {
	t.Helper()
	rp := startRedisProc(t, false, "--appendonly", "yes", "--appendfsync", "always")
	opts := realOptions(t)
	opts.RedisAddr = rp.addr()
	opts.RedisDurability = inventory.Durability{AOF: true}
	opts.durabilityCheckEvery = 50 * time.Millisecond
	return rp, opts
}

// lockedLog is a log sink safe for the instance's goroutines and the test's reads.
type lockedLog struct{ syncbuf.Buffer }

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

// The relay's fsync horizon follows the periodic durability check: a master started with
// appendfsync always needs none (an order reaches MySQL at once); once CONFIG SET makes it
// everysec, the relay holds each journal entry until it is inventory.EverysecHorizon old by
// Redis's clock (an entry younger may not be on disk yet); back on always, it holds none.
func TestRelayHorizonFollowsAppendfsync(t *testing.T) {
	t.Parallel()
	rp, opts := aofAlwaysOptions(t)
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "horizon")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	rdb := rp.client()
	// orderAfter reserves for user and says how long its order took to reach MySQL.
	orderAfter := func(user string) time.Duration {
		t.Helper()
		t0 := time.Now()
		a := ta.reserve(t, id, user, "k-"+user)
		if a.status != 202 {
			t.Fatalf("reserve %s: %d %v", user, a.status, a.body)
		}
		rid := a.body["reservationId"].(string)
		testwait.Eventually(t, 20*time.Second, func() bool { _, ok := ordersOf(t, id)[rid]; return ok },
			"the order of %s", rid)
		return time.Since(t0)
	}
	setFsync := func(v string, horizon time.Duration) {
		t.Helper()
		if err := rdb.ConfigSet(context.Background(), "appendfsync", v).Err(); err != nil {
			t.Fatal(err)
		}
		testwait.Eventually(t, 5*time.Second, func() bool { return ta.relayHorizon() == horizon },
			"the check has seen appendfsync %s: horizon %v", v, horizon)
	}
	// The writer and the relay's idle poll take well under a second (237 ms measured); an
	// entry held for the horizon reaches MySQL no sooner than the horizon after it was made,
	// which is the line between the two (wide, for a loaded machine).
	fast := inventory.EverysecHorizon - 10*time.Millisecond
	if d := orderAfter("u1"); d >= fast {
		t.Errorf("appendfsync always: the order took %v, want under %v (no horizon)", d, fast)
	}
	setFsync("everysec", inventory.EverysecHorizon)
	if d := orderAfter("u2"); d < fast {
		t.Errorf("after CONFIG SET appendfsync everysec: the order took %v, want the relay to hold its entry %v", d, inventory.EverysecHorizon)
	}
	setFsync("always", 0)
	if d := orderAfter("u3"); d >= fast {
		t.Errorf("back on appendfsync always: the order took %v, want under %v", d, fast)
	}
}
