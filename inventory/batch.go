package inventory

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/backoff"
)

// Group commit: the reservations of one queue that arrive while a call of that queue is in
// flight wait for it, and go together, in arrival order, as one call of
// inventory_reserve_batch.lua, which runs each exactly as inventory_reserve.lua would on its
// shard, one after the other. A queue is a layout's on a single Redis node (a script's keys
// need no common slot there, so one call carries reservations of every shard, and the
// batches grow with the whole activity's traffic, not a sixteenth of it) and one shard's on
// a cluster (batcherOf). Each reservation gets its own answer and its caller decides on it
// as on the single script's (reserveOn); the shard's checks (open, generation mark, floor)
// are made for each, with the mark and floor the batch was built with for its shard.
//
// Invariants:
//   - B1: a reservation is sent at most once: a waiter leaves the queue only by being taken
//     into a batch (then it waits for that batch's answer, whatever its context says) or by
//     its context ending while still queued (then it was never sent).
//   - B2: at most queueCalls calls per queue are in flight from this instance (busy): one,
//     or two for a layout's queue when each call waits for a replica (replicas:N); the queue is
//     sent by a waiter of it (the first of the next batch leads it), so no caller's answer
//     waits for a batch after its own.
//   - B3: no wait when the queue is idle: a reservation that finds no call in flight is sent
//     at once, alone, with the single script (the same command as without batching).
//   - B4: a batch shares the arguments of the activity, the limits and the IP bucket's
//     settings: a reservation whose arguments differ from the first's (a limit edited in
//     between, with or without the IP bucket) waits for a later batch.

// DefaultReserveBatch is the default of Options.ReserveBatch.
const DefaultReserveBatch = 32

// batcher is one queue: a layout's on a single node, a layout shard's on a cluster.
type batcher struct {
	mu    sync.Mutex
	busy  int // calls of this queue in flight (B2)
	queue []*batchItem
}

// batchItem is one reservation waiting for, or carried by, a batch.
type batchItem struct {
	r       *ReserveRequest
	home    int // the layout shard it reserves on
	uh, idf string
	withIP  bool
	ul      *[4]any // the user limits' boxed arguments: equal pointers, equal limits (B4)

	done chan struct{} // closed when res/err are set, or when lead is
	lead []*batchItem  // set for the item that sends the next batch (itself first)

	res  []any
	err  error
	sent string // the generation mark the batch carried
	seen bool   // l.seen when the batch was built
}

var batchItems = sync.Pool{New: func() any { return &batchItem{done: make(chan struct{}, 1)} }}

// reserveBatched sends r's reservation on shard home of l, with others of the same queue
// when a call of it is in flight, and returns its own answer as runCall would, with the
// mark the call carried for the shard and whether this instance had met the shard's
// generation key.
func (s *Store) reserveBatched(ctx context.Context, e *entry, l *layout, home int, r *ReserveRequest, uh, idf string, withIP bool) (res []any, sent string, seen bool, err error) {
	if s.opts.ReserveBatch <= 1 { // each alone, in parallel: no queue
		call := s.reserveCallFor(e, l, home, r, uh, idf, withIP)
		seen = l.seen(home)
		res, err = s.runReserve(ctx, s.reserve, call.args)
		sent = *call.mark
		call.release()
		return res, sent, seen, err
	}
	b := s.batcherOf(l, home)
	it := batchItems.Get().(*batchItem)
	it.r, it.home, it.uh, it.idf, it.withIP, it.ul = r, home, uh, idf, withIP, e.userLimitArgs(r)
	defer func() {
		*it = batchItem{done: it.done}
		batchItems.Put(it)
	}()
	b.mu.Lock()
	if b.busy < s.queueCalls {
		b.busy++
		b.mu.Unlock()
		s.sendBatches(ctx, e, l, b, []*batchItem{it})
		return it.res, it.sent, it.seen, it.err
	}
	b.queue = append(b.queue, it)
	b.mu.Unlock()
	select {
	case <-it.done:
	case <-ctx.Done():
		b.mu.Lock()
		for i, q := range b.queue {
			if q == it { // still queued: never sent (B1)
				b.queue = append(b.queue[:i], b.queue[i+1:]...)
				b.mu.Unlock()
				return nil, "", false, ctx.Err()
			}
		}
		b.mu.Unlock()
		<-it.done // taken: its batch decides (B1)
	}
	if it.lead != nil {
		s.sendBatches(ctx, e, l, b, it.lead)
	}
	return it.res, it.sent, it.seen, it.err
}

// sendBatches sends batch (its first item is the caller's), answers every other item, and
// hands the queue on: the first of the next batch sends it, or the shard is idle again.
func (s *Store) sendBatches(ctx context.Context, e *entry, l *layout, b *batcher, batch []*batchItem) {
	if len(batch) > 1 {
		// Others' answers ride on this call: the leader's request ending (a client gone)
		// must not fail theirs. The client's timeouts bound the call.
		ctx = context.WithoutCancel(ctx)
	}
	s.runBatch(ctx, e, l, batch)
	b.mu.Lock()
	next := s.takeBatch(b)
	if next == nil {
		b.busy--
	}
	b.mu.Unlock()
	for _, it := range batch[1:] {
		it.done <- struct{}{}
	}
	if next != nil {
		next[0].lead = next
		next[0].done <- struct{}{}
	}
}

// takeBatch takes the next batch off b's queue (b.mu held): the first waiter and, in order,
// those whose arguments match its own (B4), up to the batch size; nil when none waits.
func (s *Store) takeBatch(b *batcher) []*batchItem {
	if len(b.queue) == 0 {
		return nil
	}
	first := b.queue[0]
	batch := []*batchItem{first}
	rest := b.queue[:0]
	for _, q := range b.queue[1:] {
		if len(batch) < s.opts.ReserveBatch && q.withIP == first.withIP && q.ul == first.ul &&
			(!q.withIP || q.r.IPRate == first.r.IPRate) {
			batch = append(batch, q)
		} else {
			rest = append(rest, q)
		}
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	return batch
}

// batcherOf is the queue of shard home of l: the layout's on a single Redis node, the
// shard's on a cluster, where a script's keys must share a slot.
func (s *Store) batcherOf(l *layout, home int) *batcher {
	if s.ChecksIP() {
		return &l.batchers[0]
	}
	return &l.batchers[home]
}

// runBatch makes batch's call and sets each item's answer: one item goes with the single
// script (B3), more with the batch script. A slot move is waited for once, as reserveOn
// does for one reservation.
func (s *Store) runBatch(ctx context.Context, e *entry, l *layout, batch []*batchItem) {
	first := batch[0]
	for _, it := range batch {
		it.seen = l.seen(it.home)
	}
	call := s.reserveCallFor(e, l, first.home, first.r, first.uh, first.idf, first.withIP)
	sc := s.reserve
	var marks []*string // per item, the mark its shard carried (batch only)
	if len(batch) > 1 {
		sc = s.reserveBatch
		marks = s.batchArgs(e, l, call, batch)
	}
	res, err := s.runReserve(ctx, sc, call.args)
	sent := *call.mark
	call.release()
	if s.m != nil {
		s.m.batchSize.Observe(float64(len(batch)))
	}
	for i, it := range batch {
		it.sent, it.err = sent, err
		if marks != nil {
			it.sent = *marks[i]
		}
		if err != nil {
			continue
		}
		if len(batch) == 1 {
			it.res = res
			continue
		}
		if i >= len(res) {
			it.err = fmt.Errorf("inventory: reserve batch script: %d answers for %d reservations", len(res), len(batch))
			continue
		}
		if rerr, ok := res[i].(redis.Error); ok { // that reservation's own error (the script's message)
			it.err = fmt.Errorf("inventory: reserve batch script: reservation %d: %w", i, rerr)
			continue
		}
		one, ok := res[i].([]any)
		if !ok {
			it.err = fmt.Errorf("inventory: reserve batch script: answer %d is %T", i, res[i])
			continue
		}
		it.res = one
	}
}

// batchArgs turns call, the single script's command of batch[0], into the batch script's
// (inventory_reserve_batch.lua): the six keys of each shard the batch reserves on, in the
// order of their first reservation, then its IP keys; ARGV gets the IP bucket's two
// arguments in any case, the shards (number, mark, floor), then five per reservation. It
// answers the mark each item's shard carries.
func (s *Store) batchArgs(e *entry, l *layout, call *reserveCall, batch []*batchItem) []*string {
	const shardKeys, common = 6, 20
	keysEnd := 3 + shardKeys
	if batch[0].withIP {
		keysEnd++
	}
	argv := call.args[keysEnd:]
	// A batch holds at most ReserveBatch items and a few shards: finding an item's shard in
	// homes by a scan costs less than a map per call.
	place := func(home int, homes []int) int { // its place in homes, from 1; 0 when absent
		for i, h := range homes {
			if h == home {
				return i + 1
			}
		}
		return 0
	}
	var homes []int
	for _, it := range batch {
		if place(it.home, homes) == 0 {
			homes = append(homes, it.home)
		}
	}
	out := make([]any, 0, 3+shardKeys*len(homes)+len(batch)+common+1+3*len(homes)+5*len(batch))
	out = append(out, call.args[0], s.reserveBatch.hash, shardKeys*len(homes))
	for _, h := range homes {
		out = append(out, l.args[h].keys[:]...)
	}
	if batch[0].withIP {
		out[2] = shardKeys*len(homes) + len(batch)
		for _, it := range batch {
			out = append(out, it.r.IPKey)
		}
	}
	out = append(out, argv...)
	if !batch[0].withIP {
		out = append(out, 0, 0)
	}
	out = append(out, len(homes))
	mark := make([]*string, len(homes))
	for i, h := range homes {
		mark[i] = l.mark(h, e)
		out = append(out, l.args[h].home, mark[i], l.floorOf(h))
	}
	marks := make([]*string, len(batch))
	for i, it := range batch {
		j := place(it.home, homes)
		marks[i] = mark[j-1]
		out = append(out, j, it.r.UserID, it.uh, it.r.Quantity, it.idf)
	}
	call.args = out
	return marks
}

// runReserve runs a reservation command (single or batch) as runCall does and, when the
// shard's slot is migrating between Cluster nodes (the keys are moving: TRYAGAIN, or the ASK
// the client gave up on; the script declares every key it writes, so a node refuses it before
// any write), waits once and sends it again.
func (s *Store) runReserve(ctx context.Context, sc *script, args []any) ([]any, error) {
	res, err := s.runCall(ctx, sc, args)
	if err == nil || !slotMoving(err) {
		return res, err
	}
	if err := backoff.Sleep(ctx, slotWait); err != nil {
		return nil, err
	}
	s.slotRetries.Add(1)
	return s.runCall(ctx, sc, args)
}
