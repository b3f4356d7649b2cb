//go:build integration

package journal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
)

// TestAckTrimsWhatTheGroupIsDoneWith drives one journal with random reads, claims and
// acknowledgements by three readers, on the real Redis and the cluster, with two faults
// beside them: the group destroyed and created again at the stream's start (as the relay does
// on NOGROUP), and a pending entry deleted behind the group's back. After every step it checks
// against the stream itself (XRANGE) and the stats hash:
//   - the journal holds exactly the entries not yet acknowledged (none lost): nothing leaves
//     before its acknowledgement, nothing acknowledged stays (so a group created again reads
//     none of them twice);
//   - each entry's units count as relayed once, however often it is acknowledged;
//   - once everything is read and acknowledged the journal is empty (a layout retires only
//     then: retire.go reads XLEN).
func TestAckTrimsWhatTheGroupIsDoneWith(t *testing.T) {
	for name, rdb := range testsvc.RedisServers(t) {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 6; seed++ {
				ackTrimRun(t, rdb, seed)
			}
		})
	}
}

type trimEntry struct {
	units int64
	state int // 0 never delivered, 1 pending, 2 acknowledged, 3 deleted behind the group's back
}

func ackTrimRun(t *testing.T, rdb redis.UniversalClient, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 43))
	act := fmt.Sprintf("trim-%d-%d", time.Now().UnixNano(), seed)
	k := inventory.Shard(act, 0, 0)
	t.Cleanup(func() { rdb.Del(context.Background(), k.Journal(), k.Stats()) })
	if err := rdb.XGroupCreateMkStream(ctx, k.Journal(), "relay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	readers := make([]*Reader, 3)
	for i := range readers {
		r, err := NewReader(rdb, "relay", "c"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = r
	}
	var ids []string // in stream order
	model := map[string]*trimEntry{}
	var relayed int64
	add := func(n int) {
		for range n {
			q := int64(1 + rng.IntN(3))
			id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Journal(), Values: []any{"e",
				fmt.Sprintf("%s.0.0.%d|%d|%d|1700000000000|0123456789abcdef0123456789abcdef||u", act, len(ids)+1, q, q)}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			model[id] = &trimEntry{units: q}
		}
	}
	check := func(step int, what string) {
		t.Helper()
		msgs, err := rdb.XRange(ctx, k.Journal(), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		present := map[string]bool{}
		for _, m := range msgs {
			present[m.ID] = true
		}
		for i, id := range ids {
			if e := model[id]; present[id] != (e.state < 2) {
				t.Fatalf("seed %d step %d (%s): entry %d (%s, state %d) in the journal: %v", seed, step, what, i, id, e.state, present[id])
			}
		}
		got, err := rdb.HGet(ctx, k.Stats(), "relayed").Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if got != relayed {
			t.Fatalf("seed %d step %d (%s): stats relayed %d, want %d", seed, step, what, got, relayed)
		}
	}
	ack := func(r *Reader, pick []string) {
		acks := make([]Ack, len(pick))
		var wantN, wantU int64
		for i, id := range pick {
			e := model[id]
			acks[i] = Ack{ID: id, Units: e.units}
			if e.state == 1 {
				e.state = 2
				wantN++
				wantU += e.units
			}
		}
		n, u, err := r.Ack(ctx, k.Journal(), acks)
		if err != nil || n != wantN || u != wantU {
			t.Fatalf("seed %d: ack %v: %d entries, %d units, %v; want %d, %d", seed, pick, n, u, err, wantN, wantU)
		}
		relayed += wantU
	}
	for step := range 150 {
		r := readers[rng.IntN(len(readers))]
		var what string
		switch op := rng.IntN(12); {
		case op < 3:
			what = "add"
			add(1 + rng.IntN(4))
		case op < 6:
			what = "read"
			got, err := r.Read(ctx, k.Journal(), 1+rng.IntN(4))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				if m := model[e.ID]; m == nil || m.state != 0 {
					t.Fatalf("seed %d step %d: read %s, not an entry never delivered", seed, step, e.ID)
				}
				model[e.ID].state = 1
			}
		case op < 7:
			what = "claim"
			got, err := r.Claim(ctx, k.Journal(), 0, 1+rng.IntN(4))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				if m := model[e.ID]; m == nil || m.state != 1 {
					t.Fatalf("seed %d step %d: claimed %s, not a pending entry", seed, step, e.ID)
				}
			}
		case op == 10:
			what = "regroup" // the entries still pending are delivered again
			if err := rdb.XGroupDestroy(ctx, k.Journal(), "relay").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.XGroupCreateMkStream(ctx, k.Journal(), "relay", "0").Err(); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if model[id].state == 1 {
					model[id].state = 0
				}
			}
		case op == 11:
			what = "lose" // the oldest pending entry deleted; it stays in the group's list until a claim drops it
			for _, id := range ids {
				if model[id].state == 1 {
					if err := rdb.XDel(ctx, k.Journal(), id).Err(); err != nil {
						t.Fatal(err)
					}
					model[id].state = 3
					break
				}
			}
		default:
			what = "ack"
			var pick []string // pending entries in any order, sometimes one acknowledged before
			for _, i := range rng.Perm(len(ids)) {
				if e := model[ids[i]]; e.state == 1 && rng.IntN(2) == 0 || e.state == 2 && rng.IntN(8) == 0 {
					pick = append(pick, ids[i])
				}
			}
			if len(pick) > 0 {
				ack(r, pick)
			}
		}
		check(step, what)
	}
	// drain: read what is left, acknowledge everything
	for {
		got, err := readers[0].Read(ctx, k.Journal(), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, e := range got {
			model[e.ID].state = 1
		}
	}
	var rest []string
	for _, id := range ids {
		if model[id].state == 1 {
			rest = append(rest, id)
		}
	}
	if len(rest) > 0 {
		ack(readers[1], rest)
	}
	check(-1, "drain")
	if n, err := rdb.XLen(ctx, k.Journal()).Result(); err != nil || n != 0 {
		t.Fatalf("seed %d: %d entries left once all were acknowledged (%v)", seed, n, err)
	}
}
