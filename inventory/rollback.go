package inventory

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// A Redis that came back rolled back (killed and started on an AOF that lacks its last
// second, under appendfsync everysec) keeps the activity's generation: nothing in its keys
// tells it from a healthy one. Its shards' reservation counters went back with it, so the
// next reservations get numbers already handed out, and a buyer whose 202 was lost holds an id
// that would name another buyer's order. Each instance remembers every number it handed out
// per shard (numberSet, a bit per number: numbers are dense from 1); a number handed out a
// second time can only come from a counter that went back. That reservation is not answered
// as a 202 (ErrNotDurable: 503 OUTCOME_UNKNOWN with its key, which a restore then resolves)
// and the activity is fenced like a restore does (generationRolledBack in meta and in every
// shard of the layout): every instance refuses it until an operator restores it from MySQL.
// Numbers handed out by another instance are not known here: a fleet notices at the first
// number one of its instances handed out before.

// generationRolledBack is the generation an instance that noticed a rollback leaves in meta
// and in the shards' generation keys.
const generationRolledBack = "rolledback"

// numberSet is a set of reservation numbers, a bit each. Safe for concurrent use.
type numberSet struct {
	mu   sync.Mutex
	bits []uint64
}

// add adds n and reports whether it was there already.
func (b *numberSet) add(n int64) bool {
	if n <= 0 {
		return false
	}
	w, bit := int(n/64), uint64(1)<<(n%64)
	b.mu.Lock()
	defer b.mu.Unlock()
	if w >= len(b.bits) {
		b.bits = append(b.bits, make([]uint64, w+1-len(b.bits)+len(b.bits)/2)...)
	}
	had := b.bits[w]&bit != 0
	b.bits[w] |= bit
	return had
}

// handedBefore records that this instance handed out rid on shard i of l and reports whether
// it had handed out that number before.
func (l *layout) handedBefore(i int, rid string) bool {
	j := strings.LastIndexByte(rid, '.')
	n, err := strconv.ParseInt(rid[j+1:], 10, 64)
	if err != nil {
		return false
	}
	return l.handed[i].add(n)
}

// rolledBack fences the activity of e after its shard handed out rid's number a second time
// (see above): meta's generation (only while it is still the one e holds: a restore's fence
// stands) and the generation key of every shard of l become generationRolledBack, and this
// instance puts the activity in the recovering state at once (the others do at their next
// refresh, which sees meta's generation change). It returns the reservation's answer: not
// known to be durable.
func (s *Store) rolledBack(ctx context.Context, e *entry, l *layout, rid string) error {
	id := e.def.ID
	s.log.Error("Redis handed out a reservation number again: it came back rolled back; the activity is fenced until it is restored from MySQL",
		"activity", id, "reservation", rid, "restore", "POST /admin/v1/activities/"+id+"/restore")
	const fence = `if redis.call('HGET', KEYS[1], 'gen') == ARGV[1] then redis.call('HSET', KEYS[1], 'gen', ARGV[2]) return 1 end return 0`
	err := s.rdb.Eval(ctx, fence, []string{Meta(id)}, e.generation(), generationRolledBack).Err()
	pipe := s.rdb.Pipeline()
	for _, k := range l.keys {
		pipe.Set(ctx, k.Gen(), generationRolledBack, 0)
	}
	if _, perr := pipe.Exec(ctx); err == nil {
		err = perr
	}
	if err != nil {
		s.log.Error("fencing the rolled-back activity failed; the next reservation that gets a number again retries", "activity", id, "err", err)
	}
	k, ok := s.catalogOne(ctx, id)
	if !ok {
		k = e.def
		k.Generation = e.generation()
	}
	s.setRecovering(k, e, "Redis rolled back: a reservation number was handed out again")
	return fmt.Errorf("%w: reservation %s: its number was handed out before (Redis rolled back)", ErrNotDurable, rid)
}
