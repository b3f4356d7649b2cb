package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Group commit: the reservations of one layout shard that arrive while a call of
// that shard is in flight wait for it, and go together, in arrival order, as one call of
// inventory_reserve_batch.lua, which runs each exactly as inventory_reserve.lua would, one
// after the other. Each reservation gets its own answer and its caller decides on it as on
// the single script's (reserveOn); the shard's checks (open, generation mark, floor) are
// made for each, with the mark and floor the batch was built with.
//
// Invariants:
//   - B1: a reservation is sent at most once: a waiter leaves the queue only by being taken
//     into a batch (then it waits for that batch's answer, whatever its context says) or by
//     its context ending while still queued (then it was never sent).
//   - B2: at most one call per shard is in flight from this instance (busy); the queue is
//     sent by a waiter of it (the first of the next batch leads it), so no caller's answer
//     waits for a batch after its own.
//   - B3: no wait when the shard is idle: a reservation that finds no call in flight is sent
//     at once, alone, with the single script (the same command as without batching).
//   - B4: a batch shares the arguments of the activity, the limits and the IP bucket's
//     settings: a reservation whose arguments differ from the first's (a limit edited in
//     between, with or without the IP bucket) waits for a later batch.

// DefaultReserveBatch is the default of Options.ReserveBatch.
const DefaultReserveBatch = 32

// batcher is one layout shard's queue.
type batcher struct {
	mu    sync.Mutex
	busy  bool // a call of this shard is in flight (B2)
	queue []*batchItem
}

// batchItem is one reservation waiting for, or carried by, a batch.
type batchItem struct {
	r       *ReserveRequest
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

// reserveBatched sends r's reservation on shard home of l, with others of the same shard
// when a call of it is in flight, and returns its own answer as runCall would, with the
// mark the call carried and whether this instance had met the shard's generation key.
func (s *Store) reserveBatched(ctx context.Context, e *entry, l *layout, home int, r *ReserveRequest, uh, idf string, withIP bool) (res []any, sent string, seen bool, err error) {
	if s.opts.ReserveBatch <= 1 { // each alone, in parallel: no queue
		call := s.reserveCallFor(e, l, home, r, uh, idf, withIP)
		seen = l.seen(home)
		res, err = s.runReserve(ctx, s.reserve, call.args)
		sent = *call.mark
		call.release()
		return res, sent, seen, err
	}
	b := &l.batchers[home]
	it := batchItems.Get().(*batchItem)
	it.r, it.uh, it.idf, it.withIP, it.ul = r, uh, idf, withIP, e.userLimitArgs(r)
	defer func() {
		*it = batchItem{done: it.done}
		batchItems.Put(it)
	}()
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		s.sendBatches(ctx, e, l, home, []*batchItem{it})
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
		s.sendBatches(ctx, e, l, home, it.lead)
	}
	return it.res, it.sent, it.seen, it.err
}

// sendBatches sends batch (its first item is the caller's), answers every other item, and
// hands the queue on: the first of the next batch sends it, or the shard is idle again.
func (s *Store) sendBatches(ctx context.Context, e *entry, l *layout, home int, batch []*batchItem) {
	if len(batch) > 1 {
		// Others' answers ride on this call: the leader's request ending (a client gone)
		// must not fail theirs. The client's timeouts bound the call.
		ctx = context.WithoutCancel(ctx)
	}
	s.runBatch(ctx, e, l, home, batch)
	b := &l.batchers[home]
	b.mu.Lock()
	next := s.takeBatch(b)
	if next == nil {
		b.busy = false
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

// runBatch makes batch's call and sets each item's answer: one item goes with the single
// script (B3), more with the batch script. A slot move is waited for once, as reserveOn
// does for one reservation.
func (s *Store) runBatch(ctx context.Context, e *entry, l *layout, home int, batch []*batchItem) {
	first := batch[0]
	seen := l.seen(home)
	call := s.reserveCallFor(e, l, home, first.r, first.uh, first.idf, first.withIP)
	sc := s.reserve
	if len(batch) > 1 {
		sc = s.reserveBatch
		s.batchArgs(call, batch)
	}
	res, err := s.runReserve(ctx, sc, call.args)
	sent := *call.mark
	call.release()
	if s.m != nil {
		s.m.batchSize.Observe(float64(len(batch)))
	}
	for i, it := range batch {
		it.sent, it.seen, it.err = sent, seen, err
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
		one, ok := res[i].([]any)
		if !ok {
			it.err = fmt.Errorf("inventory: reserve batch script: answer %d is %T", i, res[i])
			continue
		}
		it.res = one
	}
}

// batchArgs turns call, the single script's command of batch[0], into the batch script's
// (inventory_reserve_batch.lua): its IP keys follow the shard's, ARGV gets the IP bucket's
// two arguments in any case, then four per further reservation.
func (s *Store) batchArgs(call *reserveCall, batch []*batchItem) {
	a := call.args
	a[1] = s.reserveBatch.hash
	const shardKeys, common = 6, 20
	keysEnd := 3 + shardKeys
	if batch[0].withIP {
		keysEnd++
	}
	argv := a[keysEnd:]
	out := make([]any, 0, 3+shardKeys+len(batch)+common+4*(len(batch)-1))
	out = append(out, a[:3+shardKeys]...)
	if batch[0].withIP {
		out[2] = shardKeys + len(batch)
		for _, it := range batch {
			out = append(out, it.r.IPKey)
		}
	}
	out = append(out, argv...)
	if !batch[0].withIP {
		out = append(out, 0, 0)
	}
	for _, it := range batch[1:] {
		out = append(out, it.r.UserID, it.uh, it.r.Quantity, it.idf)
	}
	call.args = out
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
	t := time.NewTimer(slotWait)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	case <-t.C:
	}
	s.slotRetries.Add(1)
	return s.runCall(ctx, sc, args)
}
