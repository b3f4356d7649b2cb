package inventory

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/syncbuf"
)

// brokenMeta names in namespace ns's set of activities a new one whose meta is a string (a
// key of the wrong type), and returns its id.
func brokenMeta(t *testing.T, rdb redis.UniversalClient, ns string) string {
	t.Helper()
	ctx := ctxT(t)
	broken := uniqueID(t) + "-broken"
	set := keyspace.Namespaced(ns, keyspace.Activities)
	if err := rdb.SAdd(ctx, set, broken).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, Meta(broken), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rdb.Del(context.Background(), Meta(broken))
		rdb.SRem(context.Background(), set, broken)
	})
	return broken
}

// TestOneBrokenMetaDoesNotStopTheRefresh: a meta key of the wrong type (an operator's SET, a
// restore from a bad dump) is that activity's problem alone. The other activities' refresh
// goes on: another instance's sales lower this one's remaining and mark the sale sold out,
// so the instance stops sending its requests to the stock scripts.
func TestOneBrokenMetaDoesNotStopTheRefresh(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := ctxT(t)
		x, y, a := twoInstances(ctx, t, rdb, openActivity(t, 2, 1, 1), Options{})
		brokenMeta(t, rdb, x.opts.Namespace)
		mustReserve(ctx, t, y, "y", a.ID, "u1")
		mustReserve(ctx, t, y, "y", a.ID, "u2")
		if keys, err := x.refresh(ctx); keys == nil || err != nil {
			t.Fatalf("a refresh beside a meta of the wrong type: unreadable keys %v, failure %v; want the key named and no failure", keys, err)
		}
		v, ok := x.Activity(a.ID)
		if !ok {
			t.Fatal("the activity was dropped")
		}
		if v.Remaining != 0 || !v.SoldOut {
			t.Fatalf("after another instance sold the stock, a refresh beside a broken meta reads remaining %d, sold out %v; want 0, true", v.Remaining, v.SoldOut)
		}
	})
}

// TestRunWarnsOfABrokenKeyApartFromFailing: the refresh loop names a key it cannot read, and
// does not call the refresh failing for it (that line is the outage's, logged once when it
// starts and once when it ends: a broken key taken for one would hide a real outage).
func TestRunWarnsOfABrokenKeyApartFromFailing(t *testing.T) {
	rdb := miniRedis(t)
	var out syncbuf.Buffer
	ns := uniqueID(t)
	s, err := New(rdb, Options{Namespace: ns, RefreshEvery: 20 * time.Millisecond}, nil, slog.New(slog.NewTextHandler(&out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	broken := brokenMeta(t, rdb, ns)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	log := out.String()
	if !strings.Contains(log, "skipped activities whose keys it cannot read") || !strings.Contains(log, broken) {
		t.Errorf("the log does not name the unreadable meta of %s:\n%s", broken, log)
	}
	if strings.Contains(log, "inventory refresh failing") {
		t.Errorf("a broken key was logged as the refresh failing:\n%s", log)
	}
}
