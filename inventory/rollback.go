package inventory

import (
	"context"
	"fmt"
	"strconv"
)

// A Redis that came back rolled back (killed and started on an AOF that lacks its last
// second, under appendfsync everysec; a Cluster node failed over to a replica that lagged)
// keeps the activity's generation: nothing in its keys tells it from a healthy one. Its
// shards' reservation counters went back with it, so the next reservations would get numbers
// already handed out, and a buyer whose 202 was lost holds an id that would name another
// buyer's order. Each instance remembers the highest number it handed out per shard
// (layout.issued) and passes it to the reservation script, which refuses (before any write)
// on a shard whose counter is below it: in a healthy Redis the counter never goes below a
// number it gave. So the number is never handed out again, and no journal entry can make it
// another buyer's order (before, the second reservation was taken and only its answer was
// withheld: its entry still became an order under the first buyer's id). The activity is then
// fenced like a restore does (generationRolledBack in meta and in every shard of the layout):
// every instance refuses it until an operator restores it from MySQL. Invariant: no instance
// hands out a number it handed out before on the same shard; kept by the reserve script's
// check of ARGV[18] against the counter it increments. Numbers handed out by another instance
// are not known here: a fleet notices at the first reservation of an instance whose own
// numbers the rollback took back.

// generationRolledBack is the generation an instance that noticed a rollback leaves in meta
// and in the shards' generation keys.
const generationRolledBack = "rolledback"

// rolledBack fences the activity of e after its shard home of l answered that its counter
// is below a number this instance handed out there (see above): meta's generation (only
// while it is still the one e holds: a restore's fence stands) and the generation key of
// every shard of l become generationRolledBack, and this instance puts the activity in the
// recovering state at once (the others do at their next refresh, which sees meta's
// generation change). It returns the reservation's answer: nothing was taken, the activity
// is recovering.
func (s *Store) rolledBack(ctx context.Context, e *entry, l *layout, home int, counter int64) error {
	id := e.def.ID
	s.log.Error("Redis went back below a reservation number it handed out: it came back rolled back; the activity is fenced until it is restored from MySQL",
		"activity", id, "epoch", l.epoch, "shard", home, "counter", counter, "handedOut", l.issued[home].Load(),
		"restore", "POST /admin/v1/activities/"+id+"/restore")
	s.fenceRolledBack(ctx, e, l, "Redis rolled back: shard "+strconv.Itoa(home)+" went back below a reservation number it handed out")
	return fmt.Errorf("%w: shard %d of %s: its reservation counter went back (Redis rolled back)", ErrRecovering, home, id)
}

// fenceRolledBack writes the rolled-back fence (meta's generation while it is still e's, every
// shard of l) and puts e in the recovering state with reason.
func (s *Store) fenceRolledBack(ctx context.Context, e *entry, l *layout, reason string) {
	id := e.def.ID
	ctx = context.WithoutCancel(ctx) // a fence half written by a hang-up is retried only by the next rollback met
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
		s.log.Error("fencing the rolled-back activity failed; the next reservation that meets the rollback retries", "activity", id, "err", err)
	}
	k, ok := s.catalogOne(ctx, id)
	if !ok {
		k = e.def
		k.Generation = e.generation()
	}
	s.setRecovering(k, e, reason)
}
