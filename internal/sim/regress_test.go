//go:build integration

package sim

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
)

// Scripted interleavings, one per defect of issue 9 in the reservation protocol. Each
// drives the public API (Reserve, Reshard, the writer, the compensator) through the fault
// hook, so it ran unchanged against the protocol before the fix, where it failed, and
// against the one after (docs/DESIGN.md, "Reservation protocol").

// fixed returns a simulation with no randomness left in the steps a test scripts.
func fixed(t *testing.T, stock int64, limit, shards int) *sim {
	return newSimWith(t, 1, rand.New(rand.NewSource(1)), stock, limit, shards, 8)
}

// userOn returns a user of s whose home shard among n is home.
func userOn(s *sim, n, home int) string {
	for i := 0; ; i++ {
		u := "h" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if inventory.HomeShard(s.store.UserHash(u), n) == home {
			return u
		}
	}
}

// sellShard sells every unit of shard i (of n) to buyers who live there, one unit each.
func (s *sim) sellShard(i, n int) {
	s.t.Helper()
	for b := 0; ; b++ {
		left, err := s.rdb.Get(s.ctx, inventory.Shard(s.aid, 0, i).Stock()).Int()
		if err != nil {
			s.t.Fatal(err)
		}
		if left == 0 {
			return
		}
		for inventory.HomeShard(s.store.UserHash(fmt.Sprint("seller", b)), n) != i {
			b++
		}
		s.mustReserve(fmt.Sprint("seller", b), "", 1, inventory.Reserved)
	}
}

// reserveParked starts a reservation that parks before its call number at, and returns it.
func (s *sim) reserveParked(u, key string, qty, at int) *req {
	s.t.Helper()
	p := &plan{parkAt: at, parked: make(chan struct{}), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.WithValue(s.ctx, planKey{}, p))
	r := &req{p: p, cancel: cancel, done: make(chan result, 1), user: u, key: key, qty: qty}
	go func() {
		res, err := s.store.Reserve(ctx, inventory.ReserveRequest{ActivityID: s.aid, UserID: u, IdempotencyKey: key, Quantity: qty})
		r.done <- result{res, err}
	}()
	select {
	case <-p.parked:
	case out := <-r.done:
		s.t.Fatalf("reservation of %s finished before call %d: %+v %v", u, at, out.res, out.err)
	}
	return r
}

func (s *sim) mustReserve(u, key string, qty int, want inventory.Code) string {
	s.t.Helper()
	res, err := s.store.Reserve(s.ctx, inventory.ReserveRequest{ActivityID: s.aid, UserID: u, IdempotencyKey: key, Quantity: qty})
	if err != nil || res.Code != want {
		s.t.Fatalf("reserve %s x%d key %q = %+v, %v; want %v", u, qty, key, res, err, want)
	}
	return res.ReservationID
}

func (s *sim) message(rid string) order.Message {
	s.t.Helper()
	for _, e := range s.journal() {
		if e.msg.ReservationID == rid {
			return e.msg
		}
	}
	s.t.Fatalf("%s not in the journal", rid)
	return order.Message{}
}

// Defect 1: a user's seq was the running unit count, lowered by a refund (or a released
// hold), so a purchase after a compensation reused the seq of a live order; the writer
// dead-lettered it as seq_conflict. Before the fix: the third reservation failed in the
// writer ("dead-letter" in settle).
func TestDefect1SeqNeverReused(t *testing.T) {
	s := fixed(t, 10, 2, 1)
	u := "buyer"
	a := s.mustReserve(u, "", 1, inventory.Reserved) // seq 1
	s.mustReserve(u, "", 1, inventory.Reserved)      // seq 2
	s.failed[a] = true
	if err := s.comp.Compensate(s.ctx, s.message(a), "test"); err != nil {
		t.Fatal(err)
	}
	s.mustReserve(u, "", 1, inventory.Reserved) // seq 3 now; seq 2 again before the fix
	s.settle()
}

// Defect 2: a compensation cut short after order_fail.lua left the record FAILED; the
// redelivered message was skipped as FAILED, so the refund and the compensations row never
// happened (a unit lost, the user blocked). Before the fix: "outcome" (FAILED without a
// compensation row) and "quota-count" in settle.
func TestDefect2CompensationResumes(t *testing.T) {
	s := fixed(t, 5, 1, 1)
	u := "buyer"
	rid := s.mustReserve(u, "", 1, inventory.Reserved)
	s.failed[rid] = true
	// The fail script runs, then its answer is lost (call 2, after the lock's SET, fails
	// after it ran).
	p := &plan{failAt: 2, after: true, parked: make(chan struct{}), release: make(chan struct{})}
	if err := s.comp.Compensate(context.WithValue(s.ctx, planKey{}, p), s.message(rid), "test"); err == nil {
		t.Fatal("the injected fault did not cut the compensation short")
	}
	// The writer's next delivery of the message must finish it.
	if err := s.w.Handle(s.ctx, []order.Message{s.message(rid)}); err != nil {
		t.Fatal(err)
	}
	s.checkSettled()
	s.mustReserve(u, "", 1, inventory.Reserved)
}

// Suspected, confirmed: a refund after a reshard went to the user's home shard of the
// reservation's epoch, which the reshard had already copied away, so the user stayed at
// the limit for good. Before the fix: ALREADY_PURCHASED for a limit-1 user whose only
// reservation was compensated (sim seeds 1, 2, 4, 7, ...).
func TestRefundAfterReshardReachesCurrentHome(t *testing.T) {
	s := fixed(t, 10, 1, 2)
	u := "buyer"
	rid := s.mustReserve(u, "", 1, inventory.Reserved)
	if err := s.store.Reshard(s.ctx, s.aid, 3); err != nil {
		t.Fatal(err)
	}
	s.failed[rid] = true
	if err := s.comp.Compensate(s.ctx, s.message(rid), "test"); err != nil {
		t.Fatal(err)
	}
	s.mustReserve(u, "", 1, inventory.Reserved)
	s.settle()
}

// Defect 4: a reshard while a reservation was between its two shards (a hold on the home
// shard, the take elsewhere) copied the held count to the new home shard and released it on
// the old one only: the limit-1 user got ALREADY_PURCHASED with an empty id forever. The
// request parks before its second Redis call (after the hold; now after the home shard
// answered EMPTY), the reshard runs, the request goes on.
func TestDefect4ReshardDuringSplitReservation(t *testing.T) {
	s := fixed(t, 4, 1, 2)
	u := userOn(s, 2, 0)
	s.sellShard(0, 2)
	r := s.reserveParked(u, "", 1, 2)
	if err := s.store.Reshard(s.ctx, s.aid, 3); err != nil {
		t.Fatal(err)
	}
	close(r.p.release)
	out := <-r.done
	s.logf("parked reservation: %+v %v", out.res, out.err)
	if out.err == nil && out.res.Code == inventory.Reserved {
		s.mustReserve(u, "", 1, inventory.AlreadyPurchased)
	} else {
		s.mustReserve(u, "", 1, inventory.Reserved)
	}
	s.settle()
}

// Defect 5: with the same setup, the idempotency binding was written by the hold commit on
// the old home shard after the reshard copied the hashes, so a replay of the key on the new
// layout made a second reservation.
func TestDefect5ReshardKeepsIdempotencyBinding(t *testing.T) {
	for _, at := range []int{2, 3, 4} {
		s := fixed(t, 6, 2, 2)
		u := userOn(s, 2, 0)
		s.sellShard(0, 2)
		r := s.reserveParked(u, "key", 1, at)
		if err := s.store.Reshard(s.ctx, s.aid, 3); err != nil {
			t.Fatal(err)
		}
		close(r.p.release)
		out := <-r.done
		if out.err != nil || out.res.Code != inventory.Reserved {
			t.Fatalf("park at %d: reservation = %+v, %v", at, out.res, out.err)
		}
		again := s.mustReserve(u, "key", 1, inventory.Replayed)
		if again != out.res.ReservationID {
			t.Fatalf("park at %d: key replayed as %s, first %s", at, again, out.res.ReservationID)
		}
		s.settle()
	}
}

// Defect 6: a client hang-up between the hold and the take returned before the hold was
// released, so the quota stayed held for good (and a Redis error on the take did the
// same: sim seeds 11 and 35). The request parks before its second call and is cancelled.
func TestDefect6HangUpMidReservation(t *testing.T) {
	for _, fault := range []string{"hangup", "redis"} {
		s := fixed(t, 4, 1, 2)
		u := userOn(s, 2, 0)
		s.sellShard(0, 2)
		if fault == "hangup" {
			r := s.reserveParked(u, "", 1, 2)
			r.cancel()
			close(r.p.release)
			out := <-r.done
			if out.err == nil {
				t.Fatalf("hung-up reservation answered %+v", out.res)
			}
		} else {
			p := &plan{failAt: 2, parked: make(chan struct{}), release: make(chan struct{})}
			_, err := s.store.Reserve(context.WithValue(s.ctx, planKey{}, p), inventory.ReserveRequest{ActivityID: s.aid, UserID: u, Quantity: 1})
			if err == nil {
				t.Fatal("the injected fault was not seen")
			}
		}
		settleHook(s) // transfers a hung-up request left in transit
		s.mustReserve(u, "", 1, inventory.Reserved)
		s.settle()
	}
}

// Defect 12: a quantity above 1 was never split across shards, so a user asking for 2 got
// SOLD_OUT while the activity had 2 units, one on each shard.
func TestDefect12QuantityAcrossShards(t *testing.T) {
	s := fixed(t, 2, 2, 2)
	s.mustReserve("buyer", "", 2, inventory.Reserved)
	s.settle()
}
