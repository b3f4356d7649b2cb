//go:build integration

package sim

import (
	"context"
	"errors"

	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// The loss of a node's last writes (issue 18): the simulation's steps (reservations with
// faults and parked requests, reshards, the writer, dead letters) plus an action that takes a
// snapshot of a Redis node at a random step (DUMP of every key of the activity) and, a few
// steps later, puts the node back to it: keys written since are deleted, the others RESTOREd.
// The node is either the whole activity (a standalone Redis restarted on an AOF that lacks its
// last writes, or a failover to a replica that lagged) or one hash tag (a Cluster master that
// holds one shard, or the meta, failed over while the other nodes, the writer's MySQL and the
// instance keep theirs). The writer gets journal entries as soon as they exist (a relay in mode
// none: the worst case). What the protocol promises after such a loss, checked at every step
// from the ground truth:
//   - MySQL never holds more units than the stock, nor more than the limit for a user;
//   - a 202 (Reserved) never carries a reservation id answered before, nor the id of a journal
//     entry the writer was given for another buyer or sequence (inventory/rollback.go: the
//     instance remembers every number it handed out);
//   - once the instance noticed (the activity is in Store.Recovering, or an answer was
//     ErrNotDurable/ErrRecovering), no reservation started afterwards is answered 202;
//   - at the end (everything in flight released, the writer given every journal entry): no
//     order of a reservation id confirms a buyer other than the one its 202 went to, and the
//     MySQL bounds above.
// What it does not check after a loss: the reconciliation's drift and the settled books (Redis
// forgot; the restore from MySQL rebuilds them, not simulated here). Runs without a loss keep
// every check of TestSimulation.
// A run that finds the activity stuck answering busy after a loss (five busy answers: waiting
// for a reshard or a transfer Redis no longer holds) is a violation: a loss ends in the
// recovering state. Seeds: see TestSimulationLoss.

// simCatalog is the system of record's list of activities (inventory.Catalog), in memory.
type simCatalog struct {
	mu   sync.Mutex
	acts map[string]inventory.Activity
}

func (c *simCatalog) put(a inventory.Activity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acts == nil {
		c.acts = map[string]inventory.Activity{}
	}
	c.acts[a.ID] = a
}

func (c *simCatalog) Known(context.Context) ([]inventory.Activity, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []inventory.Activity
	for _, a := range c.acts {
		out = append(out, a)
	}
	return out, nil
}

func (c *simCatalog) One(_ context.Context, id string) (inventory.Activity, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.acts[id]
	return a, ok, nil
}

// snapshot is the state of the activity's keys at one step: key -> DUMP and PTTL.
type snapshot struct {
	step int
	dump map[string]string
	pttl map[string]time.Duration
}

// lossState is the loss action's part of a simulation.
type lossState struct {
	snap     *snapshot
	due      int                         // step at which the snapshot is put back
	losses   int                         // snapshots put back so far
	noticed  bool                        // an instance refused for a loss (recovering, fenced)
	by       map[*inventory.Store]bool   // the instances that refused for a loss
	answered map[string]string           // rid -> user of every Reserved/Replayed answer
	answerer map[string]*inventory.Store // rid -> the instance of its first answer
	given    map[string]order.Message
	pairs    [][2]string // (rid, user) of every Reserved answer, in order
	rebound  int         // idempotency keys answered with a second id after a loss
	busy     int         // busy answers (reservations, writer, dead letters) after the first loss
	// cut is the shard count of a reshard that failed and was not retried at once (0: none):
	// each instance's layout follower retries it (app/layouts.go: a failed reshard is retried
	// with backoff until it settles), so a run cut short is resumed within a few steps.
	cut int
	// stale: no refresh ran since the last busy answer counted. Busy answers in a row with no
	// refresh between them are one: an instance refreshes every 250 ms, a client or the
	// queue retries later than that, so each retry it answers busy had a refresh to notice
	// the loss first.
	stale bool
	stuck bool // the run ended early: the activity kept answering busy after a loss
	// broken: the 202s without an order at the end; refused: those MySQL refused.
	broken, refused int
}

// activityKeys lists every key of the activity (meta's tag and every shard's), by SCAN.
func (s *sim) activityKeys() []string {
	var out []string
	var cursor uint64
	prefix := "sk:{" + s.aid
	for {
		keys, next, err := s.rdb.Scan(s.ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			s.t.Fatal(err)
		}
		for _, k := range keys {
			if c := k[len(prefix)]; c == '}' || c == ':' {
				out = append(out, k)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	sort.Strings(out)
	return out
}

// tagOf is a key's hash tag, the unit a Cluster node holds.
func tagOf(k string) string {
	i, j := strings.IndexByte(k, '{'), strings.IndexByte(k, '}')
	if i < 0 || j < i {
		return k
	}
	return k[i+1 : j]
}

func (s *sim) takeSnapshot() {
	sn := &snapshot{step: s.step, dump: map[string]string{}, pttl: map[string]time.Duration{}}
	for _, k := range s.activityKeys() {
		d, err := s.rdb.Dump(s.ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			s.t.Fatal(err)
		}
		ttl, err := s.rdb.PTTL(s.ctx, k).Result()
		if err != nil {
			s.t.Fatal(err)
		}
		sn.dump[k], sn.pttl[k] = d, ttl
	}
	s.loss.snap = sn
	s.loss.due = s.step + 1 + s.rng.Intn(8)
	s.logf("snapshot of %d keys (put back at step %d)", len(sn.dump), s.loss.due)
}

// putBack puts one node (every tag, or one tag drawn from those of the snapshot and of now)
// back to the snapshot: the node lost the writes made since.
func (s *sim) putBack() {
	sn := s.loss.snap
	s.loss.snap = nil
	now := s.activityKeys()
	tags := map[string]bool{}
	for _, k := range now {
		tags[tagOf(k)] = true
	}
	for k := range sn.dump {
		tags[tagOf(k)] = true
	}
	var list []string
	for t := range tags {
		list = append(list, t)
	}
	sort.Strings(list)
	node := "" // every tag
	if s.rng.Intn(2) == 0 && len(list) > 0 {
		node = list[s.rng.Intn(len(list))]
	}
	in := func(k string) bool { return node == "" || tagOf(k) == node }
	var del, back int
	for _, k := range now {
		if _, ok := sn.dump[k]; !ok && in(k) {
			if err := s.rdb.Del(s.ctx, k).Err(); err != nil {
				s.t.Fatal(err)
			}
			del++
		}
	}
	keys := make([]string, 0, len(sn.dump))
	for k := range sn.dump {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !in(k) {
			continue
		}
		ttl := sn.pttl[k]
		if ttl < 0 {
			ttl = 0
		}
		if err := s.rdb.RestoreReplace(s.ctx, k, ttl, sn.dump[k]).Err(); err != nil {
			s.t.Fatal(err)
		}
		back++
	}
	s.loss.losses++
	what := "the whole activity"
	if node != "" {
		what = "node {" + node + "}"
	}
	s.logf("LOSS: %s back to step %d (%d keys deleted, %d restored)", what, sn.step, del, back)
}

// lossAction takes a snapshot, or puts it back when due.
func (s *sim) lossAction() {
	switch {
	case s.loss.snap == nil:
		s.takeSnapshot()
	case s.step >= s.loss.due:
		s.putBack()
	}
}

// lossAnswered checks one answer against what the instance answered before (after the
// model's own checks in answered). fresh: the request started at this step (not resumed).
func (s *sim) lossAnswered(r *req, out result, fresh bool) {
	s.noteBusy(out.err)
	if out.err != nil {
		if errors.Is(out.err, inventory.ErrNotDurable) || errors.Is(out.err, inventory.ErrRecovering) {
			if !s.loss.by[r.store] {
				s.logf("noticed by %s: %v", s.instance(r.store), out.err)
			}
			s.loss.noticed, s.loss.by[r.store] = true, true
		}
		return
	}
	rid := out.res.ReservationID
	switch out.res.Code {
	case inventory.Reserved:
		if fresh && s.loss.by[r.store] {
			s.violation("loss-fence", "%s answered 202 %s after the instance noticed the loss", r.user, rid)
		}
		// An id is never handed out twice, by one instance or by two (a number handed out
		// again is another id: its issuer part, inventory/keys.go ReservationID).
		if u, ok := s.loss.answered[rid]; ok {
			s.violation("loss-reissued", "%s answered 202 %s by %s, an id already answered to %s by %s", r.user, rid,
				s.instance(r.store), u, s.instance(s.loss.answerer[rid]))
		}
		if m, ok := s.loss.given[rid]; ok && m.UserID != r.user {
			s.violation("loss-reissued", "%s answered 202 %s, the id of a journal entry of %s (seq %d) given to the writer", r.user, rid, m.UserID, m.Seq)
		}
		if _, ok := s.loss.answered[rid]; !ok {
			s.loss.answerer[rid] = r.store
		}
		s.loss.answered[rid] = r.user
		s.loss.pairs = append(s.loss.pairs, [2]string{rid, r.user})
	case inventory.Replayed:
		if u, ok := s.loss.answered[rid]; ok && u != r.user {
			s.violation("loss-reissued", "%s replayed %s, an id answered to %s", r.user, rid, u)
		}
		s.loss.answered[rid] = r.user
	}
}

// followReshard is a layout follower's retry of the reshard cut short (lossState.cut) on
// this step's instance.
func (s *sim) followReshard() {
	err := s.store.Reshard(s.ctx, s.aid, s.loss.cut)
	s.logf("follower on %s: reshard to %d: %v", s.instance(s.store), s.loss.cut, err)
	if err == nil {
		s.loss.cut = 0
	}
}

// noteBusy counts an answer "busy" (the store waited for a reshard) after a loss.
func (s *sim) noteBusy(err error) {
	if s.lost() && err != nil && (errors.Is(err, inventory.ErrBusy) || strings.Contains(err.Error(), "busy, retry shortly")) && !s.loss.stale {
		s.loss.busy++
		s.loss.stale = true
	}
}

// checkNoticed notes the recovering state of the instance.
func (s *sim) checkNoticed() {
	for _, st := range s.stores {
		ids, why := st.Recovering()
		for _, id := range ids {
			if id == s.aid && !s.loss.by[st] {
				s.logf("noticed by %s: recovering (%s)", s.instance(st), why[id])
				s.loss.noticed, s.loss.by[st] = true, true
			}
		}
	}
}

// checkLossEnd: everything in flight released, the writer given every journal entry of every
// layout (and the messages it was given before the loss again), then the MySQL bounds and each
// order against the 202 of its id.
func (s *sim) checkLossEnd() {
	s.releaseParked(func(r *req, out result) { s.lossAnswered(r, out, false) })
	var todo []order.Message
	for _, e := range s.journal() {
		todo = append(todo, e.msg)
	}
	for _, m := range s.loss.given {
		todo = append(todo, m)
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].ReservationID < todo[j].ReservationID })
	passes := 3
	if s.loss.busy > 0 {
		passes = 1 // each pass waits for the reshard or transfer Redis no longer holds
	}
	for pass := 0; pass < passes && len(todo) > 0; pass++ {
		if err := s.w.Handle(s.ctx, todo); err != nil {
			s.logf("end deliver: %v", err)
			continue
		}
		break
	}
	s.logf("end of the run after %d losses, noticed %v", s.loss.losses, s.loss.noticed)
	s.checkAlways()
	owner := map[string]string{}
	for _, o := range activityRows[sql.Order](s) {
		owner[o.ReservationID] = o.UserID
	}
	for _, p := range s.loss.pairs {
		if u, ok := owner[p[0]]; ok && u != p[1] {
			s.violation("loss-confirmed-other", "the 202 %s went to %s, its order is %s's", p[0], p[1], u)
		}
	}
	s.loss.refused, s.loss.broken = s.brokenPromises(owner)
}

// brokenPromises counts, from MySQL, the 202s of the run without an order at its end that the
// simulation did not fail itself (broken promises: lost with Redis, dead-lettered, refused) and
// among them those MySQL refused (order/insert.go: the stock or the buyer's limit was reached
// where the orders live).
func (s *sim) brokenPromises(owner map[string]string) (refused, broken int) {
	why := map[string]string{}
	for _, c := range activityRows[sql.Compensation](s) {
		why[c.ReservationID] = c.Reason
	}
	for rid := range s.loss.answered {
		if _, ok := owner[rid]; ok || s.failed[rid] {
			continue
		}
		broken++
		if strings.HasPrefix(why[rid], "refused: ") {
			refused++
		}
	}
	return refused, broken
}

// TestSimulationLoss runs the loss simulation for its fixed seeds (one per defect of issue 18
// it found: docs/DESIGN.md, "Simulation suite"; 7 and 9 found the same as 4) and a fresh one,
// 100 steps each, in parallel; SECKILL_LOSS_SEED runs one seed, SECKILL_LOSS_STEPS sets the steps, and
// SECKILL_LOSS_SOAK=N runs seeds 1-N of 200 steps (a soak: 500 seeds, docs/DESIGN.md).
//
// Seed 202 (200 steps) found a false SOLD_OUT, no loss needed: a request for 2 units whose
// home shard held 1 refilled only from the shards not marked empty, which held none, while a
// shard marked empty had been given 2 units back by a compensation since (fixed: the refill's
// second pass tries the marked shards whenever the first moved too little).
func TestSimulationLoss(t *testing.T) {
	seeds, steps := lossSeeds(2, 4, 6, 10, 12, 44, 202)
	tot := newLossTotals(t, seeds)
	runSeeds(t, "loss simulation", "SECKILL_LOSS_SEED", "SECKILL_LOSS_STEPS", steps, seeds, func(t *testing.T, seed int64, steps int) {
		runLoss(t, seed, steps, 1, tot)
	})
}

// TestSimulationLossTwo is the loss simulation with two instances on the one Redis: each
// step's reservation, reshard or refresh goes to one of them, drawn, so one instance's view of
// a shard is older than the other's when the node goes back (a mark or counter raised again
// by the other, R1 and R2 in docs/DESIGN.md). Its violations are the units and the limit
// (MySQL), a 202 from an instance after it noticed, an id answered twice (by either instance:
// a number one instance answered and the other handed out again before the first one's
// refresh is another id) and busy for good. SECKILL_LOSS_SEED runs one seed. Seed
// 403828802: a 202 at step 47 from an instance that had answered recovering for another
// instance's fence, once a second loss took the fence off meta (fixed: an instance that meets
// the fence fences too, rollback.go fencedElsewhere).
// Seed 436 found the false SOLD_OUT of seed 202 above with two instances.
func TestSimulationLossTwo(t *testing.T) {
	seeds, steps := lossSeeds(1, 2, 3, 403828802, 436)
	tot := newLossTotals(t, seeds)
	runSeeds(t, "loss simulation, two instances", "SECKILL_LOSS_SEED", "SECKILL_LOSS_STEPS", steps, seeds, func(t *testing.T, seed int64, steps int) {
		runLoss(t, seed, steps, 2, tot)
	})
}

// lossTotals adds up the broken promises of a loss simulation's listed seeds (not the fresh
// one, so a soak's figure is the same on every run of the same code) and logs them once every
// seed has run: the figure docs/DESIGN.md measures the rules R1-R5 by.
type lossTotals struct {
	mu                                   sync.Mutex
	listed                               map[int64]bool
	runs, losses, answered, broken, refd int
	stuck, failed                        int
}

func newLossTotals(t *testing.T, seeds []int64) *lossTotals {
	tot := &lossTotals{listed: map[int64]bool{}}
	for _, s := range seeds {
		tot.listed[s] = true
	}
	t.Cleanup(func() {
		tot.mu.Lock()
		defer tot.mu.Unlock()
		t.Logf("totals over the listed seeds: %d runs with a loss, %d losses, %d of %d 202s without an order (%d refused by MySQL), %d stuck busy, %d with ignored violations",
			tot.runs, tot.losses, tot.broken, tot.answered, tot.refd, tot.stuck, tot.failed)
	})
	return tot
}

func (tot *lossTotals) add(seed int64, l *lossState, ignored bool) {
	tot.mu.Lock()
	defer tot.mu.Unlock()
	if !tot.listed[seed] {
		return
	}
	tot.runs++
	tot.losses += l.losses
	tot.answered += len(l.answered)
	tot.broken += l.broken
	tot.refd += l.refused
	if l.stuck {
		tot.stuck++
	}
	if ignored {
		tot.failed++
	}
}

// lossSeeds is a loss simulation's seeds and steps: the fixed seeds at 100 steps, or with
// SECKILL_LOSS_SOAK=N seeds 1-N at 200 (N not a number: 40).
func lossSeeds(fixed ...int64) ([]int64, int64) {
	v := os.Getenv("SECKILL_LOSS_SOAK")
	if v == "" {
		return fixed, 100
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		n = 40
	}
	var seeds []int64
	for i := int64(1); i <= n; i++ {
		seeds = append(seeds, i)
	}
	return seeds, 200
}

// instance names st for the trace.
func (s *sim) instance(st *inventory.Store) string {
	for i, x := range s.stores {
		if x == st {
			return "i" + strconv.Itoa(i)
		}
	}
	return "i?"
}

// runLoss is run with the loss action: a small stock and more buyers than it, so that a unit
// lost and sold again would show as orders over the stock; instances share the Redis.
func runLoss(t *testing.T, seed int64, steps, instances int, tot *lossTotals) {
	rng := rand.New(rand.NewSource(seed))
	stock, limit, shards := int64(4+rng.Intn(8)), 1+rng.Intn(2), 1+rng.Intn(4)
	users := 8 + rng.Intn(8)
	s := newSimWith(t, seed, rng, stock, limit, shards, users)
	s.loss = &lossState{answered: map[string]string{}, given: map[string]order.Message{},
		by: map[*inventory.Store]bool{}, answerer: map[string]*inventory.Store{}}
	for i := 1; i < instances; i++ {
		st := s.newInstance("sim" + strconv.Itoa(i+1))
		if err := st.Refresh(s.ctx); err != nil {
			t.Fatal(err)
		}
		s.stores = append(s.stores, st)
	}
	for s.step = 1; s.step <= steps; s.step++ {
		if len(s.stores) > 1 {
			s.store = s.stores[s.rng.Intn(len(s.stores))]
		}
		x := s.rng.Intn(100)
		if s.loss.cut > 0 && x < 25 {
			x = -1
		}
		switch {
		case x < 0:
			s.followReshard()
		case x < 40:
			s.reserve()
		case x < 48:
			s.resume()
		case x < 54:
			s.reshard()
		case x < 72:
			s.deliver()
		case x < 78:
			s.fail()
		case x < 84:
			if err := s.store.Refresh(s.ctx); err != nil {
				s.logf("refresh: %v", err)
			}
			s.loss.stale = false
		default:
			s.lossAction()
		}
		s.checkNoticed()
		s.checkAlways()
		if s.loss.busy >= 5 {
			// Each such answer waited for a reshard or a transfer Redis no longer holds: the
			// activity is stuck answering busy, where a loss must end in the recovering state
			// (or the reshard run again), never in waiting for good.
			s.violation("loss-busy", "%d answers busy after a loss (noticed %v): waiting for a reshard or transfer Redis no longer holds", s.loss.busy, s.loss.noticed)
			s.loss.stuck = true
			break
		}
	}
	if s.loss.losses == 0 {
		s.settle()
		t.Logf("seed %d: %d steps, no loss put back, settled, trace fingerprint %016x", seed, steps, s.fp.Sum64())
		return
	}
	s.checkLossEnd()
	t.Logf("seed %d: %d steps, %d losses, noticed %v, stuck busy %v, %d keys answered with a second id after a loss, "+
		"%d of %d 202s without an order (%d refused by MySQL), trace fingerprint %016x",
		seed, s.step, s.loss.losses, s.loss.noticed, s.loss.stuck, s.loss.rebound,
		s.loss.broken, len(s.loss.answered), s.loss.refused, s.fp.Sum64())
	tot.add(seed, s.loss, len(s.seen) > 0)
	if len(s.seen) > 0 {
		t.Fatalf("seed %d: %d steps, ignored violations %v", seed, steps, s.seen)
	}
}
