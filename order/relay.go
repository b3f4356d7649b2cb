package order

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/logrepeat"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/inventory/journal"
)

// RelayGroup is the consumer group every relay reads the journal streams with.
const RelayGroup = "relay"

// RelayOptions configure a Relay. Zero values take the defaults named.
type RelayOptions struct {
	// InstanceID names this relay as a stream consumer (required to be unique per live
	// relay; default "relay-<unix nanos>").
	InstanceID string
	// Batch is the most entries read from one stream and published at once (default 256).
	Batch int
	// ClaimIdle is how long an entry stays pending (read by a relay but not acknowledged)
	// before another relay claims it (default 30 s).
	ClaimIdle time.Duration
	// Poll is the pause after a round that found nothing new (default 50 ms). It doubles
	// after each further empty round up to IdlePoll (default 500 ms), and is back at Poll
	// after a round that moved an entry: an idle relay reads each journal twice a second,
	// not twenty times, and the first entry after a quiet spell waits at most IdlePoll.
	Poll     time.Duration
	IdlePoll time.Duration
	// Discover is how often the set of journal streams is read again (default 1 s).
	Discover time.Duration
	// MaxBackoff caps the pause between failed publishes (default 5 s).
	MaxBackoff time.Duration
	// JournalsKey is the set listing the journal streams (default keyspace.Journals;
	// tests sharing a Redis use their own).
	JournalsKey string
	// Durability is the deployment's mode: with Replicas > 0 an entry is published only
	// once that many replicas have it (WAIT after claiming it on the stream's connection).
	Durability inventory.Durability
	// FsyncHorizon, when set, says how old an entry must be, by the time in its stream id
	// against Redis TIME, before it is published: > 0 in mode aof while a master runs
	// appendfsync everysec, where an entry younger may still be rolled back by a crash. It
	// is called once per batch, from the relay's goroutine, so it follows a change of the
	// masters' fsync policy (the app's periodic durability check); it must be cheap (an
	// atomic load). Nil: no horizon.
	FsyncHorizon func() time.Duration
}

// Relay moves journal entries to the queue: it reads each stream of sk:journals with the
// consumer group "relay", publishes, and acknowledges (journal.Reader.Ack) only after the
// Publisher confirmed the send. Entries another relay left pending longer than ClaimIdle are
// claimed and sent again. A Relay is used by one goroutine, the one calling Run.
type Relay struct {
	rdb     redis.UniversalClient
	pub     Publisher
	opts    RelayOptions
	m       *Metrics
	log     *slog.Logger
	jr      *journal.Reader // reads and acknowledges the journals for RelayGroup as InstanceID
	groups  map[string]bool // streams whose group exists
	streams []string
	held    map[string]*heldBatch // streams whose last batch waits (durability, ack), by stream
	rl      *logrepeat.Log        // repeated failures: one line per kind per 10 s

	beforeDurable func(stream string) // test hook: runs before the durability step of a batch
}

// NewRelay returns a relay; it starts working with Run. An error means the embedded script
// did not load.
func NewRelay(rdb redis.UniversalClient, pub Publisher, opts RelayOptions, m *Metrics, log *slog.Logger) (*Relay, error) {
	if opts.InstanceID == "" {
		opts.InstanceID = "relay-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	if opts.Batch <= 0 {
		opts.Batch = 256
	}
	if opts.ClaimIdle <= 0 {
		opts.ClaimIdle = 30 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = 50 * time.Millisecond
	}
	if opts.IdlePoll <= 0 {
		opts.IdlePoll = 500 * time.Millisecond
	}
	opts.IdlePoll = max(opts.IdlePoll, opts.Poll)
	if opts.Discover <= 0 {
		opts.Discover = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.JournalsKey == "" {
		opts.JournalsKey = keyspace.Journals
	}
	if log == nil {
		log = slog.Default()
	}
	jr, err := journal.NewReader(rdb, RelayGroup, opts.InstanceID)
	log = log.With("component", "relay", "instance", opts.InstanceID)
	if err != nil {
		return nil, err
	}
	return &Relay{rdb: rdb, pub: pub, opts: opts, m: m, jr: jr, groups: map[string]bool{},
		held: map[string]*heldBatch{}, log: log, rl: logrepeat.New(log, 0)}, nil
}

// Run relays until ctx is done and then returns nil. Entries read but not yet acknowledged
// when ctx ends stay pending and are claimed by the next relay after ClaimIdle.
func (r *Relay) Run(ctx context.Context) error {
	var lastDiscover, lastClaim time.Time
	idle := backoff.Doubling{Min: r.opts.Poll, Max: r.opts.IdlePoll}
	for ctx.Err() == nil {
		now := time.Now()
		if now.Sub(lastDiscover) >= r.opts.Discover {
			if err := r.discover(ctx); err != nil && ctx.Err() == nil {
				r.m.RelayErrors.WithLabelValues("discover").Inc()
				r.rl.Warn("discover", "reading the journal list failed", "err", err)
				_ = backoff.Sleep(ctx, r.opts.Poll*4)
				continue
			}
			r.rl.OK("discover", "reading the journal list works again")
			lastDiscover = now
		}
		claim := now.Sub(lastClaim) >= r.opts.ClaimIdle/4
		if claim {
			lastClaim = now
		}
		moved, failed := 0, false
		for _, s := range r.streams {
			if ctx.Err() != nil {
				break
			}
			n, err := r.stream(ctx, s, claim)
			if err != nil && ctx.Err() == nil {
				failed = true
				r.rl.Warn("stream", "relaying a journal failed", "stream", s, "err", err)
			}
			moved += n
		}
		// "works again" only after a whole round without a failure: with one journal failing
		// (its cluster node down) and others fine, a per-journal OK would undo the suppression
		// and log two lines every poll.
		if !failed && ctx.Err() == nil {
			r.rl.OK("stream", "relaying journals works again")
		}
		if moved > 0 {
			idle.Reset()
		} else {
			_ = backoff.Sleep(ctx, idle.Next())
		}
	}
	return nil
}

// discover reads sk:journals and creates the group on streams seen for the first time.
func (r *Relay) discover(ctx context.Context) error {
	names, err := r.rdb.SMembers(ctx, r.opts.JournalsKey).Result()
	if err != nil {
		return err
	}
	streams := names[:0]
	for _, s := range names {
		if !journal.IsStream(s) {
			continue
		}
		if !r.groups[s] {
			err := r.rdb.XGroupCreateMkStream(ctx, s, RelayGroup, "0").Err()
			if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
				if ctx.Err() != nil {
					return err
				}
				// One journal that cannot take a group (its node down, a key of another type)
				// must not stop the others: skip it this round, try again at the next discover.
				r.m.RelayErrors.WithLabelValues("discover").Inc()
				r.rl.Warn("group", "creating the relay group on a journal failed", "stream", s, "err", err)
				continue
			}
			r.groups[s] = true
		}
		streams = append(streams, s)
	}
	r.streams = streams
	return nil
}

// heldBatch is a stream's batch that could not finish in one go: its entries are not yet
// durable (their master has too few replicas, the fsync horizon is ahead, Redis failed) or,
// once published, not yet acknowledged. It stays pending for this relay and is taken up
// again at the stream's next turn from until on, while the other streams go on: one
// activity's trouble holds no other.
type heldBatch struct {
	entries   []journal.Entry
	published bool             // sent to the queue; acks are what is left to do
	acks      []journal.Ack    // when published
	until     time.Time        // not before
	retry     backoff.Doubling // the pause after each failure in a row
	// horizon is the highest fsync horizon in force since just before the entries were read:
	// a horizon that drops to 0 later (the check now sees appendfsync always, as on a Redis
	// restarted on an AOF that lost them) does not make them durable.
	horizon time.Duration
}

// Pauses before a retry start at these and double up to Options.MaxBackoff.
const (
	heldRetryMin    = 50 * time.Millisecond  // a held batch's next turn after a failure
	publishRetryMin = 100 * time.Millisecond // a publish the Publisher did not confirm
)

// newHeld is a batch of entries read from a stream, not yet durable; horizon is the fsync
// horizon read before the read.
func (r *Relay) newHeld(entries []journal.Entry, horizon time.Duration) *heldBatch {
	return &heldBatch{entries: entries, retry: backoff.Doubling{Min: heldRetryMin, Max: r.opts.MaxBackoff}, horizon: horizon}
}

// hold keeps h for the stream's next turn, after a failure (h.retry's next pause) or, with
// wait > 0, once wait has passed.
func (r *Relay) hold(stream string, h *heldBatch, failed bool, wait time.Duration) {
	if failed {
		wait = h.retry.Next()
	}
	h.until = time.Now().Add(wait)
	r.held[stream] = h
}

// stream relays one batch of new entries of one stream, and first, when claim is set, one
// batch of entries left pending too long; a batch held from an earlier turn goes first, and
// while it still waits the stream is skipped this turn. It returns how many entries it moved.
func (r *Relay) stream(ctx context.Context, stream string, claim bool) (int, error) {
	moved := 0
	if h := r.held[stream]; h != nil {
		if time.Now().Before(h.until) {
			return 0, nil
		}
		n, err := r.advance(ctx, stream, h)
		if err != nil || r.held[stream] != nil {
			return n, err
		}
		moved += n
	}
	horizon := r.fsyncHorizon() // before the reads: the entries meet at least this one
	if claim {
		msgs, err := r.jr.Claim(ctx, stream, r.opts.ClaimIdle, r.opts.Batch)
		if err != nil {
			r.m.RelayErrors.WithLabelValues("claim").Inc()
			r.checkNoGroup(stream, err)
			return 0, fmt.Errorf("xautoclaim: %w", err)
		}
		if len(msgs) > 0 {
			r.m.RelayClaimed.Add(float64(len(msgs)))
			r.log.Info("claimed pending journal entries", "stream", stream, "entries", len(msgs))
			n, err := r.advance(ctx, stream, r.newHeld(msgs, horizon))
			if err != nil || r.held[stream] != nil {
				return moved + n, err
			}
			moved += n
		}
	}
	horizon = max(horizon, r.fsyncHorizon()) // the claimed batch above may have taken long
	entries, err := r.jr.Read(ctx, stream, r.opts.Batch)
	if err != nil {
		r.m.RelayErrors.WithLabelValues("read").Inc()
		r.checkNoGroup(stream, err)
		return moved, fmt.Errorf("xreadgroup: %w", err)
	}
	if len(entries) == 0 {
		return moved, nil
	}
	n, err := r.advance(ctx, stream, r.newHeld(entries, horizon))
	return moved + n, err
}

// checkNoGroup forgets the stream's relay group when err is Redis's NOGROUP reply (the group
// or the stream is gone), so the next discover makes it again; it reports whether it was.
func (r *Relay) checkNoGroup(stream string, err error) bool {
	if !redis.HasErrorPrefix(err, "NOGROUP") {
		return false
	}
	delete(r.groups, stream)
	return true
}

// advance takes the batch h of the stream as far as it goes: durable in the deployment's
// mode (one attempt), published (retried with backoff until the Publisher confirms or ctx
// ends: the queue is every stream's), acknowledged (one attempt). What cannot be done now is
// held for the stream's next turn (hold), so the relay goes on with the other streams; a
// batch whose group vanished (NOGROUP) is dropped, the group made again reads the stream
// from its start. It returns how many entries it finished.
func (r *Relay) advance(ctx context.Context, stream string, h *heldBatch) (int, error) {
	delete(r.held, stream)
	if !h.published {
		h.horizon = max(h.horizon, r.fsyncHorizon())
		entries, wait, err := r.durable(ctx, stream, h.entries, h.horizon)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			r.m.RelayErrors.WithLabelValues("durable").Inc()
			if r.checkNoGroup(stream, err) {
				return 0, fmt.Errorf("durable: %w", err)
			}
			r.hold(stream, h, true, 0)
			return 0, fmt.Errorf("journal entries not durable yet, held: %w", err)
		}
		if len(entries) == 0 {
			return 0, nil // none left on this master, or taken by another relay
		}
		h.entries = entries
		if wait > 0 {
			r.hold(stream, h, false, wait)
			return 0, nil
		}
		msgs, acks := r.decode(stream, entries)
		if err := r.publish(ctx, stream, msgs); err != nil {
			return 0, err
		}
		h.published, h.acks = true, acks
		h.retry.Reset()
	}
	acked, _, err := r.jr.Ack(ctx, stream, h.acks)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		r.m.RelayErrors.WithLabelValues("ack").Inc()
		r.hold(stream, h, true, 0)
		return 0, fmt.Errorf("journal ack failed, held: %w", err)
	}
	r.m.RelayAcked.Add(float64(acked))
	r.rl.OK("ack", "journal acks work again")
	return len(h.entries), nil
}

// decode turns journal entries into messages and the acknowledgements of every entry.
func (r *Relay) decode(stream string, entries []journal.Entry) ([]Message, []journal.Ack) {
	msgs := make([]Message, 0, len(entries))
	acks := make([]journal.Ack, 0, len(entries))
	for _, e := range entries {
		m, err := messageOf(e.Reservation, e.Err)
		if err != nil {
			// A malformed entry can never become an order: acknowledge it with the units it
			// claims (if any) so it does not block the stream, and leave it to
			// reconciliation to report.
			r.m.DeadLetters.WithLabelValues(string(causeBadJournalEntry)).Inc()
			r.log.Error("malformed journal entry", "stream", stream, "id", e.ID, "err", err)
			acks = append(acks, journal.Ack{ID: e.ID, Units: int64(m.Quantity)})
			continue
		}
		msgs = append(msgs, m)
		acks = append(acks, journal.Ack{ID: e.ID, Units: int64(m.Quantity)})
	}
	return msgs, acks
}

// publish sends msgs, retrying with backoff until the Publisher confirms or ctx ends.
func (r *Relay) publish(ctx context.Context, stream string, msgs []Message) error {
	retry := backoff.Doubling{Min: publishRetryMin, Max: r.opts.MaxBackoff}
	for len(msgs) > 0 {
		err := r.pub.Publish(ctx, msgs)
		if err == nil {
			r.m.RelaySent.Add(float64(len(msgs)))
			r.rl.OK("publish", "publishing works again")
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.m.RelayErrors.WithLabelValues("publish").Inc()
		pause := retry.Next()
		r.rl.Warn("publish", "publish failed; retrying", "stream", stream, "entries", len(msgs), "backoff", pause, "err", err)
		_ = backoff.Sleep(ctx, pause)
	}
	return nil
}

// durable makes one attempt at the entries' durability in the deployment's mode, so that a
// rollback of Redis can never leave an order in MySQL for a unit Redis then sells again.
// With Durability.Replicas it claims the entries again for this relay (XCLAIM, a write on
// the stream's master) followed by WAIT on the same connection: WAIT then covers the writes
// that made the entries; too few replicas is an error (the caller holds the batch). With
// a horizon (the batch's: the highest since its entries were read), wait is how long until
// the newest entry is older than the horizon by Redis's clock (0: durable now).
// The entries stay pending for this relay meanwhile (another relay claims them after
// ClaimIdle if this one dies). It returns the entries the stream's master
// still has: one read from a master that then failed over may be gone (its reservation's
// WAIT fell short, it was answered OUTCOME_UNKNOWN and the new master never had it), and
// must not become an order.
func (r *Relay) durable(ctx context.Context, stream string, entries []journal.Entry, horizon time.Duration) (_ []journal.Entry, wait time.Duration, _ error) {
	if len(entries) == 0 {
		return entries, 0, nil
	}
	if r.beforeDurable != nil {
		r.beforeDurable(stream)
	}
	if d := r.opts.Durability; d.Replicas > 0 {
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.ID
		}
		var claim *redis.StringSliceCmd
		err := d.Acked(ctx, r.rdb, stream, func(p redis.Pipeliner) {
			claim = p.XClaimJustID(ctx, &redis.XClaimArgs{Stream: stream, Group: RelayGroup, Consumer: r.opts.InstanceID, MinIdle: 0, Messages: ids})
		})
		if err != nil {
			r.rl.Warn("durable", "journal entries not on enough replicas yet; holding them", "stream", stream, "entries", len(entries), "err", err)
			return entries, 0, err
		}
		r.rl.OK("durable", "journal entries reach the replicas again")
		entries = keepClaimed(entries, claim.Val())
		if len(entries) == 0 {
			return entries, 0, nil
		}
	}
	if h := horizon; h > 0 {
		now, err := r.rdb.Time(ctx).Result()
		if err != nil {
			return entries, 0, fmt.Errorf("redis TIME: %w", err)
		}
		if wait := entryTime(entries[len(entries)-1].ID).Add(h).Sub(now); wait > 0 {
			return entries, wait, nil
		}
		// The entries were read before the horizon passed, and Redis may have rolled back
		// since (killed, started on an AOF without them): publish only those the stream still
		// holds for the group (XCLAIM answers the ids it has), which are now on disk.
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.ID
		}
		have, err := r.rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: stream, Group: RelayGroup, Consumer: r.opts.InstanceID,
			MinIdle: 0, Messages: ids}).Result()
		if err != nil {
			return entries, 0, fmt.Errorf("xclaim: %w", err)
		}
		if len(have) < len(entries) {
			r.log.Warn("journal entries read before a Redis rollback are gone; not published", "stream", stream,
				"entries", len(entries)-len(have))
		}
		entries = keepClaimed(entries, have)
	}
	return entries, 0, nil
}

// fsyncHorizon is RelayOptions.FsyncHorizon's answer now (0 without one).
func (r *Relay) fsyncHorizon() time.Duration {
	if r.opts.FsyncHorizon == nil {
		return 0
	}
	return r.opts.FsyncHorizon()
}

// keepClaimed returns the entries whose id is in ids, in order.
func keepClaimed(entries []journal.Entry, ids []string) []journal.Entry {
	if len(ids) == len(entries) {
		return entries
	}
	have := make(map[string]bool, len(ids))
	for _, id := range ids {
		have[id] = true
	}
	out := entries[:0:0]
	for _, e := range entries {
		if have[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// entryTime is the time part of a stream entry id ("<unix ms>-<seq>").
func entryTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return time.UnixMilli(n)
}
