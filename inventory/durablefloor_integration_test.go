//go:build integration

package inventory

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestUnacknowledgedCounterRaisesNoFloor: in mode replicas:1 a reservation whose WAIT fell
// short (answered OUTCOME_UNKNOWN) still took its number on the master; a failover may
// rightly lose it. The refresh read that number before the failover, and a floor raised over
// it made the new master look gone back: the activity was fenced, and every reservation
// answered RECOVERING until an operator restored it (TestDrillSentinelMasterKilled, now and
// then). Invariant: neither an unacknowledged reservation nor a refresh's read raises a
// floor, so the reservations after a failover resume.
func TestUnacknowledgedCounterRaisesNoFloor(t *testing.T) {
	t.Parallel()
	master := testsvc.PrivateRedis(t)
	replica := testsvc.PrivateReplica(t, master)
	// The store's client dials whichever node is the master now (what Sentinel's client does).
	var at atomic.Value
	at.Store(master)
	rdb := redis.NewClient(&redis.Options{Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, at.Load().(string))
	}, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	s, a, ctx := storeWith(t, rdb, Options{Durability: Durability{Replicas: 1, Timeout: time.Second}}, openActivity(t, 10, 1, 1))
	reserve := func(u string) (ReserveResult, error) {
		return s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
	}
	if r, err := reserve("u1"); err != nil || r.Code != Reserved {
		t.Fatalf("u1: %+v %v", r, err)
	}
	// The replica stops following; u2's reservation runs on the master alone.
	rc := redis.NewClient(&redis.Options{Addr: replica})
	t.Cleanup(func() { rc.Close() })
	if err := rc.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := reserve("u2"); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("u2 without a replica: %+v %v, want ErrNotDurable", r, err)
	}
	mustRefresh(ctx, t, s) // reads the master's counter, u2's number in it
	// The failover: the former replica (without u2's reservation) is the master, with a
	// replica of its own; the old master is gone.
	testsvc.PrivateReplica(t, replica)
	at.Store(replica)
	mc := redis.NewClient(&redis.Options{Addr: master})
	t.Cleanup(func() { mc.Close() })
	_ = mc.ShutdownNoSave(ctx).Err() // its connections drop; the store dials the new master
	var r ReserveResult
	var err error
	testwait.Eventually(t, 10*time.Second, func() bool {
		r, err = reserve("u3")
		return err == nil || errors.Is(err, ErrRecovering)
	}, "u3 answered on the new master (last %v)", testwait.Lazy(func() string { return err.Error() }))
	if err != nil || r.Code != Reserved {
		t.Fatalf("u3 on the new master: %+v %v, want Reserved (the lost number was never acknowledged)", r, err)
	}
	if v, ok := s.Activity(a.ID); !ok || v.Recovering {
		t.Fatalf("activity %+v (known %v) after the failover, want it live", v, ok)
	}
}
