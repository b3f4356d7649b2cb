package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/seckill/seckill/internal/keyspace"
)

// Reshard moves an activity's remaining stock to a new layout of n shards (epoch e -> e+1),
// exactly: units are neither lost nor doubled, and reservations continue meanwhile (a
// reserve that hits a closed shard re-reads the layout and retries). It is a resumable,
// idempotent state machine recorded in meta: begin (meta.reshard, meta.layouts), drain every
// old shard, credit every new shard once per source, copy buyer records (users, last, idem)
// to their new home shards, seal the new shards (their stock key appears), switch
// meta.epoch/shards, publish "layout <id>". Any instance may run it or resume it; a
// reshard already recorded with another target is finished first.
func (s *Store) Reshard(ctx context.Context, id string, n int) error {
	if !keyspace.ValidName(id) || n < 1 || n > keyspace.MaxShards {
		return fmt.Errorf("%w: reshard %q to %d shards", ErrInvalid, id, n)
	}
	for round := 0; round < 6; round++ {
		// The run's start, read before meta: its drains of the old layout and every write of
		// the run on the new shards are refused once it is older than ReshardRunLimit
		// (retire.go relies on it).
		start, err := s.rdb.Time(ctx).Result()
		if err != nil {
			return fmt.Errorf("inventory: redis time: %w", err)
		}
		vals, err := s.rdb.HMGet(ctx, Meta(id), metaFields...).Result()
		if err != nil {
			return fmt.Errorf("inventory: read meta: %w", err)
		}
		m, ok, err := parseMeta(id, vals)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if s.refusesReshard(id, m) {
			// Redis lost part of the activity: a reshard would carry what is left into a new
			// layout; only a restore from MySQL reopens it.
			return fmt.Errorf("%w: reshard of %s", ErrRecovering, id)
		}
		if !m.loaded {
			return fmt.Errorf("%w: %s is still loading", ErrBusy, id)
		}
		if m.reshard != "" {
			e, to, ok := parseTarget(m.reshard)
			if !ok || e != m.epoch+1 {
				return fmt.Errorf("inventory: meta of %s: bad reshard %q", id, m.reshard)
			}
			err := s.move(ctx, id, run{m.epoch, m.shards, to, start.UnixMilli(), s.opts.ReshardRunLimit.Milliseconds(), m.gen})
			if errors.Is(err, errRunTooOld) {
				s.log.Info("reshard run too old: starting over", "activity", id, "epoch", m.epoch+1)
				continue
			}
			if err != nil {
				return err
			}
			continue
		}
		if m.shards == n {
			s.apply(m)
			return nil
		}
		res, err := s.run(ctx, s.reshard, []string{Meta(id)}, "begin", m.epoch, n)
		if err != nil {
			return err
		}
		c, err := answer(s.reshard, res, beginMovedOn, begun, beginOther)
		if err != nil {
			return err
		}
		if c == begun {
			s.log.Info("reshard begun", "activity", id, "epoch", m.epoch+1, "from", m.shards, "to", n)
		}
		// Begun, or someone else's reshard, or the epoch moved on: the next round sees it.
	}
	return fmt.Errorf("%w: reshard of %s did not settle", ErrBusy, id)
}

// parseTarget parses a layout as meta writes it, "<epoch>:<shards>".
func parseTarget(r string) (epoch, shards int, ok bool) {
	e, n, ok := intPair(r)
	if !ok || n < 1 || n > keyspace.MaxShards {
		return 0, 0, false
	}
	return e, n, true
}

// intPair parses "<a>:<b>", two decimal integers (a layout, a transit entry's location).
func intPair(v string) (a, b int, ok bool) {
	x, y, ok := strings.Cut(v, ":")
	if !ok {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(x)
	b, err2 := strconv.Atoi(y)
	return a, b, err1 == nil && err2 == nil
}

// run is one run of a recorded reshard: from (e, from shards) to (e+1, to shards), started
// at start (Redis ms, read before meta), allowed to drain the old shards and write on the new
// ones for limit ms.
type run struct {
	e, from, to  int
	start, limit int64
	gen          string // the activity's generation, which the seal gives the new shards
}

// errRunTooOld: a step of the run was refused because the run is older than its limit; the
// caller starts a new run (every step is idempotent).
var errRunTooOld = errors.New("inventory: reshard run older than its limit")

// move carries out the recorded reshard r. Every step is idempotent, so a crashed or
// concurrent run is simply run again.
func (s *Store) move(ctx context.Context, id string, r run) error {
	e, from, to := r.e, r.from, r.to
	journals := make([]any, to)
	for j := range journals {
		journals[j] = Shard(id, e+1, j).Journal()
	}
	if err := s.rdb.SAdd(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Journals), journals...).Err(); err != nil {
		return fmt.Errorf("inventory: register journals: %w", err)
	}
	// 1. Drain: every old shard closes and hands back what it had (refused once the run is
	// older than its limit: layout e may be retired since, its keys deleted). What a drain found is
	// checked against what this instance handed out and saw on the shard (rollback.go): a
	// shard whose node went back must not have its users hash and stock carried forward.
	drained, err := s.drainOld(ctx, id, r)
	if err != nil {
		return err
	}
	var total int64
	for _, d := range drained {
		total += d
	}
	// 2. Credit: source i spreads its units over the new shards, remainder from shard i on;
	// one call per new shard carries the share of every source.
	if err := s.creditNew(ctx, id, r, drained); err != nil {
		return err
	}
	// 3. Copy buyer records (the users hashes) to their new home shards. A target already sealed means another
	// run finished copying; the copy script refuses to write there.
	err = s.parallel(from, func(i int) error {
		_, err := s.copyShard(ctx, id, Shard(id, e, i), r)
		return err
	})
	if err != nil {
		return err
	}
	// 4. Seal the new shards: their stock keys appear.
	if err := s.sealNew(ctx, id, r); err != nil {
		return err
	}
	// 5. Switch the layout.
	if err := s.switchLayout(ctx, id, r, total); err != nil {
		return err
	}
	if _, _, err := s.lookup(ctx, id); err != nil {
		return err
	}
	return nil
}

// drainOld drains every shard of the run's old layout (step 1 of move) and returns what each
// handed back; a shard whose keys are gone or whose node went back fences the activity and
// fails the run with ErrRecovering.
func (s *Store) drainOld(ctx context.Context, id string, r run) ([]int64, error) {
	e, from := r.e, r.from
	drained := make([]int64, from)
	ent, seen := s.cachedLayout(id, e, from)
	err := s.parallel(from, func(i int) error {
		k := Shard(id, e, i)
		res, err := s.run(ctx, s.drain, []string{k.Stock(), k.Drained(), k.Stats(), k.Seq(), k.Gen()}, r.start, r.limit)
		if err != nil {
			return err
		}
		c, err := answer(s.drain, res, drainNeverLoaded, drainedNow, drainedBefore, drainTooOld)
		if err != nil {
			return err
		}
		if c == drainTooOld {
			// The run stalled past its limit: layout e may be retired and its keys deleted
			// since, which the drain must not take for a loss. Start over from meta.
			return errRunTooOld
		}
		if c == drainNeverLoaded {
			// Neither stock nor drained marker on a shard of a loaded layout (Reshard checked
			// meta's loaded), and the run is young enough that the layout cannot have been
			// retired (the drain refuses a run older than its limit, and a layout is deleted
			// only RetireAfter > ReshardRunLimit after it stopped being current, which was
			// after the run's start): the shard's node lost it. The refresh does not look at shards
			// while a reshard is recorded, and this run can never finish: fence the activity,
			// or every later run answers this and the writer waits on the reshard for good.
			if ent == nil {
				if _, _, err := s.lookup(ctx, id); err != nil {
					return err
				}
				ent, _ = s.cachedLayout(id, e, from)
			}
			if ent != nil {
				s.fenceRolledBack(ctx, ent, newLayout(id, e, from), fmt.Sprintf("shard %d of epoch %d lost its keys during a reshard", i, e))
			}
			return fmt.Errorf("%w: drain %s shard %d: its keys are gone", ErrRecovering, id, i)
		}
		if len(res) < 2 {
			return fmt.Errorf("inventory: drain %s shard %d: unexpected answer %v", id, i, res)
		}
		drained[i], _ = asInt(res[1])
		if seen != nil && len(res) >= 4 {
			counter, _ := asInt(res[2])
			found := asString(res[3])
			what, check := seen.wentBack(i, ent, counter, found)
			if check != "" {
				// A higher mark than the one recorded: the drained shard takes no more writes,
				// so its history, read now, says whether it descends from the recorded one.
				known, err := s.markKnown(ctx, seen.keys[i], check)
				if err != nil {
					return fmt.Errorf("inventory: drain %s shard %d: read its mark history: %w", id, i, err)
				}
				if !known {
					what = lostMark(check, found)
				}
			}
			if what != "" {
				s.wentBack(ctx, ent, seen, i, what)
				return fmt.Errorf("%w: reshard of %s: shard %d %s", ErrRecovering, id, i, what)
			}
		}
		return nil
	})
	return drained, err
}

// creditNew credits every shard of the run's new layout with its share of each old shard's
// drained units (step 2 of move); a shard credited before or sealed already counts as done.
func (s *Store) creditNew(ctx context.Context, id string, r run, drained []int64) error {
	e, from, to := r.e, r.from, r.to
	return s.parallel(to, func(j int) error {
		k := Shard(id, e+1, j)
		args := make([]any, 0, 3+2*from)
		args = append(args, "credit", r.start, r.limit)
		for i := 0; i < from; i++ {
			args = append(args, i, split(drained[i], to, ((j-i)%to+to)%to))
		}
		res, err := s.run(ctx, s.credit, s.creditKeys(k), args...)
		if err != nil {
			return err
		}
		// Credited now or before, or the shard is sealed already (another run finished):
		// each is the state this step wants.
		c, err := answer(s.credit, res, creditedBefore, creditedNow, creditSealed, creditTooOld)
		if c == creditTooOld {
			return errRunTooOld
		}
		return err
	})
}

// sealNew seals every shard of the run's new layout so its stock key appears (step 4 of
// move); a shard drained already means a later reshard moved on and fails the run with ErrBusy.
func (s *Store) sealNew(ctx context.Context, id string, r run) error {
	e, from, to := r.e, r.from, r.to
	return s.parallel(to, func(j int) error {
		k := Shard(id, e+1, j)
		res, err := s.run(ctx, s.credit, append(s.creditKeys(k), k.Gen()), "seal", r.start, r.limit, from, r.gen)
		if err != nil {
			return err
		}
		c, err := answer(s.credit, res, sealMissing, sealedNow, sealedBefore, sealDrained, sealTooOld)
		if err != nil {
			return err
		}
		if c == sealTooOld {
			return errRunTooOld
		}
		if c == sealDrained {
			return fmt.Errorf("%w: reshard of %s: shard %d of epoch %d is drained, a later reshard moved on", ErrBusy, id, j, e+1)
		}
		if c == sealMissing {
			return fmt.Errorf("inventory: seal %s shard %d: credits missing (%v)", id, j, res)
		}
		return nil
	})
}

// switchLayout switches meta to the run's new layout (step 5 of move) and, when this call
// made the switch, logs it and publishes the layout event; a meta that changed under the run
// fails it with ErrBusy.
func (s *Store) switchLayout(ctx context.Context, id string, r run, total int64) error {
	e, from, to := r.e, r.from, r.to
	res, err := s.run(ctx, s.reshard, []string{Meta(id)}, "switch", e, to)
	if err != nil {
		return err
	}
	c, err := answer(s.reshard, res, switchMismatch, switched, switchedBefore)
	if err != nil {
		return err
	}
	if c == switchMismatch {
		return fmt.Errorf("%w: reshard of %s changed under us (%v)", ErrBusy, id, res)
	}
	if c == switched {
		s.log.Info("resharded", "activity", id, "epoch", e+1, "from", from, "to", to, "units", total)
		if err := s.rdb.Publish(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events), "layout "+id).Err(); err != nil {
			s.log.Warn("publish layout failed", "activity", id, "err", err)
		}
	}
	return nil
}

// refusesReshard reports whether the activity of meta m is recovering here or fenced in meta.
func (s *Store) refusesReshard(id string, m meta) bool {
	if m.gen == generationFenced || m.gen == generationRolledBack {
		return true
	}
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	return e != nil && e.recovering.Load() != nil
}

// cachedLayout is the cached entry of id and its layout when that layout is (epoch, shards),
// else nil.
func (s *Store) cachedLayout(id string, epoch, shards int) (*entry, *layout) {
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	if e == nil {
		return nil, nil
	}
	if l := e.layout.Load(); l.epoch == epoch && l.shards == shards {
		return e, l
	}
	e.pastMu.Lock()
	defer e.pastMu.Unlock()
	for _, l := range e.past {
		if l.epoch == epoch && l.shards == shards {
			return e, l
		}
	}
	return e, nil
}

// copyShard copies the users hash of one old shard (counts, sequences, last ids,
// idempotency bindings, refund markers; not the reservation records) to the new home shards
// of its users. The old shard
// is drained, so nothing writes its users hash any more. It reports true when a target was
// already sealed (another run finished copying), errRunTooOld when the run is older than its
// limit.
func (s *Store) copyShard(ctx context.Context, id string, old ShardKeys, r run) (bool, error) {
	epoch, to := r.e+1, r.to
	batches := make(map[int][]any)
	flush := func(j int) (bool, error) {
		b := batches[j]
		if len(b) <= 2 {
			return false, nil
		}
		batches[j] = b[:2]
		k := Shard(id, epoch, j)
		res, err := s.run(ctx, s.copy, []string{k.Stock(), k.Users(), k.Drained()}, b...)
		if err != nil {
			return false, err
		}
		c, err := answer(s.copy, res, copyUnknown, copied, copyRefused, copyTooOld)
		if c == copyTooOld {
			return false, errRunTooOld
		}
		return c == copyRefused, err
	}
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, old.Users(), cursor, "*", 500).Result()
		if err != nil {
			return false, fmt.Errorf("inventory: scan %s: %w", old.Users(), err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			f, v := kv[i], kv[i+1]
			uh, _, _ := strings.Cut(f, ":")
			if uh == "r" { // a reservation record: it stays with its shard (record.go)
				continue
			}
			j := HomeShard(uh, to)
			if batches[j] == nil {
				batches[j] = []any{r.start, r.limit}
			}
			batches[j] = append(batches[j], f, v)
			if len(batches[j]) >= 402 {
				if sealed, err := flush(j); err != nil || sealed {
					return sealed, err
				}
			}
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	for j := 0; j < to; j++ { // in shard order, so a run's calls come in a fixed order
		if sealed, err := flush(j); err != nil || sealed {
			return sealed, err
		}
	}
	return false, nil
}

// parallel runs f(0..n-1) on up to Options.ReshardWorkers goroutines and returns the
// first error.
func (s *Store) parallel(n int, f func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		next = make(chan int)
	)
	for w := 0; w < min(n, s.opts.ReshardWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return ferr
}

// Results of the reshard scripts; each type's zero value is unknown.
type (
	beginAnswer  int // inventory_reshard.lua begin
	switchAnswer int // inventory_reshard.lua switch
	drainAnswer  int // inventory_drain.lua
	creditAnswer int // inventory_credit.lua credit
	sealAnswer   int // inventory_credit.lua seal
	copyAnswer   int // inventory_copy.lua
)

const (
	beginUnknown beginAnswer = iota
	begun                    // {1}: begun now
	beginOther               // {2, reshard}: another reshard is recorded (resume it)
	beginMovedOn             // {0, epoch}: meta moved on (read it again)
)

const (
	switchUnknown  switchAnswer = iota
	switched                    // {1}: switched now
	switchedBefore              // {2}: switched before
	switchMismatch              // {0, epoch}: meta does not record this reshard
)

const (
	drainUnknown     drainAnswer = iota
	drainedNow                   // {1, units}
	drainedBefore                // {2, units}
	drainNeverLoaded             // {0}: the shard was never loaded
	drainTooOld                  // {4}: the run is older than its limit
)

const (
	creditUnknown  creditAnswer = iota
	creditedNow                 // 1: a source credited now
	creditSealed                // 2: the shard is sealed already
	creditedBefore              // 0: every source credited before
	creditTooOld                // 4: the run is older than its limit
)

const (
	sealUnknown  sealAnswer = iota
	sealedNow               // {1, units}
	sealedBefore            // {2, units}
	sealMissing             // {0, sources seen}: not every source has credited
	sealDrained             // {4}: drained by a later reshard (this run is stale)
	sealTooOld              // {5}: the run is older than its limit
)

const (
	copyUnknown copyAnswer = iota
	copied                 // 1: copied
	copyRefused            // 2: refused, the target is sealed
	copyTooOld             // 3: refused, the run is older than its limit
)

// creditKeys are the KEYS of inventory_credit.lua on shard k.
func (s *Store) creditKeys(k ShardKeys) []string {
	return []string{k.Stock(), k.Credits(), k.Stats(), k.Drained()}
}
