//go:build integration

package inventory

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/internal/testsvc"
)

// TestKeylessRetryRecordsItsNumber: a reservation without an idempotency key whose reply was
// lost is sent again by go-redis, and the second run answers the first run's reservation
// (its attempt binding). That number was handed out by this instance like any other: it must
// join the instance's set of numbers handed out, or a Redis that came back rolled back hands
// it to the next buyer unnoticed (two buyers, one reservation id; rollback.go).
func TestKeylessRetryRecordsItsNumber(t *testing.T) {
	testsvc.Redis(t) // the server is there
	var armed atomic.Bool
	var marker []byte
	rdb := replyLostClient(t, testsvc.RedisAddr, &armed, &marker)
	ctx := ctxT(t)
	s, _, a := oneInstance(ctx, t, rdb, openActivity(t, 10, 5, 1), Options{})
	marker = []byte(s.reserve.s.Hash())
	if res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "warm", Quantity: 1}); err != nil || res.Code != Reserved {
		t.Fatalf("warm-up: %+v %v", res, err)
	}
	armed.Store(true)
	first, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u1", Quantity: 1})
	if armed.Load() {
		t.Fatal("setup: the reservation command was never sent through the armed connection")
	}
	if err != nil || first.Code != Reserved {
		t.Fatalf("keyless reservation with its reply lost: %+v %v, want RESERVED", first, err)
	}
	k := Shard(a.ID, 0, 0)
	if err := rdb.Set(ctx, k.Seq(), 1, 0).Err(); err != nil { // the rollback: u1's number is free again
		t.Fatal(err)
	}
	res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "u2", Quantity: 1})
	// The rollback noticed: refused before any write (the counter is below the number the
	// call carries, ErrRecovering), or, for a call built before, failed and not answered.
	if !errors.Is(err, ErrRecovering) && !errors.Is(err, ErrNotDurable) {
		t.Fatalf("u2 given the number of u1's retried reservation %s: %+v %v, want ErrRecovering (the rollback noticed)",
			first.ReservationID, res, err)
	}
}
