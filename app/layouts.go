package app

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/internal/backoff"
)

// Delays between passes of runReshard while a reshard it asked for failed (Redis down, the
// activity still loading): the first retry after reshardRetryMin, doubling up to
// reshardRetryMax. Without a failure there is no timer at all: a pass runs when a snapshot
// is applied, and only then.
const (
	reshardRetryMin = 500 * time.Millisecond
	reshardRetryMax = 10 * time.Second
)

// shardFollow is what runReshard has done so far. Safe for concurrent use.
type shardFollow struct {
	// followed is the latest snapshot whose activities.<id>.shards every activity has.
	followed atomic.Pointer[Snapshot]
	// retrying is true while the latest pass left a failed reshard to try again.
	retrying atomic.Bool
	// created wakes runReshard for one more pass: an activity was created here, and the
	// configuration may name its shard count already (an operator prepares the sale's
	// configuration, then posts the activity).
	created chan struct{}
}

func newShardFollow() shardFollow { return shardFollow{created: make(chan struct{}, 1)} }

// activityCreated asks runReshard for a pass over the current snapshot, without blocking.
func (f *shardFollow) activityCreated() {
	select {
	case f.created <- struct{}{}:
	default: // a pass is already asked for
	}
}

// runReshard makes the shard layouts follow the configuration: each applied snapshot
// (config.Reloader.Changed) starts one pass that reshards every activity whose
// activities.<id>.shards differs from its current shard count, so a layout change starts
// right after the apply, not at the next tick of a poll; an activity created on this
// instance starts one more pass, for a configuration applied before the activity existed. Every instance follows the same
// configuration; the inventory's reshard is idempotent and serialised in Redis, so the first
// instance moves the stock and the others find it done. An instance also learns of a
// reshard run elsewhere from the "layout <id>" event, and at the latest at its inventory's
// next refresh (inventory.Options.RefreshEvery, 250 ms by default), which reads every
// activity's meta; a reservation meeting a closed shard re-reads meta at once in any case.
func (a *App) runReshard(ctx context.Context) error {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	delay := backoff.Doubling{Min: reshardRetryMin, Max: reshardRetryMax}
	for {
		changed := a.cfg.Changed() // before Current: a swap in between closes it
		snap := a.cfg.Current()
		if snap != nil {
			if a.followShards(ctx, snap) {
				retry.Reset(delay.Next())
				a.layouts.retrying.Store(true)
			} else {
				retry.Stop()
				delay.Reset()
				a.layouts.followed.Store(snap)
				a.layouts.retrying.Store(false)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-a.layouts.created:
		case <-retry.C:
		}
	}
}

// followShards runs one pass of runReshard over snap and reports whether a reshard failed
// and should be tried again.
func (a *App) followShards(ctx context.Context, snap *Snapshot) (pending bool) {
	for id := range snap.Cfg.Activities {
		n, ok := snap.Cfg.ShardsOverride(id)
		if !ok {
			continue
		}
		// Lookup, not the cache alone: right after start the cache may not hold the
		// activity yet, and a skipped activity would wait for the next edit.
		v, known, err := a.inv.Lookup(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("reshard: reading the activity failed, will retry", "activity", id, "err", err)
			}
			pending = true
			continue
		}
		if !known || v.Shards == n {
			continue
		}
		if err := a.inv.Reshard(ctx, id, n); err != nil {
			if ctx.Err() == nil {
				a.log.Warn("reshard failed, will retry", "activity", id, "shards", n, "err", err)
			}
			pending = true
			continue
		}
		a.log.Info("resharded", "activity", id, "shards", n)
	}
	return pending
}
