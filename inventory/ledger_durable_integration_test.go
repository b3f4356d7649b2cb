//go:build integration

package inventory

import (
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
)

// In mode replicas:N a confirm or a fail that no replica acknowledged is not a success: the
// caller (the order writer) tries it again, so a failover cannot take back a confirm the
// writer already counted and leave the record PENDING beside its order. The test Redis has
// no replica, so every WAIT falls short: both verbs answer ErrNotDurable, and again when
// tried again, while without the mode they answer as before.
func TestLedgerSettlesDurably(t *testing.T) {
	rdb := testsvc.Redis(t)
	s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 1, 1))
	var rids []string
	for _, u := range []string{"a", "b"} {
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
		if err != nil || r.Code != Reserved {
			t.Fatalf("reserve %s: %+v, %v", u, r, err)
		}
		rids = append(rids, r.ReservationID)
	}
	l, err := NewLedger(rdb)
	if err != nil {
		t.Fatal(err)
	}
	l.SetDurability(Durability{Replicas: 1, Timeout: 20 * time.Millisecond})
	for i := 0; i < 2; i++ {
		if res, err := l.Confirm(ctx, []Confirmation{{ReservationID: rids[0], OrderID: 7}}); !errors.Is(err, ErrNotDurable) || res[0] != ConfirmUnknown {
			t.Fatalf("confirm %d without a replica: %v, %v; want ErrNotDurable", i, res, err)
		}
		if _, _, err := l.Fail(ctx, rids[1], s.UserHash("b")); !errors.Is(err, ErrNotDurable) {
			t.Fatalf("fail %d without a replica: %v; want ErrNotDurable", i, err)
		}
	}
	l.SetDurability(Durability{})
	if res, err := l.Confirm(ctx, []Confirmation{{ReservationID: rids[0], OrderID: 7}}); err != nil || res[0] != AlreadyConfirmed {
		t.Fatalf("confirm without the mode: %v, %v; want AlreadyConfirmed (the script ran)", res, err)
	}
	if code, _, err := l.Fail(ctx, rids[1], s.UserHash("b")); err != nil || code != AlreadyFailed {
		t.Fatalf("fail without the mode: %v, %v; want AlreadyFailed", code, err)
	}
}
