package order

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
)

// The reservations answered 202 that never reached MySQL: Redis lost their journal entries
// before the relay handed them to the queue. A shard's reservation numbers are 1, 2, 3, ...
// (the INCR of its seq key), so every number from 1 to the highest one handed out that has
// neither an order nor a compensation names such a reservation. The highest numbers come from
// what Redis still holds (the layouts' seq keys) and from the instances' own memory
// (inventory.IssuedKey: each instance reports the highest number it answered per shard while
// the activity is recovering). A reservation whose script ran but whose answer was lost with
// Redis (answered 503 OUTCOME_UNKNOWN) is listed too: its buyer may have it. A number is all
// MySQL can name: the process and call that handed it out (the id's issuer part,
// inventory.ReservationID) were in the lost entry only, so the listing gives reservation
// numbers, and a buyer's id is its number, a dot and the issuer. A number a rolled-back node
// handed out again to another buyer before the fence, whose order MySQL holds, is not listed:
// the first buyer lost theirs unseen here (GET of the first id answers 404).

// maxLostListed bounds the ids a reconciliation report lists (the count is always whole).
const maxLostListed = 1000

// LostReport is the part of the reconciliation about reservations lost with Redis.
type LostReport struct {
	Count        int64    `json:"count"`
	Reservations []string `json:"reservations"`
}

// lostReservations returns, sorted, the reservation numbers of activity id up to marks per
// (epoch, shard) that no id in known (the orders' and compensations' ids) has.
func lostReservations(id string, marks map[[2]int]int64, known []string) []string {
	have := map[[2]int]map[int64]bool{}
	for _, rid := range known {
		k, n, ok := inventory.ParseReservationID(rid)
		if !ok || k.Activity != id {
			continue
		}
		es := [2]int{k.Epoch, k.Shard}
		if have[es] == nil {
			have[es] = map[int64]bool{}
		}
		have[es][n] = true
		if n > marks[es] {
			marks[es] = n
		}
	}
	var out []string
	keys := make([][2]int, 0, len(marks))
	for es := range marks {
		keys = append(keys, es)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	for _, es := range keys {
		for n := int64(1); n <= marks[es]; n++ {
			if !have[es][n] {
				out = append(out, inventory.ReservationNumber(id, es[0], es[1], n))
			}
		}
	}
	return out
}

// recordLost adds rids to the activity's list of lost reservations (kept in Redis,
// inventory.LostKey) and sets the metric to the list's size.
func (r *Reconciler) recordLost(ctx context.Context, id string, rids []string) (int64, error) {
	key := inventory.LostKey(id)
	for from := 0; from < len(rids); from += 1000 {
		part := rids[from:min(from+1000, len(rids))]
		args := make([]any, len(part))
		for i, rid := range part {
			args[i] = rid
		}
		if err := r.rdb.SAdd(ctx, key, args...).Err(); err != nil {
			return 0, fmt.Errorf("order: record lost reservations: %w", err)
		}
	}
	n, err := r.rdb.SCard(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("order: count lost reservations: %w", err)
	}
	r.m.Lost.WithLabelValues(id).Set(float64(n))
	return n, nil
}

// lostReport reads the activity's list of lost reservations (at most maxLostListed ids,
// sorted) and refreshes the metric.
func (r *Reconciler) lostReport(ctx context.Context, id string) (*LostReport, error) {
	key := inventory.LostKey(id)
	n, err := r.rdb.SCard(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("order: count lost reservations: %w", err)
	}
	rep := &LostReport{Count: n, Reservations: []string{}}
	if n > 0 {
		ids, err := r.rdb.SRandMemberN(ctx, key, maxLostListed).Result()
		if n <= maxLostListed {
			ids, err = r.rdb.SMembers(ctx, key).Result()
		}
		if err != nil {
			return nil, fmt.Errorf("order: list lost reservations: %w", err)
		}
		sort.Slice(ids, func(i, j int) bool { return lessRID(ids[i], ids[j]) })
		rep.Reservations = ids
	}
	r.m.Lost.WithLabelValues(id).Set(float64(n))
	return rep, nil
}

// lessRID orders reservation ids and numbers by epoch, shard and number.
func lessRID(a, b string) bool {
	ka, na, oka := inventory.ParseReservationID(a)
	kb, nb, okb := inventory.ParseReservationID(b)
	if !oka || !okb {
		return strings.Compare(a, b) < 0
	}
	if ka.Epoch != kb.Epoch {
		return ka.Epoch < kb.Epoch
	}
	if ka.Shard != kb.Shard {
		return ka.Shard < kb.Shard
	}
	return na < nb
}
