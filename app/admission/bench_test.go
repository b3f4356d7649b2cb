package admission

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
)

// benchStock is a Stock whose reservation script answers res without Redis; checksIP says
// whether the script takes the per-IP token (a single node).
type benchStock struct {
	Stock    // nil: only Reserve and ChecksIP are called
	res      inventory.ReserveResult
	checksIP bool
}

func (s *benchStock) ChecksIP() bool { return s.checksIP }
func (s *benchStock) Reserve(context.Context, inventory.ReserveRequest) (inventory.ReserveResult, error) {
	return s.res, nil
}

// BenchmarkAdmitReserve measures the admission step of one reservation, Admit then Reserve,
// over a stock that answers at once (the script's cost is inventory's): the per-IP plan,
// the limiter's decision (leased budgets, on miniredis), and what Reserve does with the
// script's answer (refunds, the memory of rejects, the limiter's counts).
func BenchmarkAdmitReserve(b *testing.B) {
	mr := miniredis.RunT(b)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	b.Cleanup(func() { rdb.Close() })
	lim, err := limiter.New(rdb, limiter.Options{InstanceID: "bench"}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Decode([]byte(generous))
	if err != nil {
		b.Fatal(err)
	}
	p := NewPolicy(cfg)
	now := time.Now()
	v := inventory.ActivityView{Activity: inventory.Activity{ID: "bench", PerUserLimit: 1, OpensAt: now.Add(-time.Minute)}}
	v4, v6 := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8:1:2:3:4:5:6")
	for _, c := range []struct {
		name     string
		addr     netip.Addr
		res      inventory.ReserveResult
		checksIP bool
	}{
		{"reserved/ip-in-script", v4, inventory.ReserveResult{Code: inventory.Reserved, ReservationID: "r1"}, true},
		{"reserved/ipv6/ip-in-script", v6, inventory.ReserveResult{Code: inventory.Reserved, ReservationID: "r1"}, true},
		{"sold-out/ip-in-script", v4, inventory.ReserveResult{Code: inventory.SoldOut}, true},
		{"user-rate/ip-in-script", v4, inventory.ReserveResult{Code: inventory.UserRateLimited, RetryAfter: time.Nanosecond}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			st := &benchStock{res: c.res, checksIP: c.checksIP}
			g := NewGate(st, lim, nil, nil, func() time.Time { return now }, nil)
			ctx := context.Background()
			r := &Request{Kind: ForReservation, Activity: v, UserID: "u", Addr: c.addr, Quantity: 1, IdempotencyKey: "k"}
			b.ReportAllocs()
			for b.Loop() {
				adm, err := g.Admit(ctx, p, r)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = g.Reserve(ctx, &adm)
			}
		})
	}
}
