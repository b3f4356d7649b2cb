package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
)

// A reshard leaves its old layout behind: drained shards with their markers, stats, credit
// and transfer records, users hashes and journals. Retire deletes a layout once nothing can
// address it any more (all but its reservation records), so the keys of an activity, but the
// records' hashes, and the reads of every instance's refresh (which reads the layouts meta
// names) do not grow with the number of reshards.
//
// The invariant: a layout's keys are deleted only when no reservation, transfer or reshard
// run can still write them, and nothing that reads them still needs them:
//   - it is drained and not current (every shard has its drained marker, no stock key): no
//     reservation, refill or refund writes there (their scripts refuse a drained shard, and
//     on a deleted shard they find no stock key and refuse just the same);
//   - its journals are empty (every entry was relayed and acknowledged: the relay needs
//     nothing there) and none of its reservations is PENDING (no confirm or fail can write its
//     stats, and no compensation can put units in transit from it any more);
//   - none of its shards has a transit entry (xout): every transfer out of it is finished, and
//     since layouts retire oldest first, so is every transfer from an older layout that could
//     name one of its shards as the target (a transfer into a deleted shard would be credited
//     again elsewhere);
//   - it stopped being current at least RetireAfter ago (the stamp in meta): every reshard
//     run that could still write to it (a run of the reshard that built it, or of the one
//     that drained it) started before it stopped being current, so it is older than
//     ReshardRunLimit < RetireAfter, and its drain, credit, copy and seal are refused by the
//     scripts (inventory_drain.lua, inventory_credit.lua, inventory_copy.lua): a stalled run
//     that wakes finds no deleted key it could take for a loss, nor write one again.
// Each condition, once true, stays true once the ones before it hold (nothing makes a drained
// shard take a reservation or a transfer again; a transit entry appears on a drained shard
// only with the fail of a PENDING reservation), so checking them one after another, in that
// order, is enough: on each shard the reads that decide "nothing PENDING" come before the
// read that decides "nothing in transit" (retireLayout). The reservation records
// are not deleted: a reservation id names them until the archive deletes the activity's
// keys, and a confirm, fail or compensation mark of a settled record changes no count. A
// PENDING record keeps its layout (an orphan, a 202 whose order never came, keeps it until
// the archive; the reconciliation counts it).
//
// Who keeps it: Retire (run by Run every recoverEvery, on any number of instances at once:
// every step is idempotent, and the meta script retires a layout once), the scripts' refusals
// above, and Reshard, which reads the run's start before it reads meta.

// retireStats are the stats fields whose sums a retired layout leaves in meta
// ("retired.<field>"), in the order inventory_retire.lua takes them.
var retireStats = []string{"taken", "relayed", "confirmed", "failed", "compensated", "xout", "xin"}

// Retire deletes the activity's old layouts that nothing can address any more (see above),
// oldest first, and finishes the deletion of layouts retired before. It returns the number
// of layouts retired now. ErrNotFound when the activity has no meta.
func (s *Store) Retire(ctx context.Context, id string) (int, error) {
	m, err := s.rdb.HGetAll(ctx, Meta(id)).Result()
	if err != nil {
		return 0, fmt.Errorf("inventory: read meta: %w", err)
	}
	if m["def"] == "" {
		return 0, ErrNotFound
	}
	var errs []error
	if gc := m["gc"]; gc != "" {
		for _, g := range strings.Split(gc, ",") {
			if err := s.collect(ctx, id, g); err != nil {
				errs = append(errs, err)
			}
		}
	}
	epoch, err1 := strconv.Atoi(m["epoch"])
	lays, err2 := parseLayouts(id, m["layouts"])
	if err1 != nil || err2 != nil {
		return 0, errors.Join(append(errs, fmt.Errorf("inventory: meta of %s: bad epoch or layouts", id))...)
	}
	var old []Layout
	args := []any{"stamp"}
	for _, l := range lays {
		if l.Epoch >= epoch {
			break
		}
		old = append(old, l)
		args = append(args, l.Epoch)
	}
	if len(old) == 0 {
		return 0, errors.Join(errs...)
	}
	ages, err := s.run(ctx, s.retire, []string{Meta(id)}, args...)
	if err != nil {
		return 0, errors.Join(append(errs, err)...)
	}
	retired := 0
	for i, l := range old {
		if age, _ := asInt(ages[min(i, len(ages)-1)]); time.Duration(age)*time.Millisecond < s.opts.RetireAfter {
			break
		}
		ok, err := s.retireLayout(ctx, id, l)
		if err != nil {
			errs = append(errs, err)
		}
		if !ok {
			break
		}
		retired++
	}
	return retired, errors.Join(errs...)
}

// retireLayout retires layout l, stamped at least RetireAfter ago, when nothing can address
// it; false when it must stay.
//
// The order of its reads keeps a unit from being lost: a read that decides "nothing PENDING"
// on a shard (its stats, and the records pendingOn reads when they disagree) comes before the
// read that decides "nothing in transit" there (HLEN xout). A compensation fails a PENDING
// record on a drained shard and writes its transit entry in one script (inventory_fail.lua),
// so an xout read after a pending read that missed the record (already failed) sees the
// entry; read the other way round, a fail between the two reads passed both, the layout's
// keys went and the compensator's Settle found no entry to credit. The xout reads are a
// pipeline of their own, sent once the pending reads answered: a Cluster pipeline resends a
// command answered ASK during a slot migration after the others, so within one pipeline the
// order of a shard's commands is not kept. The stats of a shard whose records were read are
// read again there too: a fail between its first read and the records would leave its sums
// short in meta.
func (s *Store) retireLayout(ctx context.Context, id string, l Layout) (bool, error) {
	type shard struct {
		k       ShardKeys
		present *redis.IntCmd // the stock key (a drained shard has none)
		drained *redis.IntCmd
		journal *redis.IntCmd
		stats   *redis.SliceCmd
		seq     *redis.StringCmd
		xout    *redis.IntCmd
		again   *redis.SliceCmd // the stats read after pendingOn, nil when it was not asked
	}
	shards := make([]shard, l.Shards)
	pipe := s.rdb.Pipeline()
	for i := range shards {
		k := Shard(id, l.Epoch, i)
		shards[i] = shard{k: k, stats: pipe.HMGet(ctx, k.Stats(), retireStats...), seq: pipe.Get(ctx, k.Seq()),
			present: pipe.Exists(ctx, k.Stock()), drained: pipe.Exists(ctx, k.Drained()), journal: pipe.XLen(ctx, k.Journal())}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("inventory: read layout %d of %s: %w", l.Epoch, id, err)
	}
	pipe = s.rdb.Pipeline()
	for i := range shards {
		sh := &shards[i]
		if sh.present.Val() != 0 || sh.drained.Val() != 1 || sh.journal.Val() != 0 {
			return false, nil
		}
		if st := statsOf(sh.stats); st[0] != st[2]+st[3] { // taken != confirmed + failed: a reservation may be PENDING
			top, _ := sh.seq.Int64()
			pending, err := s.pendingOn(ctx, sh.k, top)
			if err != nil || pending {
				return false, err
			}
			sh.again = pipe.HMGet(ctx, sh.k.Stats(), retireStats...)
		}
		sh.xout = pipe.HLen(ctx, sh.k.XOut())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("inventory: read transit of layout %d of %s: %w", l.Epoch, id, err)
	}
	sums := make([]int64, len(retireStats))
	for _, sh := range shards {
		if sh.xout.Val() != 0 {
			return false, nil
		}
		st := statsOf(sh.stats)
		if sh.again != nil {
			st = statsOf(sh.again)
		}
		for j := range sums {
			sums[j] += st[j]
		}
	}
	args := []any{"retire", strconv.Itoa(l.Epoch) + ":" + strconv.Itoa(l.Shards)}
	for _, v := range sums {
		args = append(args, v)
	}
	res, err := s.run(ctx, s.retire, []string{Meta(id)}, args...)
	if err != nil {
		return false, err
	}
	if n, _ := asInt(res[0]); n != 1 {
		return false, nil // another instance retired it (or meta moved): the next pass reads meta again
	}
	s.log.Info("layout retired", "activity", id, "epoch", l.Epoch, "shards", l.Shards)
	if err := s.deleteLayout(ctx, id, l); err != nil {
		return true, err
	}
	s.collectMu.Lock()
	s.collected[id+"/"+strconv.Itoa(l.Epoch)] = true
	s.collectMu.Unlock()
	return true, nil
}

// statsOf is a shard's retireStats as c read them, 0 for a missing or unreadable field.
func statsOf(c *redis.SliceCmd) [7]int64 {
	var st [7]int64
	vals := c.Val()
	for j := range st {
		if j < len(vals) {
			st[j], _ = asInt(vals[j])
		}
	}
	return st
}

// pendingOn reports whether one of the records 1..top of shard k is PENDING (a missing
// record is settled). Records found settled are remembered, so a later call reads only those
// after them.
func (s *Store) pendingOn(ctx context.Context, k ShardKeys, top int64) (bool, error) {
	s.collectMu.Lock()
	low := s.settledTo[k.Journal()]
	s.collectMu.Unlock()
	const chunk = 500
	for from := low + 1; from <= top; from += chunk {
		to := min(from+chunk-1, top)
		vals, err := s.rdb.HMGet(ctx, k.Users(), recordFields(from, to)...).Result()
		if err != nil {
			return false, fmt.Errorf("inventory: read records of %s: %w", k.Journal(), err)
		}
		for j, v := range vals {
			if r, ok := recordOf(v); ok && r.Status == "PENDING" {
				s.collectMu.Lock()
				s.settledTo[k.Journal()] = from + int64(j) - 1
				s.collectMu.Unlock()
				return true, nil
			}
		}
	}
	s.collectMu.Lock()
	s.settledTo[k.Journal()] = top
	s.collectMu.Unlock()
	return false, nil
}

// collect finishes the deletion of a retired layout named by the gc entry g
// ("<e>:<n>:<ms retired>"): it deletes the keys once per process, and again, then drops the
// entry, once the retirement is RetireAfter/2 old (a relay that read the journal list before
// the layout left it may have created an empty journal again meanwhile).
func (s *Store) collect(ctx context.Context, id, g string) error {
	parts := strings.Split(g, ":")
	if len(parts) != 3 {
		return fmt.Errorf("inventory: meta gc of %s: bad %q", id, g)
	}
	e, n, ok := parseTarget(parts[0] + ":" + parts[1])
	at, err := strconv.ParseInt(parts[2], 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("inventory: meta gc of %s: bad %q", id, g)
	}
	l := Layout{e, n}
	key := id + "/" + parts[0]
	s.collectMu.Lock()
	seen := s.collected[key]
	s.collectMu.Unlock()
	if !seen {
		if err := s.deleteLayout(ctx, id, l); err != nil {
			return err
		}
		s.collectMu.Lock()
		s.collected[key] = true
		s.collectMu.Unlock()
	}
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("inventory: redis time: %w", err)
	}
	if time.Duration(now.UnixMilli()-at)*time.Millisecond < s.opts.RetireAfter/2 {
		return nil
	}
	if err := s.deleteLayout(ctx, id, l); err != nil {
		return err
	}
	if _, err := s.run(ctx, s.retire, []string{Meta(id)}, "done", parts[0]+":"+parts[1]); err != nil {
		return err
	}
	s.collectMu.Lock()
	delete(s.collected, key)
	s.collectMu.Unlock()
	return nil
}

// deleteLayout deletes the keys of every shard of l, after taking its journals off the
// relay's list, but the reservation records: of each users hash only the records (r:<n>
// fields, record.go) are left, which a reservation id names until the archive deletes them.
// The users' fields went forward with the reshard's copy.
func (s *Store) deleteLayout(ctx context.Context, id string, l Layout) error {
	journals := make([]any, l.Shards)
	for i := range journals {
		journals[i] = Shard(id, l.Epoch, i).Journal()
	}
	if err := s.rdb.SRem(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Journals), journals...).Err(); err != nil {
		return fmt.Errorf("inventory: unlist journals of %s: %w", id, err)
	}
	pipe := s.rdb.Pipeline()
	for i := 0; i < l.Shards; i++ {
		k := Shard(id, l.Epoch, i)
		pipe.Del(ctx, append(k.unwritten(), k.Stock(), k.Seq(), k.Journal(), k.Stats(), k.Credits(),
			k.XOut(), k.XIn(), k.Drained(), k.Gen())...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("inventory: delete layout %d of %s: %w", l.Epoch, id, err)
	}
	for i := 0; i < l.Shards; i++ {
		if err := s.keepRecords(ctx, Shard(id, l.Epoch, i).Users()); err != nil {
			return fmt.Errorf("inventory: delete layout %d of %s: %w", l.Epoch, id, err)
		}
	}
	return nil
}

// keepRecords deletes every field of the users hash key but the reservation records: safe
// to run again, and nothing else writes a retired layout's users hash.
func (s *Store) keepRecords(ctx context.Context, key string) error {
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "*", 500).Result()
		if err != nil {
			return err
		}
		var drop []string
		for i := 0; i+1 < len(kv); i += 2 {
			if !strings.HasPrefix(kv[i], "r:") {
				drop = append(drop, kv[i])
			}
		}
		if len(drop) > 0 {
			if err := s.rdb.HDel(ctx, key, drop...).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}
