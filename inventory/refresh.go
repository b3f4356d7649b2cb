package inventory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/keyspace"
)

// Run keeps the cache fresh until ctx is done: it follows the events channel (created,
// soldout, layout: a reshard finished by any instance is cached here as soon as its event
// arrives), and every RefreshEvery it re-reads the activity list, each activity's meta and
// the stock of each current shard (remaining, shards with stock, sold out learned and
// cleared). The stock is what the period is for; the meta read in the same pipeline bounds
// how long a layout change whose event was lost (pub/sub delivers at most once, nothing
// while the subscription reconnects) stays unseen: one RefreshEvery. A reservation that
// meets a shard closed by a reshard re-reads meta at once, so a stale layout costs a retry,
// never a unit. This instance's own Reshard caches the new layout before it returns. It
// returns nil when ctx is done.
func (s *Store) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.subscribe(ctx)
	}()
	t := time.NewTicker(s.opts.RefreshEvery)
	defer t.Stop()
	failing := false
	lastRecover := time.Now()
	for {
		if time.Since(lastRecover) >= recoverEvery {
			lastRecover = time.Now()
			s.recoverAll(ctx)
		}
		keys, err := s.refresh(ctx)
		switch {
		case keys != nil && ctx.Err() == nil:
			s.rl.Warn("keys", "inventory refresh skipped activities whose keys it cannot read", "err", keys)
		case keys == nil && err == nil:
			s.rl.OK("keys", "inventory refresh reads every activity's keys again")
		}
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.log.Warn("inventory refresh failing", "err", err)
			failing = true
		case err == nil && failing:
			s.log.Info("inventory refresh recovered")
			failing = false
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C:
		}
	}
}

// recoverEvery is how often Run settles transfers left in transit (by a crash, a hang-up
// or a Redis error between a transfer's debit and its credit) and retires the layouts
// nothing can address any more (retire.go); only transfers in transit
// for at least recoverAge are touched, so live requests finish their own.
const (
	recoverEvery = 2 * time.Second
	recoverAge   = 2 * time.Second
)

// recoverAll is one background pass over the activities this instance holds: settle
// transfers left in transit and retire old layouts. An activity in the recovering state is left
// alone (its Redis state is wrong or gone; the restore rebuilds it), and so is one whose meta
// is gone. Pipelines find what is due (settlingDue: every meta, then every transit hash of
// their layouts' shards, a few hundred commands each); Recover runs only for an activity with a
// transfer in transit for recoverAge or a credit sweep due, Retire only for one with a layout
// to collect or retire (before, each activity cost three round trips a pass, in a row, and a
// pass held up the refresh loop that runs it). Failures (Redis down) log one line per kind per
// 10 s, and one when it works again.
func (s *Store) recoverAll(ctx context.Context) {
	s.mu.RLock()
	ids := make([]string, 0, len(s.acts))
	for id, e := range s.acts {
		if e.recovering.Load() == nil {
			ids = append(ids, id)
		}
	}
	s.mu.RUnlock()
	if len(ids) == 0 {
		return
	}
	settle, retire := s.settlingDue(ctx, ids)
	settled, retired := true, true
	for _, id := range settle {
		n, err := s.Recover(ctx, id, recoverAge)
		switch {
		case err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotFound):
			settled = false
			s.rl.Warn("settle", "settling transfers in transit failed", "activity", id, "err", err)
		case n > 0:
			s.log.Info("settled transfers left in transit", "activity", id, "transfers", n)
		}
	}
	for _, id := range retire {
		if _, err := s.Retire(ctx, id); err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotFound) {
			retired = false
			s.rl.Warn("retire", "retiring old layouts failed", "activity", id, "err", err)
		}
	}
	if settled {
		s.rl.OK("settle", "settling transfers in transit works again")
	}
	if retired {
		s.rl.OK("retire", "retiring old layouts works again")
	}
}

// settleChunk bounds the commands of one of settlingDue's pipelines: a pipeline's replies are
// read under one deadline (the client's ReadTimeout), and a huge one would hold Redis up.
const settleChunk = 512

// settlingDue finds which of ids have work for Recover (a transfer in transit for recoverAge
// or more, a credit sweep due) and for Retire (meta's gc names a layout to collect, or meta
// keeps a layout older than the current one): pipelines of meta, then of the transit hashes
// of every layout's shards, at most settleChunk commands each. An activity whose meta or
// transit hashes cannot be read (a pipeline failed: Redis down, a Cluster node failing over)
// or parsed is given to both, whose own reads then work or report it, one activity at a time
// as before; one whose meta is gone to neither.
func (s *Store) settlingDue(ctx context.Context, ids []string) (settle, retire []string) {
	for len(ids) > 0 && ctx.Err() == nil {
		chunk := ids[:min(len(ids), settleChunk)]
		ids = ids[len(chunk):]
		pipe := s.rdb.Pipeline()
		metas := make([]*redis.MapStringStringCmd, len(chunk))
		for i, id := range chunk {
			metas[i] = pipe.HGetAll(ctx, Meta(id))
		}
		if _, err := pipe.Exec(ctx); err != nil && !isRedisError(err) {
			settle, retire = append(settle, chunk...), append(retire, chunk...)
			continue
		}
		var reads xoutReads
		pipe = s.rdb.Pipeline()
		for i, id := range chunk {
			m, err := metas[i].Result()
			if err != nil {
				settle, retire = append(settle, id), append(retire, id)
				continue
			}
			if m["def"] == "" {
				continue // meta gone: the refresh decides what that is
			}
			epoch, err1 := strconv.Atoi(m["epoch"])
			lays, err2 := parseLayouts(id, m["layouts"])
			if err1 != nil || err2 != nil {
				settle, retire = append(settle, id), append(retire, id)
				continue
			}
			if m["gc"] != "" || (len(lays) > 0 && lays[0].Epoch < epoch) {
				retire = append(retire, id)
			}
			if s.sweepWanted(id) {
				settle = append(settle, id)
				continue
			}
			if len(reads.cmds) >= settleChunk {
				settle = append(settle, reads.due(ctx, pipe)...)
				reads, pipe = xoutReads{}, s.rdb.Pipeline()
			}
			for _, l := range lays {
				for k := 0; k < l.Shards; k++ {
					reads.ids = append(reads.ids, id)
					reads.cmds = append(reads.cmds, pipe.HGetAll(ctx, Shard(id, l.Epoch, k).XOut()))
				}
			}
		}
		settle = append(settle, reads.due(ctx, pipe)...)
	}
	return settle, retire
}

// xoutReads are transit hashes queued on a pipeline, each with its activity (an activity's
// hashes next to each other).
type xoutReads struct {
	ids  []string
	cmds []*redis.MapStringStringCmd
}

// due runs pipe and returns the activities with a transfer in transit for recoverAge or more,
// or a transit hash it could not read, each once.
func (r xoutReads) due(ctx context.Context, pipe redis.Pipeliner) []string {
	if len(r.cmds) == 0 {
		return nil
	}
	_, _ = pipe.Exec(ctx) // each command's own error is checked below
	now := time.Now().UnixMilli()
	var out []string
	for i, c := range r.cmds {
		if (c.Err() != nil || oldestTransit(c.Val(), now) >= recoverAge) && (len(out) == 0 || out[len(out)-1] != r.ids[i]) {
			out = append(out, r.ids[i])
		}
	}
	return out
}

// oldestTransit is the age of the oldest entry of a transit hash (0 when it has none).
func oldestTransit(all map[string]string, now int64) time.Duration {
	var oldest time.Duration
	for _, age := range transitAges(all, now) {
		oldest = max(oldest, age)
	}
	return oldest
}

func (s *Store) subscribe(ctx context.Context) {
	sub := s.rdb.Subscribe(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events))
	defer sub.Close()
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			s.handleEvent(ctx, msg.Payload)
		}
	}
}

func (s *Store) handleEvent(ctx context.Context, payload string) {
	kind, id, ok := strings.Cut(payload, " ")
	if !ok || !keyspace.ValidName(id) {
		return
	}
	switch kind {
	case "soldout":
		s.mu.RLock()
		e := s.acts[id]
		s.mu.RUnlock()
		if e != nil {
			s.markSoldOut(ctx, e, "event")
		}
	case "restored":
		s.loadCatalog(ctx, catalogForce)
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("refresh after a restore failed", "activity", id, "err", err)
		}
	case "archived":
		s.archived(ctx, id)
	case "created", "layout":
		s.forget(id)
		if _, _, err := s.lookup(ctx, id); err != nil && ctx.Err() == nil {
			s.log.Warn("event lookup failed", "activity", id, "event", kind, "err", err)
		}
	}
}

// Refresh runs one refresh pass (Run runs one every RefreshEvery).
func (s *Store) Refresh(ctx context.Context) error { return errors.Join(s.refresh(ctx)) }

// refresh is one refresh pass. keys are the keys it could not read (WRONGTYPE: a key of the
// wrong type, execEach): what they belong to was skipped and the rest refreshed. err is a
// failure of the pass itself (Redis unreachable, any other error).
func (s *Store) refresh(ctx context.Context) (keys, err error) {
	defer s.reportRecovering(ctx) // whatever this pass reads or fails to
	ids, err := s.rdb.SMembers(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Activities)).Result()
	if err != nil {
		return nil, err
	}
	cat := s.loadCatalog(ctx, catalogCached)
	// The ids only the catalog names (neither in Redis's set nor cached here: an activity this
	// process has not seen, whose Redis state may be gone) are checked once per catalog read,
	// not on every pass: MySQL keeps every past activity, and one found lost is cached from
	// then on (setRecovering), so later passes read it anyway.
	catAt, _ := s.catalogAt.Load().(time.Time)
	checkCatalog := catAt.UnixNano() != s.catalogChecked.Load()
	if checkCatalog {
		for id := range cat {
			ids = append(ids, id)
		}
	}
	s.mu.RLock()
	for id := range s.acts {
		ids = append(ids, id)
	}
	s.mu.RUnlock()
	seen := make(map[string]bool, len(ids))
	pipe := s.rdb.Pipeline()
	metas := make([]*redis.SliceCmd, 0, len(ids))
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if seen[id] || !keyspace.ValidName(id) {
			continue
		}
		seen[id] = true
		names = append(names, id)
		metas = append(metas, pipe.HMGet(ctx, Meta(id), metaFields...))
	}
	if len(names) == 0 {
		return nil, nil
	}
	keyErr, err := execEach(ctx, pipe)
	if err != nil {
		return nil, err
	}
	if checkCatalog { // a key of the wrong type stays so: reading the catalog's ids again would not help
		s.catalogChecked.Store(catAt.UnixNano())
	}
	entries := make([]*entry, 0, len(names))
	for i, id := range names {
		if metas[i].Err() != nil {
			// This activity's meta alone is unreadable (a key of the wrong type, in keyErr):
			// nothing is decided for it on this pass, and the others are refreshed.
			continue
		}
		m, ok, err := parseMeta(id, metas[i].Val())
		if err != nil {
			s.log.Warn("bad meta", "activity", id, "err", err)
			continue
		}
		if _, known := cat[id]; !known && s.opts.Catalog != nil && s.suspect(id, m, ok) {
			// Redis misses what this instance saw of an activity the last catalog did not
			// name (created since): ask MySQL for that one.
			k, found, err := s.catalogOne(ctx, id)
			if err != nil && !ok {
				// Meta gone and MySQL not told: nothing is decided on this pass. Dropping the
				// entry as unknown would forget the numbers it handed out, which the
				// restore's list of lost reservations needs (reportIssued). (Meta present is
				// applied as before: a fence or another generation in it is what refuses.)
				s.log.Debug("a suspected loss left undecided: the catalog read failed", "activity", id, "err", err)
				continue
			}
			if found {
				cat = s.lastCatalog()
				if _, in := cat[id]; !in { // a whole read begun before the row was written replaced it
					cat = maps.Clone(cat)
					if cat == nil {
						cat = map[string]Activity{}
					}
					cat[id] = k
				}
			}
		}
		if s.checkLost(ctx, id, m, ok, cat) {
			continue // reported at the pass's end (reportRecovering)
		}
		if !ok {
			s.drop(id)
			continue
		}
		if !m.loaded {
			continue
		}
		e := s.apply(m)
		if e.recovering.Load() != nil {
			s.clearRecovering(e) // checkLost found it restored
		}
		entries = append(entries, e)
	}
	stockKeys, err := s.refreshStock(ctx, entries)
	return errors.Join(keyErr, stockKeys), err
}

// execEach runs pipe for callers that check each command's own error: a key of the wrong type
// (WRONGTYPE: an operator's write or a bad dump can leave one) fails only the command that
// reads it, so only what it belongs to, and is returned in keyErr (the first few keys named);
// any other error (the connection, the context, a node LOADING or CLUSTERDOWN, an ACL) is err,
// a failure of the whole pipeline. Each command's error is looked at: Exec's own is only its
// first command's.
func execEach(ctx context.Context, pipe redis.Pipeliner) (keyErr, err error) {
	cmds, execErr := pipe.Exec(ctx)
	var keys []error
	broken := 0
	for _, c := range cmds {
		switch e := c.Err(); {
		case e == nil || errors.Is(e, redis.Nil):
		case redis.HasErrorPrefix(e, "WRONGTYPE"):
			if broken++; len(keys) < maxKeysNamed {
				keys = append(keys, fmt.Errorf("key %v: %w", c.Args()[1], e))
			}
		default:
			return nil, e
		}
	}
	if len(cmds) == 0 && execErr != nil && !errors.Is(execErr, redis.Nil) {
		return nil, execErr
	}
	if broken > len(keys) {
		keys = append(keys, fmt.Errorf("and %d more keys of the wrong type", broken-len(keys)))
	}
	return errors.Join(keys...), nil
}

// maxKeysNamed is how many unreadable keys a refresh pass names in its error.
const maxKeysNamed = 5

// refreshStock reads the stock of every shard of the entries' current layouts in one
// pipeline and updates remaining, the shards believed empty and the sold-out mark. Units in
// transit (the xout hashes of every layout meta names) decide only whether an activity
// whose current shards read 0 is marked sold out: they are read then (soldOutUnlessMoving),
// and not for an activity with stock or already marked (an idle instance would read every
// shard of every layout kept until it retires four times a second).
func (s *Store) refreshStock(ctx context.Context, entries []*entry) (keys, err error) {
	pipe := s.rdb.Pipeline()
	jobs := s.queueStockReads(ctx, pipe, entries)
	if len(jobs) == 0 {
		return nil, nil
	}
	started := time.Now().UnixNano()
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var found stockFindings
	for i := range jobs {
		j := &jobs[i]
		sum, missing := s.readShards(ctx, j, &found)
		// While stock moves between layouts the sum means nothing: keep the last answer.
		if missing || j.e.resharding.Load() || j.e.layout.Load() != j.l {
			continue
		}
		j.e.remaining.Store(sum)
		j.e.gauge.Set(float64(sum))
		switch {
		case sum == 0 && !j.e.soldOut.Load():
			found.empty = append(found.empty, emptyRead{j.e, j.l})
		case sum > 0 && j.e.soldOut.Load() && j.e.soldOutAt.Load() < started:
			// Only units on a shard lift the mark. Units in transit land on a shard first
			// (their settler or Recover finishes every move) and the pass after that lifts
			// it; a transit entry alone may be a move already credited and sold whose
			// finish is pending, and lifting the mark for it sent every request to the
			// stock scripts until Recover ran.
			if j.e.soldOut.CompareAndSwap(true, false) {
				s.log.Info("activity has stock again", "activity", j.e.def.ID, "remaining", sum)
			}
		}
	}
	keys, err = s.soldOutUnlessMoving(ctx, found.empty)
	s.saw(ctx, append(found.saws, s.checkMarks(ctx, found.unsure)...))
	return keys, err
}

// stockRead is refreshStock's read of one entry's current layout: the layout read, one
// command per shard, and what the shards' floors and marks were before the read.
type stockRead struct {
	e    *entry
	l    *layout
	cmds []*redis.SliceCmd
	// floors and marks are the shards' floors and marks before the read: a reservation
	// or debit answered after the pipeline was sent may have raised them past what it read.
	floors []int64
	marks  []*string
	raw    []*string // the marks recorded (layout.marks, nil: none), for saw
	seen   []bool
}

// stockFindings gathers what refreshStock's reads found to act on after them: marks to
// check, marks seen, and layouts that read empty.
type stockFindings struct {
	unsure []markCheck
	saws   []sawRead
	empty  []emptyRead
}

// queueStockReads queues on pipe one read per shard (stock, counter and mark in one MGET)
// of each entry's current layout, taking the shards' floors and marks before it; it runs
// nothing.
func (s *Store) queueStockReads(ctx context.Context, pipe redis.Pipeliner, entries []*entry) []stockRead {
	jobs := make([]stockRead, 0, len(entries))
	for _, e := range entries {
		l := e.layout.Load()
		j := stockRead{e: e, l: l, cmds: make([]*redis.SliceCmd, l.shards),
			floors: make([]int64, l.shards), marks: make([]*string, l.shards), raw: make([]*string, l.shards), seen: make([]bool, l.shards)}
		for k := range l.keys {
			j.floors[k], j.raw[k], j.seen[k] = l.floorOf(k), l.marks[k].Load(), l.seen(k)
			j.marks[k] = l.mark(k, e)
			// The shard's counter and generation mark come with its stock (one command, one
			// slot): what they were is what no later read may find them below (rollback.go).
			j.cmds[k] = pipe.MGet(ctx, l.keys[k].Stock(), l.keys[k].Seq(), l.keys[k].Gen())
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// readShards sums the stock j read and marks each shard empty or not; a shard whose
// counter or mark went back is reported at once (first one per entry), marks to check or
// seen go to found, and missing says some shard had no readable stock.
func (s *Store) readShards(ctx context.Context, j *stockRead, found *stockFindings) (sum int64, missing bool) {
	wentBack := false
	for k, c := range j.cmds {
		v := c.Val()
		if c.Err() != nil || len(v) != 3 {
			missing = true
			continue
		}
		if v[0] == nil {
			missing = true
			if !j.e.resharding.Load() {
				s.checkShard(ctx, j.e, j.l, k)
			}
			continue
		}
		n, ok := asInt(v[0])
		if !ok {
			missing = true
			continue
		}
		if j.e.recovering.Load() == nil && !wentBack {
			counter, _ := asInt(v[1])
			what, check := wentBackFrom(j.floors[k], *j.marks[k], j.seen[k], counter, asString(v[2]))
			switch {
			case what != "":
				s.wentBack(ctx, j.e, j.l, k, what)
				wentBack = true
			case check != "":
				found.unsure = append(found.unsure, markCheck{e: j.e, l: j.l, i: k, counter: counter, known: check, found: asString(v[2]), prev: j.raw[k]})
			default:
				found.saws = append(found.saws, sawRead{l: j.l, i: k, e: j.e, mark: asString(v[2]), prev: j.raw[k]})
			}
		}
		n = max(n, 0)
		j.l.empty[k].Store(n == 0)
		sum += n
	}
	return sum, missing
}

// emptyRead is an entry whose current layout l a refresh read with 0 units on every shard,
// not marked sold out.
type emptyRead struct {
	e *entry
	l *layout
}

// soldOutUnlessMoving marks sold out each entry of js that has no units in transit from a
// shard of any layout meta names (those are still for sale: a transfer debited, not yet
// credited; a compensation of a drained shard) and whose current shards still read 0 after
// that. One pipeline of HLEN for all of them, then one of GET of their current shards' stock,
// sent once the HLENs have answered (a Cluster pipeline runs each node's commands apart, so
// within one pipeline a GET could run before an HLEN of another node): a transfer that
// credits its target and deletes its transit entry after the first stock read is seen by the
// second (an HLEN that reads its entry gone came after its credit), and its unit is not
// marked sold out. A missing or unreadable stock key marks nothing, as in the first read.
func (s *Store) soldOutUnlessMoving(ctx context.Context, js []emptyRead) (keys, err error) {
	if len(js) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	xout := make([][]*redis.IntCmd, len(js))
	for n, j := range js {
		for _, key := range j.e.xoutKeys(j.l) {
			xout[n] = append(xout[n], pipe.HLen(ctx, key))
		}
	}
	keyErr, err := execEach(ctx, pipe)
	if err != nil {
		return nil, err
	}
	still := js[:0:0]
	for n, j := range js {
		var moving int64
		for _, c := range xout[n] {
			if c.Err() != nil { // unreadable: units may be moving, mark nothing
				moving++
			}
			moving += c.Val()
		}
		if moving == 0 {
			still = append(still, j)
		}
	}
	if len(still) == 0 {
		return keyErr, nil
	}
	pipe = s.rdb.Pipeline()
	stock := make([][]*redis.StringCmd, len(still))
	for n, j := range still {
		for k := range j.l.keys {
			stock[n] = append(stock[n], pipe.Get(ctx, j.l.keys[k].Stock()))
		}
	}
	stockErr, err := execEach(ctx, pipe)
	if err != nil {
		return nil, err
	}
	for n, j := range still {
		empty := true
		for _, c := range stock[n] {
			if v, err := c.Int64(); err != nil || v > 0 {
				empty = false
				break
			}
		}
		if empty && !j.e.resharding.Load() && j.e.layout.Load() == j.l {
			s.markSoldOut(ctx, j.e, "refresh")
		}
	}
	return errors.Join(keyErr, stockErr), nil
}

// sawRead is the mark a refresh read on shard i of l, for layout.saw.
type sawRead struct {
	l    *layout
	i    int
	e    *entry
	mark string
	prev *string
}

// saw records the marks the refresh read (layout.saw). In mode replicas:N on a single node a
// mark a debit raised is recorded only once N replicas hold it: a debit whose WAIT fell short
// may rightly be lost by a failover, and a record of its mark would fence the activity on the
// new master as gone back. See durableReads.
func (s *Store) saw(ctx context.Context, rs []sawRead) {
	if d := s.opts.Durability; d.Replicas > 0 {
		s.durableReads(ctx, d, rs)
	}
	for _, r := range rs {
		r.l.saw(r.i, r.e, r.mark, r.prev)
	}
}

// durableReads keeps of rs the raised marks N replicas hold. On a single node one pipeline
// reads the shards' marks again, writes once and WAITs: the WAIT covers everything read
// before the write (replication is in order), and a mark counts only if both reads found it.
// A master that does not acknowledge in time leaves its marks as they were. On a Cluster a
// raised mark is recorded without the WAIT: a credit made from the debit that raised it may
// live on another master and survive the debit's loss, and the mark is what fences the shard
// then (R2).
func (s *Store) durableReads(ctx context.Context, d Durability, rs []sawRead) {
	if _, cluster := s.rdb.(*redis.ClusterClient); cluster {
		return
	}
	var ns []int
	for n, r := range rs {
		if r.mark != "" && (r.prev == nil || *r.prev != r.mark) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return
	}
	stats := rs[ns[0]].l.keys[rs[ns[0]].i].Stats()
	gens := make([]*redis.StringCmd, len(ns))
	err := d.Acked(ctx, s.rdb, stats, func(p redis.Pipeliner) {
		for k, n := range ns {
			gens[k] = p.Get(ctx, rs[n].l.keys[rs[n].i].Gen())
		}
		p.HIncrBy(ctx, stats, "durableReads", 1)
	})
	for k, n := range ns {
		if err != nil || gens[k].Val() != rs[n].mark {
			rs[n].mark = ""
		}
	}
}

// markCheck is a shard whose refresh found a higher generation mark than the one recorded
// there (known): only the shard's history tells whether it descends from known (rollback.go).
type markCheck struct {
	e            *entry
	l            *layout
	i            int
	counter      int64
	known, found string
	prev         *string // the record when the refresh was sent (saw)
}

// checkMarks reads the history of the shards in cs (one pipeline, HEXISTS each: only after
// another instance's debit raised a mark, once per debit): a known mark in its shard's history
// is returned to be recorded as seen with what the refresh read (saw); one missing is a node
// that went back, and fences the activity. A failed read records nothing (the next refresh
// asks again).
func (s *Store) checkMarks(ctx context.Context, cs []markCheck) []sawRead {
	if len(cs) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	got := make([]*redis.BoolCmd, len(cs))
	for n, c := range cs {
		got[n] = pipe.HExists(ctx, c.l.keys[c.i].Stats(), "m:"+c.known)
	}
	_, _ = pipe.Exec(ctx) // each command's own error is checked below
	fenced := map[*entry]bool{}
	var saws []sawRead
	for n, c := range cs {
		known, err := got[n].Result()
		switch {
		case err != nil || fenced[c.e] || c.e.recovering.Load() != nil:
		case known:
			saws = append(saws, sawRead{l: c.l, i: c.i, e: c.e, mark: c.found, prev: c.prev})
		default:
			s.wentBack(ctx, c.e, c.l, c.i, lostMark(c.known, c.found))
			fenced[c.e] = true
		}
	}
	return saws
}

// checkShard puts e in the recovering state when shard k of its current layout l lost its
// stock key (shardLost) while MySQL knows the activity.
func (s *Store) checkShard(ctx context.Context, e *entry, l *layout, k int) {
	if e.recovering.Load() != nil || e.layout.Load() != l || s.opts.Catalog == nil {
		return
	}
	known, ok, err := s.catalogOne(ctx, e.def.ID) // the last read's, or MySQL's row if created since
	if err != nil || !ok {
		return
	}
	lost, err := s.shardLost(ctx, e, l, k)
	if err != nil {
		s.log.Debug("checking a shard without stock failed", "activity", e.def.ID, "shard", k, "err", err)
		return
	}
	if !lost {
		return
	}
	if archived, err := s.archivedMeanwhile(ctx, e.def.ID); err == nil && !archived {
		s.setRecovering(known, e, fmt.Sprintf("shard %d of epoch %d lost its stock", k, l.epoch))
	}
}

// drop forgets a cached activity whose metadata is gone from Redis, deletes its labelled
// series and tells Options.Gone; an id that was not cached is left alone.
func (s *Store) drop(id string) {
	s.mu.Lock()
	_, cached := s.acts[id]
	delete(s.acts, id)
	s.mu.Unlock()
	if !cached {
		return
	}
	s.m.forget(id)
	s.log.Info("activity gone from Redis: dropped from the cache", "activity", id)
	if s.opts.Gone != nil {
		s.opts.Gone(id)
	}
}
