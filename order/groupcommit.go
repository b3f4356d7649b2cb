package order

import (
	"context"
	"sync"
)

// maxCombined bounds the orders of one combined transaction (the IN lists of its reads).
const maxCombined = 1000

// combiner runs the writer's guarded transactions one at a time per process and hands each
// the batches that queued while the one before ran: the queue's handler goroutines would
// otherwise take turns on the activities' row locks, one small batch each (insert.go). A
// batch's caller waits for the transaction that carries it; a goroutine runs them while any
// are queued, and ends when none is.
type combiner struct {
	mu      sync.Mutex
	pending []*combineReq
	running bool
}

type combineReq struct {
	batch []Message
	out   written
	err   error
	done  chan struct{}
}

// insert queues batch for the next combined transaction and returns its part of the outcome.
// run is the transaction's work on a batch of distinct reservations. A caller whose ctx ends
// returns ctx's error; its batch is still written (the queue delivers it again: idempotent).
func (c *combiner) insert(ctx context.Context, batch []Message, run func([]Message) (written, error)) (written, error) {
	req := &combineReq{batch: batch, done: make(chan struct{})}
	c.mu.Lock()
	c.pending = append(c.pending, req)
	if !c.running {
		c.running = true
		go c.loop(run)
	}
	c.mu.Unlock()
	select {
	case <-req.done:
		return req.out, req.err
	case <-ctx.Done():
		return written{}, ctx.Err()
	}
}

// loop runs combined transactions until no batch is queued.
func (c *combiner) loop(run func([]Message) (written, error)) {
	for {
		c.mu.Lock()
		var reqs []*combineReq
		n := 0
		for len(c.pending) > 0 && (len(reqs) == 0 || n+len(c.pending[0].batch) <= maxCombined) {
			reqs = append(reqs, c.pending[0])
			n += len(c.pending[0].batch)
			c.pending = c.pending[1:]
		}
		if len(reqs) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		all := make([]Message, 0, n)
		seen := make(map[Message]bool, n)
		for _, r := range reqs {
			for _, m := range r.batch {
				k := m
				k.Attempt = 0 // the same reservation, whatever its delivery count
				if !seen[k] {
					seen[k] = true
					all = append(all, m)
				}
			}
		}
		out, err := safeRun(run, all)
		for _, r := range reqs {
			r.out, r.err = out.part(r.batch), err
			close(r.done)
		}
	}
}

// safeRun is run with a panic turned into a *PanicError for every batch it carried (the
// queue hands them back; Writer.Handle isolates a message that keeps panicking).
func safeRun(run func([]Message) (written, error), all []Message) (out written, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
		}
	}()
	return run(all)
}

// part is the outcome of the reservations of batch.
func (o written) part(batch []Message) written {
	in := make(map[string]bool, len(batch))
	for _, m := range batch {
		in[m.ReservationID] = true
	}
	p := written{ids: map[string]int64{}, gens: o.gens}
	for rid, id := range o.ids {
		if in[rid] {
			p.ids[rid] = id
		}
	}
	for _, x := range o.poison {
		if in[x.msg.ReservationID] {
			p.poison = append(p.poison, x)
		}
	}
	for _, x := range o.refused {
		if in[x.msg.ReservationID] {
			p.refused = append(p.refused, x)
		}
	}
	for _, m := range o.unknown {
		if in[m.ReservationID] {
			p.unknown = append(p.unknown, m)
		}
	}
	for _, m := range o.compensated {
		if in[m.ReservationID] {
			p.compensated = append(p.compensated, m)
		}
	}
	for _, x := range o.stale {
		if in[x.msg.ReservationID] {
			p.stale = append(p.stale, x)
		}
	}
	return p
}
