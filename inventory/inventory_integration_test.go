//go:build integration

package inventory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/testwait"
)

// TestThreeInstancesSellExactlyTheStock: three stores (instances) with their refreshers
// running share one Redis; each request is sent as admission sends it (not once the
// instance knows the activity sold out).
func TestThreeInstancesSellExactlyTheStock(t *testing.T) {
	forBackends(t, false, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithCancel(ctxT(t))
		var run sync.WaitGroup
		stores := make([]*Store, 3)
		// A namespace of their own: a refresh pass reads every activity of its namespace
		// (see TestRunLearnsAcrossInstances), and these refresh every 20 ms.
		ns := uniqueID(t)
		for i := range stores {
			stores[i] = newStore(t, rdb, Options{Namespace: ns, RefreshEvery: 20 * time.Millisecond})
			run.Add(1)
			go func() { defer run.Done(); _ = stores[i].Run(ctx) }()
		}
		defer func() { cancel(); run.Wait() }()
		a := mustCreate(t, stores[0], openActivity(t, 100, 2, 8))
		var units atomic.Int64
		rush(600, func(g int) {
			s := stores[g%3]
			qty := 1 + g%2
			if v, _ := s.Activity(a.ID); v.SoldOut {
				return // answered by admission from the instance's mark (app/admission.Admit)
			}
			r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprint("m", g/2), Quantity: qty})
			if err != nil {
				t.Error(err)
				return
			}
			if r.Code == Reserved {
				units.Add(int64(qty))
			}
		})
		st := readState(t, rdb, a.ID)
		if units.Load()+st.remaining != 100 || st.taken != units.Load() || st.minStock < 0 {
			t.Fatalf("units %d + remaining %d != 100 (taken %d)", units.Load(), st.remaining, st.taken)
		}
		if st.remaining != 0 {
			// Quantity 2 can leave single units behind; single-unit buyers take them.
			for i := 0; st.remaining > 0 && i < 200; i++ {
				if r, _ := stores[i%3].Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprint("tail", i), Quantity: 1}); r.Code == Reserved {
					st.remaining--
				}
			}
		}
		testwait.Eventually(t, time.Second, func() bool {
			for _, s := range stores {
				if v, _ := s.Activity(a.ID); !v.SoldOut || v.Remaining != 0 {
					return false
				}
			}
			return true
		}, "every instance sold out")

	})
}
