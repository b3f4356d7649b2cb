package inventory

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lua"
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
// hands out a number it handed out or read before on the same shard; kept by the reserve
// script's check of ARGV[16] against the counter it increments. Numbers handed out by another
// instance are not known here: a fleet notices at the first reservation of an instance whose
// own numbers the rollback took back. A number handed out again is another id (the id's
// issuer part, keys.go ReservationID): no id is handed out twice, and MySQL's guard refuses a
// unit sold twice (docs/DESIGN.md, "MySQL has the last word").

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
	ctx = context.WithoutCancel(ctx) // a fence half written by a hang-up is retried by the refresh (refence)
	if err := s.writeFence(ctx, id, e.generation(), l); err != nil {
		s.log.Error("fencing the rolled-back activity failed; the next refresh retries it on meta", "activity", id, "err", err)
	}
	k, ok, _ := s.catalogOne(ctx, id) // a failed read: as unknown (the next refresh decides again)
	if !ok && strings.HasSuffix(reason, fencedElsewhere) && s.opts.Catalog != nil {
		return // MySQL does not know it: not an activity this deployment restores (checkLost)
	}
	if !ok {
		k = e.def
		k.Generation = e.generation()
	}
	if k.Generation != e.generation() {
		// MySQL names another generation than this instance's view: a restore moved the
		// activity on (the rolled-back fence met is the old layout's). The meta write above
		// was a no-op; the lookup applies the restored activity.
		s.log.Info("a rolled-back fence met on a layout from before a restore: not fencing", "activity", id,
			"generation", e.generation(), "catalog", k.Generation, "reason", reason)
		return
	}
	s.setRecovering(k, e, reason)
	if r := e.recovering.Load(); r != nil {
		r.fenced.Store(true)
	}
}

// writeFence writes the rolled-back fence: meta's generation while it is still gen (a
// restore's fence stands), and the generation key of every shard of l.
func (s *Store) writeFence(ctx context.Context, id, gen string, l *layout) error {
	_, err := fenceMeta(ctx, s.rdb, s.fence, id, gen)
	if serr := fenceShards(ctx, s.rdb, l.keys); err == nil {
		err = serr
	}
	return err
}

// fenceMeta writes the rolled-back fence in meta's generation while it is gen (gen "", an
// activity from before generations: while meta exists and names none), and reports whether
// meta holds the fence now (written here or before). Meta naming another generation (a
// restore's fence, a restored state) is left alone.
// sc is inventory_fence_meta.lua, which the Store and the Ledger each load.
func fenceMeta(ctx context.Context, rdb redis.UniversalClient, sc *lua.Script, id, gen string) (bool, error) {
	n, err := sc.Run(ctx, rdb, []string{Meta(id)}, generationRolledBack, gen).Int()
	if err != nil {
		return false, fmt.Errorf("inventory: fence %s: %w", id, err)
	}
	return n == 1, nil
}

// fenceShards writes the rolled-back fence in the generation key of every shard of keys.
func fenceShards(ctx context.Context, rdb redis.UniversalClient, keys []ShardKeys) error {
	pipe := rdb.Pipeline()
	for _, k := range keys {
		pipe.Set(ctx, k.Gen(), generationRolledBack, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("inventory: fence shards: %w", err)
	}
	return nil
}

// refence writes the rolled-back fence again after meta's node lost it: meta (read as m)
// names r's generation again, the one this instance fenced when it met the rollback, so every
// other instance, and this one's writer waiting for a reshard m may still record, would take
// the activity for a live one (TestFenceLostWithASecondLossIsWrittenAgain). The layout m
// names is fenced with it. Only while meta holds that generation: a restore moved it on.
func (s *Store) refence(ctx context.Context, e *entry, m meta, r *recovering) {
	id := e.def.ID
	s.log.Error("the rolled-back fence is gone from meta (its node went back again): writing it again",
		"activity", id, "epoch", m.epoch, "reason", r.reason,
		"restore", "POST /admin/v1/activities/"+id+"/restore")
	if err := s.writeFence(ctx, id, r.gen, newLayout(id, m.epoch, m.shards)); err != nil {
		s.log.Error("writing the rolled-back fence again failed; the next refresh retries", "activity", id, "err", err)
	}
}

// A refill's debit is lost in another way: the source's node goes back to before the debit
// (a Cluster master failed over to a replica that lagged) while the target's node keeps the
// credit, and sells it. The source then holds the units again, and if it never sold, no
// number is handed out twice. So the debit raises a mark in the source's generation key
// naming the debit ("<gen>" -> "<gen>#1.<transfer id>" -> "<gen>#2.<id>" ...,
// inventory_transfer.lua), records it in the source's history (stats field "m:<mark>", in
// the same script) and returns it; the instance keeps it (layout.marks) and passes it to
// every reservation and debit on that shard, which refuse a shard holding another mark
// (answer 13 with the mark held and whether the caller's is in the history). A caller's mark
// in the history was raised since (by another instance's debit): the shard's mark is taken
// and the call sent again. A mark not in the history, or a shard with no generation key where
// this instance met one before (it sold or debited there), is a node that went back: the
// activity is fenced. A count alone does not tell: after X's debit to "#1" was lost, Y (which
// had not seen it) debits the shard to "#1" again, and X's record would match
// (TestRaisedMarkHandedOutTwice); the transfer id, unique per debit (it carries the
// instance's incarnation), does. Invariant: no unit a debit took is taken again from its
// source, by a reservation or a debit of an instance that saw the debit or any later call on
// the source; kept by the debit's raise and the scripts' checks of the mark and history.
// Another instance's stale view (it never called the source since the debit) is not
// covered: in a fleet, the durability modes are what keeps a debit from being lost (every
// transfer script runs through Durability).
//
// Marks of the release before (a count without a debit's id, "<gen>#3") are read as before:
// a higher count was raised since. An instance of that release reads a mark with an id as
// another generation and answers that shard RECOVERING until it is upgraded (nothing is
// sold twice either way).

// mark is the generation mark the reservation and transfer scripts are given for shard i
// of l: the one last seen raised or met there, else the activity's generation.
func (l *layout) mark(i int, e *entry) *string {
	if m := l.marks[i].Load(); m != nil {
		return m
	}
	if g := e.gen.Load(); g != nil {
		return g
	}
	return &noGeneration
}

// seen reports whether this instance met the generation key of shard i of l: it recorded a
// mark there or handed out a number (the script sells only on a shard holding one).
func (l *layout) seen(i int) bool { return l.marks[i].Load() != nil || l.issued[i].Load() > 0 }

// splitMark splits a generation mark into its generation, its count ("<gen>" is count 0)
// and the id of the debit that raised it ("" for "<gen>" and for a mark of the release
// before, "<gen>#<count>"). A generation holds no '#'.
func splitMark(m string) (base string, n int64, id string) {
	i := strings.IndexByte(m, '#')
	if i < 0 {
		return m, 0, ""
	}
	count := m[i+1:]
	if j := strings.IndexByte(count, '.'); j >= 0 {
		count, id = count[:j], count[j+1:]
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n <= 0 {
		return m, 0, ""
	}
	return m[:i], n, id
}

// raiseMarkFrom records that shard i of l holds mark got in place of prev, the record the
// caller ordered got against (nil: none), unless the record moved since (a debit of this
// instance raised it: that mark is checked by the next script, not overwritten) or got's count
// is not higher.
func (l *layout) raiseMarkFrom(i int, prev *string, got string) {
	if prev != nil {
		if _, c, _ := splitMark(*prev); c >= markCount(got) {
			return
		}
	}
	l.marks[i].CompareAndSwap(prev, &got)
}

func markCount(m string) int64 { _, n, _ := splitMark(m); return n }

// raiseMark records that shard i of l holds mark got, unless a higher count is recorded.
func (l *layout) raiseMark(i int, got string) {
	_, n, _ := splitMark(got)
	for {
		cur := l.marks[i].Load()
		if cur != nil {
			if _, c, _ := splitMark(*cur); c >= n {
				return
			}
		}
		if l.marks[i].CompareAndSwap(cur, &got) {
			return
		}
	}
}

// laterMark is the shard's mark an answer of code c carries when the reserve script accepted
// it as a later one of the mark the call carried (inventory_reserve.lua: the 4th element of
// every answer but SHARD_CLOSED, GENERATION and ROLLED_BACK), or "".
func laterMark(c Code, res []any) string {
	if c == rcGeneration || c == rcShardClosed || c == rcRolledBack || len(res) < 4 {
		return ""
	}
	m, _ := res[3].(string)
	return m
}

// recordLater records that shard i of l holds later, a mark the reserve script accepted as
// descending from sent, the one the call carried: sold or not, a record left behind matched
// the shard again after its node went back past the debits since, and the next call sold
// their units a second time (TestBareGenerationAnswerWithoutSaleKeepsStaleRecord). When the
// record moved while the call was in flight (another answer raised it, or a debit of this
// instance), later was ordered against sent only: a higher count is taken when the shard's
// history holds the record (one HEXISTS, only in this race), and a history without it is a
// node that went back (fenced: ErrRecovering), as meetMark decides on a refusal
// (TestLaterAnswerOfAnOlderCallLeavesStaleRecord). A failed read leaves the record as it
// is: the next call carries it, and the script reads the history.
func (s *Store) recordLater(ctx context.Context, e *entry, l *layout, i int, sent, later string) error {
	if later == "" {
		return nil
	}
	// markLost, markForeign: the next call carries the record and is refused on it.
	if _, back := s.raiseRecord(ctx, e, l, i, sent, later); back {
		return ErrRecovering
	}
	return nil
}

// raiseRecord records later for shard i of l, a mark ordered after sent, the one the call
// carried, when it descends from the record too: the record is still sent, or later is after
// it by their order, or by the shard's history (one HEXISTS, only when the record moved while
// the call was in flight: the history only grows on a healthy node). A history without the
// record is a node that went back: the activity is fenced and back is true. foreign is a
// record of another generation; a record later lost by its count, or a failed read, leaves
// the record as it is (the next call carries it and the script reads the history).
func (s *Store) raiseRecord(ctx context.Context, e *entry, l *layout, i int, sent, later string) (foreign, back bool) {
	rec := l.marks[i].Load()
	if rec == nil || *rec == sent {
		l.raiseMarkFrom(i, rec, later)
		return false, false
	}
	switch markAfter(*rec, later, false) {
	case markLater:
		l.raiseMarkFrom(i, rec, later)
	case markUnsure:
		known, err := s.markKnown(ctx, l.keys[i], *rec)
		if err != nil {
			return false, false
		}
		if !known {
			s.wentBack(ctx, e, l, i, lostMark(*rec, later))
			return false, true
		}
		l.raiseMarkFrom(i, rec, later)
	case markForeign:
		return true, false
	}
	return false, false
}

// markMet is the decision on a script that refused shard i of l because it holds the mark
// got instead of the one this instance gave it.
type markMet int

const (
	markOther    markMet = iota // another generation (fenced, restored, lost): the caller's usual path
	markRaised                  // raised since by a debit: recorded, send the call again
	markAdopt                   // the shard has no generation yet (a reshard made it): adopt it
	markWentBack                // the shard's node went back: the activity is fenced (ErrRecovering)
)

// meetMark decides on got, the mark a call sent with known found on shard i of l (see
// markMet), and for markWentBack fences the activity. known is the mark the call carried,
// not the one recorded now: a debit of this instance may have raised it since the call.
// seen is whether, when the call was sent, this instance had met the shard's generation key
// (l.seen); inHistory whether the script found known in the shard's mark history.
func (s *Store) meetMark(ctx context.Context, e *entry, l *layout, i int, known, got string, seen, inHistory bool) markMet {
	if known == "" {
		return markOther
	}
	if got == "" {
		if !seen {
			return markAdopt
		}
		s.wentBack(ctx, e, l, i, "its generation key is gone")
		return markWentBack
	}
	if got == generationRolledBack && liveMark(known) {
		s.wentBack(ctx, e, l, i, fencedElsewhere)
		return markWentBack
	}
	switch markAfter(known, got, inHistory) {
	case markLater:
		// The record may have moved since the call was built (a debit of this instance raised
		// it): got was ordered against known only, and may not descend from the record (the
		// node lost that debit, another instance raised it past: TestInFlightCallForgetsOwnDebit).
		// A record got is lost to by its count (the script ran before this instance's later
		// debit) or a failed read of the history: sent again with the record.
		switch foreign, back := s.raiseRecord(ctx, e, l, i, known, got); {
		case back:
			return markWentBack
		case foreign:
			return markOther
		}
		return markRaised
	case markLost, markUnsure: // the script read the history: known is not in it
		s.wentBack(ctx, e, l, i, "its generation mark went back from "+known+" (found "+got+")")
		return markWentBack
	}
	return markOther
}

// markOrder is how a mark found on a shard stands to the one a caller knows.
type markOrder int

const (
	markForeign markOrder = iota // another generation (a fence, a restore): not this check's
	markLater                    // raised since the known one, or the known one itself
	markLost                     // the shard's node lost the known one
	markUnsure                   // later by its count; only the history tells (the known one's id)
)

// markAfter orders got, a mark found on a shard, against known, the one a caller recorded
// there, given whether known is in the shard's history (false when not read: then a higher
// count with an id to check answers markUnsure). A lower count is lost; the same count of
// another debit is lost (two debits raised the shard to it: the node lost the first); a
// higher count is later when known names no debit (the generation itself, or a mark of the
// release before) or is in the history.
func markAfter(known, got string, inHistory bool) markOrder {
	if got == known {
		return markLater
	}
	kb, kn, kid := splitMark(known)
	gb, gn, _ := splitMark(got)
	switch {
	case gb != kb:
		return markForeign
	case gn <= kn:
		return markLost
	case kid == "" || inHistory:
		return markLater
	}
	return markUnsure
}

// wentBack says how shard i of l went back, or "": counter and mark are its reservation
// counter and generation mark as a script found them (a drain), checked against the highest
// number this instance handed out or read there and the mark it recorded, all of them from
// calls answered before that script ran. check is whether the answer needs the recorded
// mark's history: the mark found is higher and only the history tells whether it descends
// from the recorded one (the caller reads it: markKnown).
func (l *layout) wentBack(i int, e *entry, counter int64, mark string) (what string, check string) {
	return wentBackFrom(l.floorOf(i), *l.mark(i, e), l.seen(i), counter, mark)
}

// wentBackFrom says how a shard whose floor and recorded mark were floor and known (seen:
// this instance had met its generation key, layout.seen) went back, found with counter and
// mark, or "". An empty known mark (an activity of before generations) checks the counter
// only; a mark of another generation (a fence) is not this check's business. check is the
// mark whose presence in the shard's history decides ("": nothing to check): absent, the
// shard went back (lostMark says how).
func wentBackFrom(floor int64, known string, seen bool, counter int64, mark string) (what string, check string) {
	if counter < floor {
		return "went back below reservation number " + strconv.FormatInt(floor, 10) + " (counter " + strconv.FormatInt(counter, 10) + ")", ""
	}
	if known == "" {
		return "", ""
	}
	if mark == "" {
		if seen {
			return "lost its generation key (mark " + known + ")", ""
		}
		return "", "" // never given a generation yet (a reshard made it): adoption gives it one
	}
	if mark == generationRolledBack && liveMark(known) {
		return fencedElsewhere, ""
	}
	switch markAfter(known, mark, false) {
	case markLost:
		return lostMark(known, mark), ""
	case markUnsure:
		return "", known
	}
	return "", ""
}

// fencedElsewhere says that a shard holds the rolled-back fence: an instance met a rollback.
// Every instance that meets it fences the activity too (its own recovering state, and meta's
// fence written again: a second loss of meta's node may have taken meta's fence back while the
// shard kept its own), so none sells again once it saw the fence (loss simulation, two
// instances: a 202 from an instance that had answered recovering for the fence, after a
// second loss took it off).
const fencedElsewhere = "holds the rolled-back fence of another instance"

// liveMark reports whether a mark an instance recorded is of a live generation (not a fence).
func liveMark(m string) bool {
	b, _, _ := splitMark(m)
	return b != generationRolledBack && b != generationFenced
}

// lostMark says that a shard lost the mark known, found holding mark.
func lostMark(known, mark string) string {
	return "went back from generation mark " + known + " (found " + mark + ")"
}

// markKnown reads whether mark is in the history of the shard k (the stats field the debit
// that raised it wrote).
func (s *Store) markKnown(ctx context.Context, k ShardKeys, mark string) (bool, error) {
	return s.rdb.HExists(ctx, k.Stats(), "m:"+mark).Result()
}

// floorOf is the number shard i of l's counter may not be below: the highest this instance
// handed out there. A counter the refresh read raises no floor: measured on the loss soak,
// such floors kept no promise (R5 in docs/DESIGN.md) and refused sales a rollback had made
// good, and in mode replicas:N a floor over an unacknowledged number fenced a healthy
// activity after a failover.
func (l *layout) floorOf(i int) int64 { return l.issued[i].Load() }

// saw records the generation mark the refresh read on shard i of l (not gone back: wentBack
// said so): later calls carry it, so the reservation and transfer scripts of this instance
// refuse the shard if its node goes back below it, whichever instance made the debits it
// loses. prev is the mark recorded when the refresh was sent (nil: none): a record raised
// since by a debit of this instance is kept (raiseMarkFrom), as the read may predate it and
// the node may have lost it.
func (l *layout) saw(i int, e *entry, mark string, prev *string) {
	if mark == "" {
		return
	}
	if b, _, _ := splitMark(mark); b == e.generation() {
		l.raiseMarkFrom(i, prev, mark)
	}
}

// wentBack fences the activity of e after shard i of l was found gone back (see meetMark).
func (s *Store) wentBack(ctx context.Context, e *entry, l *layout, i int, what string) {
	s.log.Error("a shard's node went back to an older copy (it lost a transfer or the generation it had): the activity is fenced until it is restored from MySQL",
		"activity", e.def.ID, "epoch", l.epoch, "shard", i, "what", what,
		"restore", "POST /admin/v1/activities/"+e.def.ID+"/restore")
	s.fenceRolledBack(ctx, e, l, "Redis rolled back: shard "+strconv.Itoa(i)+" "+what)
}
