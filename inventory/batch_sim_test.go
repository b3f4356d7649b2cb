package inventory

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// batchModel is the sequential model of one shard's reservations: what each would answer
// sent alone, one after the other (replay, then the per-user limit, then the stock, as
// inventory_reserve.lua decides with every limit of time and rate off).
type batchModel struct {
	stock, limit int
	held         map[string]int    // user -> units
	keys         map[string]string // user \x00 key -> reservation id ("" once reserved, id not yet seen)
}

// apply is the answer r gets, given the state, and the state after it.
func (m *batchModel) apply(r *batchReq) Code {
	k := r.user + "\x00" + r.key
	if _, ok := m.keys[k]; ok && r.key != "" {
		return Replayed
	}
	if m.held[r.user]+r.qty > m.limit {
		return AlreadyPurchased
	}
	if m.stock < r.qty {
		return SoldOut
	}
	m.stock -= r.qty
	m.held[r.user] += r.qty
	if r.key != "" {
		m.keys[k] = ""
	}
	return Reserved
}

// TestBatchSimulation is a seeded simulation of the group commit (batch.go): each step holds
// one reservation in flight and queues 1-8 more behind it in the same queue, from 12 users
// (limit 2, quantities 1 and 2, keys reused), on one shard of 20 units (it sells out) or, on a
// single node, where one call carries every shard's reservations, on four shards of 50 (none
// runs dry: the order of a refill is not the model's), with the batch size 2-8, and one fault: none,
// the batch's reply lost after it ran, the batch failing before it runs, or a queued
// request cancelled. Each answer must be the sequential model's (an error where the fault
// says so), a key must answer one reservation id for good, and after every step the ground
// truth must match the model: the stock key, every user's count in the users hash, one
// journal entry per reservation. A seed reproduces a run: SECKILL_BATCH_SEED, steps
// SECKILL_BATCH_STEPS (default 40).
func TestBatchSimulation(t *testing.T) {
	seed := time.Now().UnixNano() % 1_000_000
	if v := os.Getenv("SECKILL_BATCH_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	steps := 40
	if v := os.Getenv("SECKILL_BATCH_STEPS"); v != "" {
		steps, _ = strconv.Atoi(v)
	}
	t.Logf("seed %d, %d steps (rerun: SECKILL_BATCH_SEED=%d)", seed, steps, seed)
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		rng := rand.New(rand.NewSource(seed))
		s := newStore(t, rdb, Options{ReserveBatch: 2 + rng.Intn(7)}) // 1 has no queue
		const limit = 2
		stock, shards := int64(20), 1
		if s.ChecksIP() && rng.Intn(2) == 0 {
			stock, shards = 200, 4
		}
		t.Logf("%d shards, stock %d", shards, stock)
		a := mustCreate(t, s, openActivity(t, stock, limit, shards))
		m := &batchModel{stock: int(stock), limit: limit, held: map[string]int{}, keys: map[string]string{}}
		var users []string
		for i := 0; i < 12; i++ { // 24 units of limit for 20 of stock: it sells out
			users = append(users, fmt.Sprintf("u%d", i))
		}
		reserved := 0
		for step := 0; step < steps; step++ {
			h := newHoldHook(rdb, s)
			fault := rng.Intn(4) // 0 none, 1 reply lost, 2 failed before, 3 one queued cancelled
			h.lose = fault == 1
			h.failBefore = fault == 2
			pick := func() *batchReq {
				r := &batchReq{user: users[rng.Intn(len(users))], qty: 1 + rng.Intn(2)}
				if rng.Intn(2) == 0 {
					r.key = fmt.Sprintf("k%d", rng.Intn(3))
				}
				return r
			}
			first := pick()
			reqs := make([]*batchReq, 1+rng.Intn(8))
			for i := range reqs {
				reqs[i] = pick()
			}
			cancelled := -2 // none (-1 is the held one)
			if fault == 3 {
				cancelled = rng.Intn(len(reqs))
				c, cancel := context.WithCancel(ctxT(t))
				reqs[cancelled].ctx, reqs[cancelled].cancel = c, cancel
			}
			runHeld(t, s, h, a.ID, first, reqs)
			h.off()
			desc := fmt.Sprintf("step %d (seed %d, %d shards, batch size %d, fault %d)", step, seed, shards, s.opts.ReserveBatch, fault)
			check := func(i int, r *batchReq, batched bool) {
				t.Helper()
				if i == cancelled {
					if !errors.Is(r.err, context.Canceled) {
						t.Fatalf("%s: request %d cancelled in the queue: %+v %v", desc, i, r.res, r.err)
					}
					return
				}
				faulty := batched && (fault == 1 || fault == 2)
				var want Code
				if fault != 2 || !batched {
					want = m.apply(r) // it ran (a lost reply too)
				}
				if faulty {
					if r.err == nil {
						t.Fatalf("%s: request %d (%+v) answered %+v with its batch's call failed", desc, i, *r, r.res)
					}
					return
				}
				if r.err != nil || r.res.Code != want {
					t.Fatalf("%s: request %d (%s key %q qty %d): %+v %v, want %s", desc, i, r.user, r.key, r.qty, r.res, r.err, want)
				}
				if want == Reserved {
					reserved++
				}
				if r.key != "" && (want == Reserved || want == Replayed) {
					k := r.user + "\x00" + r.key
					if id := m.keys[k]; id == "" {
						m.keys[k] = r.res.ReservationID
					} else if id != r.res.ReservationID {
						t.Fatalf("%s: key %q of %s answered %s, then %s", desc, r.key, r.user, id, r.res.ReservationID)
					}
				}
			}
			check(-1, first, false)
			// Which went in a batch call: the queue is sent in batches of up to the size, in
			// order; a batch of one goes with the single script.
			var live []int
			for i := range reqs {
				if i != cancelled {
					live = append(live, i)
				}
			}
			inBatch := map[int]bool{}
			for j := 0; j < len(live); j += s.opts.ReserveBatch {
				end := min(j+s.opts.ReserveBatch, len(live))
				for _, i := range live[j:end] {
					inBatch[i] = end-j > 1
				}
			}
			for i, r := range reqs {
				check(i, r, inBatch[i])
			}
			// Ground truth.
			st := readState(t, rdb, a.ID)
			if st.remaining != int64(m.stock) {
				t.Fatalf("%s: stock key %d, model %d", desc, st.remaining, m.stock)
			}
			for _, u := range users {
				uh := s.UserHash(u)
				st, _, err := ReadUserState(ctxT(t), rdb, Shard(a.ID, 0, HomeShard(uh, shards)), uh)
				n := int(st.Held)
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Fatal(err)
				}
				if n != m.held[u] {
					t.Fatalf("%s: %s holds %d in Redis, model %d", desc, u, n, m.held[u])
				}
			}
			units := 0
			for _, n := range m.held {
				units += n
			}
			if int64(units) != stock-st.remaining || st.journal < int64(reserved) {
				t.Fatalf("%s: %d units held, stock down by %d, journal %d entries for %d answered reservations", desc, units, stock-st.remaining, st.journal, reserved)
			}
		}
	})
}
