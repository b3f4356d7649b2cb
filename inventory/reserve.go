package inventory

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// ReserveRequest asks for Quantity units of an activity for a user: what admission planned
// (app/admission.Admit decided the activity's state from its snapshot, the quantity against
// the per-user limit and who takes the per-IP token); Reserve executes it, and the script's
// answer, with Redis time, is the one that counts. UserRate, Window and WindowMax are the
// per-user limits of the current configuration (zero disables each); they travel with every
// call so a configuration swap never rebuilds Redis state.
type ReserveRequest struct {
	ActivityID     string
	UserID         string // 1..keyspace.MaxUserID bytes of UTF-8
	IdempotencyKey string // optional, scoped to (user, activity); at most keyspace.MaxIdempotencyKey bytes
	Quantity       int    // at least 1; the script answers AlreadyPurchased past the per-user limit
	UserRate       tokenbucket.Limit
	Window         time.Duration
	WindowMax      int
	// IPKey, when set, is the request's per-IP plan as admission decided it (the Redis key of
	// the client's IP bucket, limiter.Limiter.IPKey, the value the limiter got): the
	// reservation script takes one token from it (at IPRate) along with the user's, in the
	// same round trip (IPRateLimited when empty). The caller sets it only when Store.ChecksIP
	// (single node): on Redis Cluster the key lives in another slot and the limiter takes the
	// IP token.
	IPKey  string
	IPRate tokenbucket.Limit
}

// Code is the outcome of a reservation: the answer number of inventory_reserve.lua itself
// (its header lists them), so the script's answer and the Go code are one table. The zero
// value Unknown is never returned with a nil error.
type Code int

// Reservation outcomes, numbered as the script answers them.
const (
	Unknown           Code = 0
	Reserved          Code = 1  // a new reservation: ReservationID
	Replayed          Code = 2  // the idempotency key was seen: the first ReservationID
	AlreadyPurchased  Code = 3  // the per-user limit is reached: ReservationID is the last one, may be ""
	NotOpen           Code = 4  // before OpensAt (Redis time)
	Closed            Code = 5  // at or after ClosesAt (Redis time)
	UserRateLimited   Code = 6  // per-user token bucket: RetryAfter
	UserWindowLimited Code = 7  // per-user sliding window: RetryAfter
	SoldOut           Code = 8  // no stock for this request (the script's EMPTY, after refills)
	IPRateLimited     Code = 12 // per-IP token bucket (IPKey): RetryAfter
)

// Answers of the script that Reserve acts on itself and never returns.
const (
	rcShardClosed Code = 10 // the shard was drained by a reshard: re-read the layout
	rcGeneration  Code = 13 // the shard's generation is not the caller's (rollback.go)
	rcRolledBack  Code = 14 // the shard's counter went back (rollback.go)
)

// codeNames is the one table of the script's answers: a number the script may give has a
// name, any other is an unexpected answer.
var codeNames = [...]string{
	Reserved: "RESERVED", Replayed: "REPLAYED", AlreadyPurchased: "ALREADY_PURCHASED", NotOpen: "NOT_OPEN",
	Closed: "CLOSED", UserRateLimited: "USER_RATE_LIMITED", UserWindowLimited: "USER_WINDOW_LIMITED",
	SoldOut: "SOLD_OUT", rcShardClosed: "SHARD_CLOSED", IPRateLimited: "IP_RATE_LIMITED",
	rcGeneration: "GENERATION", rcRolledBack: "ROLLED_BACK",
}

func (c Code) String() string {
	if c == Unknown {
		return "UNKNOWN"
	}
	if c > 0 && int(c) < len(codeNames) && codeNames[c] != "" {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// ReserveResult is the answer to a ReserveRequest.
type ReserveResult struct {
	Code          Code
	ReservationID string
	RetryAfter    time.Duration // UserRateLimited, UserWindowLimited, IPRateLimited
	OpensAt       time.Time     // NotOpen
}

// reserveCode is the Code of an answer of inventory_reserve.lua: its first element, one of
// codeNames.
func reserveCode(res []any) (Code, error) {
	n, ok := asInt(res[0])
	if !ok {
		return Unknown, fmt.Errorf("inventory: reserve script: unexpected answer %v", res)
	}
	if n <= 0 || n >= int64(len(codeNames)) || codeNames[n] == "" {
		return Unknown, fmt.Errorf("lua: inventory_reserve.lua returned unknown code %d", n)
	}
	return Code(n), nil
}

// attempt is what one pass over a layout decided.
type attempt int

const (
	done     attempt = iota
	relayout         // a shard was closed by a reshard: re-read meta and retry
	adopted          // the home shard was given the activity's generation (adoptGeneration): run again
	remarked         // the home shard's mark was raised by a debit since this call was built: run again
	refilled         // units were moved to the home shard: run the reservation again
	recheck          // nothing could be moved, but others may have refilled the home shard: run once more
	pause            // units are being moved by this instance: wait a moment and run again
	landing          // every shard is empty but units are in transit (any instance): wait once, run again
)

// slotWait is how long a reservation whose shard's slot is migrating waits before its one
// retry: the shard's keys move in one MIGRATE, the slot is handed over right after.
const slotWait = 50 * time.Millisecond

// slotMoving reports whether err is a Cluster node's answer during a slot migration:
// TRYAGAIN, an ASK redirect the client gave up following, or a script refused because it
// would write a key of a slot migrating away.
func slotMoving(err error) bool {
	if redis.IsTryAgainError(err) {
		return true
	}
	if _, ok := redis.IsAskError(err); ok {
		return true
	}
	// The node refuses such a script with a plain ERR reply ("Script attempted to access a
	// non local key in a cluster node"): no code of its own, its text is the only signal.
	return strings.Contains(err.Error(), "non local key")
}

// busyWait bounds how long Reserve waits for a reshard before ErrBusy.
const busyWait = time.Second

// pauseWait bounds the one wait of a request for units on their way to its home shard.
const pauseWait = 50 * time.Millisecond

// maxRefills bounds the refills of the home shard within one Reserve; buyers on the same
// home shard may take the units moved in before this request runs again.
const maxRefills = 4

// attemptField is the binding field of a request without an idempotency key: a number of
// its own (random per Store, then counted), bound like a key to the reservation it makes.
// go-redis sends a command again when the connection breaks before the reply (MaxRetries;
// on a Cluster also to the node after a failover), and the reserve script run twice would
// take two units for one request: the second run finds the binding of the first and
// answers its reservation instead. Only a reservation writes the field (one per unit sold,
// bounded by the stock); the journal carries it like a key's, so a restore rebuilds it.
func (s *Store) attemptField(uh string) string {
	var b [16]byte
	n := s.attemptBase + s.attempts.Add(1)
	const hexDigits = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[n&15]
		n >>= 4
	}
	return uh + ":i:" + string(b[:])
}

// idemField is the users-hash field of a user's idempotency key.
func idemField(uh, key string) string {
	sum := sha1.Sum([]byte(key))
	return uh + ":i:" + hex.EncodeToString(sum[:8])
}

// Reserve takes r.Quantity units for the user, or says why not, as admission planned it (see
// ReserveRequest): it runs one script on the user's home shard and checks again none of what
// admission decided; the script decides the activity's state (not open, closed, sold out)
// with Redis time, the per-user limit and the stock. A reservation never spans two shards:
// when the home shard has fewer units than asked, units are first moved to it from other
// shards (a journalled transfer, see Mover) and the script runs again. An error means Redis
// failed, the activity is unknown (ErrNotFound), busy (ErrBusy) or being recovered
// (ErrRecovering), or the request is malformed (ErrInvalid); the caller fails closed.
func (s *Store) Reserve(ctx context.Context, r ReserveRequest) (ReserveResult, error) {
	if !keyspace.ValidName(r.ActivityID) {
		return ReserveResult{}, ErrNotFound
	}
	if r.UserID == "" || len(r.UserID) > keyspace.MaxUserID || !utf8.ValidString(r.UserID) || len(r.IdempotencyKey) > keyspace.MaxIdempotencyKey || r.Quantity < 1 {
		return ReserveResult{}, fmt.Errorf("%w: user id, idempotency key or quantity", ErrInvalid)
	}
	e, err := s.entryFor(ctx, r.ActivityID)
	if err != nil {
		return ReserveResult{}, err
	}
	if e.recovering.Load() != nil {
		return ReserveResult{}, ErrRecovering
	}
	uh := s.UserHash(r.UserID)
	idf := ""
	if r.IdempotencyKey != "" {
		idf = idemField(uh, r.IdempotencyKey)
	} else {
		idf = s.attemptField(uh)
	}
	// A reshard closes shards before the new layout opens: wait for it (normally a few ms),
	// up to busyWait.
	deadline := time.Now().Add(busyWait)
	refills, paused, adoptions, remarks := 0, false, 0, 0
	for i := 0; ; i++ {
		l := e.layout.Load()
		res, next, err := s.reserveOn(ctx, e, l, &r, uh, idf, refills < maxRefills)
		if err != nil || next == done {
			return res, err
		}
		switch next {
		case adopted:
			if adoptions++; adoptions > 1 {
				return ReserveResult{}, fmt.Errorf("%w: %s: the home shard's generation does not hold", ErrBusy, r.ActivityID)
			}
			continue
		case remarked:
			// Each raise is a debit that took units from the shard (finite: bounded by the
			// stock), and the recorded mark is the one read now; a shard refilling others
			// under many instances can need a few tries. The busy deadline bounds them, but
			// not the first two: a request that waited out the deadline in its queue
			// (a busy machine) still sends the mark it was refused on again, or it would
			// answer busy without having tried the shard's current mark.
			if remarks++; remarks > 2 && time.Now().After(deadline) {
				return ReserveResult{}, fmt.Errorf("%w: %s: the home shard's mark keeps moving", ErrBusy, r.ActivityID)
			}
			continue
		case refilled:
			refills++
			continue
		case recheck:
			refills = maxRefills
			continue
		case pause, landing:
			// Once, wait (without Redis calls, up to pauseWait) for units on their way,
			// then look again: pause, units this instance is moving to the home shard (until
			// they land); landing, every shard empty while units are in transit between
			// shards (moved by any instance: the whole pauseWait, which covers the two
			// script calls of a transfer). After that the answer is SOLD_OUT for this
			// request, without marking the activity (the refresh does once nothing is in
			// transit).
			if paused {
				return ReserveResult{Code: SoldOut}, nil
			}
			paused = true
			if err := waitUnits(ctx, l, HomeShard(uh, l.shards), next == landing); err != nil {
				return ReserveResult{}, err
			}
			continue
		}
		if err := s.awaitReshard(ctx, e, l, r.ActivityID, uh, deadline, i); err != nil {
			return ReserveResult{}, err
		}
	}
}

// waitUnits waits once, without Redis calls and up to pauseWait, for units on their way:
// to the home shard until they land (pause), or between shards the whole pauseWait
// (landing, which covers the two script calls of a transfer). Only ctx's end fails it.
func waitUnits(ctx context.Context, l *layout, home int, landing bool) error {
	step := time.Millisecond
	if landing {
		step = pauseWait
	}
	until := time.Now().Add(pauseWait)
	for (landing || l.inbound[home].Load() > 0) && time.Now().Before(until) {
		if err := backoff.Sleep(ctx, step); err != nil {
			return err
		}
	}
	return nil
}

// awaitReshard handles a home shard found closed in layout l (attempt i of Reserve): it
// re-reads meta and answers nil to try again when the layout changed, or, while a reshard
// is recorded, after a short wait; ErrBusy once deadline has passed. A closed shard outside
// a reshard fails with ErrRecovering when the check fenced the activity, else ErrBusy.
func (s *Store) awaitReshard(ctx context.Context, e *entry, l *layout, activityID, uh string, deadline time.Time, i int) error {
	if _, _, err := s.lookup(ctx, activityID); err != nil {
		return err
	}
	if e.layout.Load() != l {
		return nil
	}
	if !e.resharding.Load() {
		// Closed shard, same epoch, no reshard recorded: the shard's node lost it (the
		// recovering state, fenced now as the refresh would), or the activity is not
		// loaded (a Create that has not finished). Waiting will not help.
		if s.checkShard(ctx, e, l, HomeShard(uh, l.shards)); e.recovering.Load() != nil {
			return ErrRecovering
		}
		return fmt.Errorf("%w: %s has a closed shard outside a reshard", ErrBusy, activityID)
	}
	if time.Now().After(deadline) {
		return ErrBusy
	}
	// Same layout: a reshard is still moving stock. Wait a little.
	return backoff.Sleep(ctx, backoff.Linear(2*time.Millisecond, 25*time.Millisecond, i+1))
}

// accept takes the sale of number rid on the home shard, made by this call or, for a keyless
// request, by the first run of its attempt (rollback.go): the number raises the floor of
// numbers handed out here, and the later mark the answer carries is recorded. A record that
// moved while the call was in flight and that the shard's history lacks fences the activity
// (recordLater: ErrRecovering); the sale stands all the same, as its journal entry exists:
// MySQL's guard has the last word on its units.
func (s *Store) accept(ctx context.Context, e *entry, l *layout, home int, rid, sent, later string) (ReserveResult, attempt, error) {
	l.noteIssued(home, rid)
	if err := s.recordLater(ctx, e, l, home, sent, later); err != nil && !errors.Is(err, ErrRecovering) {
		return ReserveResult{}, done, err
	}
	return ReserveResult{Code: Reserved, ReservationID: rid}, done, nil
}

func (s *Store) reserveOn(ctx context.Context, e *entry, l *layout, r *ReserveRequest, uh, idf string, mayRefill bool) (ReserveResult, attempt, error) {
	home := HomeShard(uh, l.shards)
	// KEYS: stock, users, seq, journal, stats, generation [, IP bucket]; ARGV: activity,
	// user, user hash, quantity, per-user limit, opens, closes (ms), user rate, burst, window
	// (ms), window max, idempotency field, epoch, shard, generation, the highest number
	// handed out here (rollback.go),
	// the issuer and the call's number (keys.go ReservationID) [, IP rate, IP burst] (see
	// reserve_args.go).
	if g := e.generation(); g == generationFenced || g == generationRolledBack {
		return ReserveResult{}, done, ErrRecovering // a fence applied without a catalog to refuse it
	}
	withIP := r.IPKey != "" // admission's plan: set only where the script can take it
	// With others of the same queue when its previous call is in flight (batch.go).
	res, sent, seen, err := s.reserveBatched(ctx, e, l, home, r, uh, idf, withIP)
	if err != nil {
		return ReserveResult{}, done, err
	}
	c, err := reserveCode(res)
	if err != nil {
		return ReserveResult{}, done, err
	}
	later := laterMark(c, res)
	if c != Reserved && c != Replayed {
		if err := s.recordLater(ctx, e, l, home, sent, later); err != nil {
			return ReserveResult{}, done, err
		}
	}
	arg := func(i int) any {
		if i < len(res) {
			return res[i]
		}
		return nil
	}
	num := func(i int) int64 { n, _ := asInt(arg(i)); return n }
	switch c {
	case Reserved:
		if num(2) <= 0 {
			l.empty[home].Store(true)
		}
		e.issued.Inc()
		return s.accept(ctx, e, l, home, asString(arg(1)), sent, later)
	case Replayed:
		return s.replayedOn(ctx, e, l, home, r, asString(arg(1)), sent, later)
	case AlreadyPurchased:
		return ReserveResult{Code: AlreadyPurchased, ReservationID: asString(arg(1))}, done, nil
	case NotOpen:
		return ReserveResult{Code: NotOpen, OpensAt: fromMs(num(1))}, done, nil
	case Closed:
		return ReserveResult{Code: Closed}, done, nil
	case UserRateLimited:
		return ReserveResult{Code: UserRateLimited, RetryAfter: time.Duration(num(1)) * time.Millisecond}, done, nil
	case UserWindowLimited:
		return ReserveResult{Code: UserWindowLimited, RetryAfter: time.Duration(num(1)) * time.Millisecond}, done, nil
	case IPRateLimited:
		return ReserveResult{Code: IPRateLimited, RetryAfter: time.Duration(num(1)) * time.Millisecond}, done, nil
	case SoldOut:
		return s.soldOutOn(ctx, e, l, home, r, num(1), mayRefill)
	case rcShardClosed:
		return ReserveResult{}, relayout, nil
	case rcRolledBack:
		return ReserveResult{}, done, s.rolledBack(ctx, e, l, home, num(1))
	case rcGeneration:
		return s.generationOn(ctx, e, l, home, r, sent, asString(arg(1)), seen, num(2) == 1)
	}
	return ReserveResult{}, done, fmt.Errorf("inventory: reserve script: unexpected answer %v", res)
}

// replayedOn answers a script that replayed the reservation rid made before: after a
// durable read of the home shard, the request's own lost attempt is accepted as accept
// does, and a replay of an idempotency key answers REPLAYED with rid; the later mark is
// recorded either way.
func (s *Store) replayedOn(ctx context.Context, e *entry, l *layout, home int, r *ReserveRequest, rid, sent, later string) (ReserveResult, attempt, error) {
	if err := s.durableRead(ctx, l.keys[home]); err != nil {
		return ReserveResult{}, done, err
	}
	if r.IdempotencyKey == "" {
		// The binding of this request's own attempt (attemptField): the client sent the
		// script again after a lost reply, and this is the reservation the first run made.
		// Its number raises the floor (the first run's answer never arrived).
		return s.accept(ctx, e, l, home, rid, sent, later)
	}
	// A replay answers a sale made before: it stands as accept's does, whatever the
	// mark's record says (recordLater fences then), and its number counts as handed out here.
	e.noteReplayed(rid)
	if err := s.recordLater(ctx, e, l, home, sent, later); err != nil && !errors.Is(err, ErrRecovering) {
		return ReserveResult{}, done, err
	}
	return ReserveResult{Code: Replayed, ReservationID: rid}, done, nil
}

// soldOutOn answers a script that found the home shard short of r's quantity (here: the
// units it has): it refills the shard from others when mayRefill, waits for units on their
// way, or answers SOLD_OUT, marking the activity sold out only when every shard reads empty
// and nothing is in transit.
func (s *Store) soldOutOn(ctx context.Context, e *entry, l *layout, home int, r *ReserveRequest, here int64, mayRefill bool) (ReserveResult, attempt, error) {
	if here <= 0 {
		l.empty[home].Store(true)
	}
	if mayRefill && s.opts.MaxOtherShards >= 0 && l.shards > 1 {
		moved, closed, err := s.refill(ctx, e, l, home, int64(r.Quantity)-here)
		if err != nil {
			return ReserveResult{}, done, err
		}
		if closed {
			return ReserveResult{}, relayout, nil
		}
		if moved > 0 {
			return ReserveResult{}, refilled, nil
		}
		return ReserveResult{}, recheck, nil
	}
	if l.inbound[home].Load() > 0 {
		// Units debited by a refill of this instance are on their way; they may be
		// for this shard.
		return ReserveResult{}, pause, nil
	}
	if here <= 0 && l.allEmpty() {
		// Every shard reads empty. Units another instance is moving between shards
		// (debited, not yet credited) are still for sale: then wait for them once
		// instead of marking the activity sold out.
		moving, err := s.inTransit(ctx, e.xoutKeys(l))
		if err != nil {
			return ReserveResult{}, done, err
		}
		if moving {
			return ReserveResult{}, landing, nil
		}
		s.markSoldOut(ctx, e, "reserve")
	}
	return ReserveResult{Code: SoldOut}, done, nil
}

// generationOn answers a script that refused the generation mark sent (found: the shard's
// mark; inHistory: the script found the mark sent in the shard's history): a raised mark
// is tried again and an adoptable one adopted; any other (fenced by a restore, or lost)
// reads meta now and answers ErrRecovering.
func (s *Store) generationOn(ctx context.Context, e *entry, l *layout, home int, r *ReserveRequest, sent, found string, seen, inHistory bool) (ReserveResult, attempt, error) {
	switch s.meetMark(ctx, e, l, home, sent, found, seen, inHistory) {
	case markRaised:
		return ReserveResult{}, remarked, nil
	case markWentBack:
		return ReserveResult{}, done, ErrRecovering
	case markAdopt:
		ok, moved, err := s.adoptGeneration(ctx, e, l, home)
		if err != nil {
			return ReserveResult{}, done, err
		}
		if ok {
			return ReserveResult{}, adopted, nil
		}
		if moved {
			// A reshard moved the epoch on since this layout was cached: the shard was
			// closed before it was given a generation. Re-read meta, as for a closed shard.
			return ReserveResult{}, relayout, nil
		}
	}
	// Fenced by a restore, or lost: the refresh puts the activity in the recovering
	// state (it reads meta and the catalog now, not at its next pass).
	if _, _, err := s.lookup(ctx, r.ActivityID); err != nil && !errors.Is(err, ErrNotFound) {
		return ReserveResult{}, done, err
	}
	return ReserveResult{}, done, ErrRecovering
}

// adoptGeneration gives shard home of l the activity's generation when the shard has none
// (made by a reshard, or by a release before shard generations) and meta, read now, names
// the generation e holds and l as its current layout: SET NX, so a fence written meanwhile
// ("restoring") stands. It reports whether the shard now holds e's generation (or a mark of
// it a debit raised since: the mark is recorded), or else moved when meta names e's
// generation at another epoch (a reshard switched the layout: the caller re-reads meta, and
// the activity is not fenced). A Redis that lost the activity has
// no meta (or another generation in it): nothing is adopted.
func (s *Store) adoptGeneration(ctx context.Context, e *entry, l *layout, home int) (ok, moved bool, err error) {
	gen := e.generation()
	vals, err := s.rdb.HMGet(ctx, Meta(e.def.ID), metaFields...).Result()
	if err != nil {
		return false, false, fmt.Errorf("inventory: read meta: %w", err)
	}
	m, found, err := parseMeta(e.def.ID, vals)
	if err != nil {
		return false, false, err
	}
	if !found || gen == "" || m.gen != gen {
		return false, false, nil
	}
	if m.epoch != l.epoch {
		return false, true, nil
	}
	k := l.keys[home]
	if err := s.rdb.SetNX(ctx, k.Gen(), gen, 0).Err(); err != nil {
		return false, false, fmt.Errorf("inventory: adopt generation: %w", err)
	}
	got, err := s.rdb.Get(ctx, k.Gen()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, false, fmt.Errorf("inventory: read generation: %w", err)
	}
	if b, _, _ := splitMark(got); b != gen {
		return false, false, nil
	}
	l.raiseMark(home, got)
	return true, false, nil
}

// refill moves at least need units (when they exist) from other shards of the layout to
// the home shard, giving up after Options.MaxOtherShards shards that had nothing, each move a journalled transfer (debit the source, credit home, finish).
// It returns the units moved, or closed when a reshard closed a shard on the way. A move
// is finished even when ctx is cancelled or past its deadline (the client hung up, the
// request took long on a busy machine): units never wait in transit for a request that is
// gone; a Redis error (the client's own timeouts bound each call) or a reshard that keeps
// the target closed for settleWait leaves them in transit for Recover.
func (s *Store) refill(ctx context.Context, e *entry, l *layout, home int, need int64) (moved int64, closed bool, err error) {
	hk := l.keys[home]
	tries := s.opts.MaxOtherShards
	if tries == 0 || tries > l.shards-1 {
		tries = l.shards - 1
	}
	start := int(s.nonce.Add(1) % uint64(l.shards))
	tried := 0
	// The empty marks are hints (a compensation may have given a marked shard units back
	// since): when the shards they leave in do not hold enough, a second pass tries the
	// marked ones.
	skipped := make([]bool, l.shards)
	for pass := 0; pass < 2 && moved < need; pass++ {
		for o := 0; o < l.shards && tried < tries && moved < need; o++ {
			j := (start + o) % l.shards
			if j == home || pass == 1 && !skipped[j] {
				continue
			}
			if pass == 0 && l.empty[j].Load() {
				skipped[j] = true
				continue
			}
			id := s.mover.newID("t" + s.opts.InstanceID)
			// Announce the units before the debit, so a request of this instance that finds
			// the home shard empty meanwhile waits for them instead of answering SOLD_OUT.
			want := need - moved
			l.inbound[home].Add(want)
			d, err := s.debitChecked(ctx, e, l, j, hk, id, want)
			units := d.units
			l.inbound[home].Add(units - want)
			if err != nil {
				return moved, false, err
			}
			if d.closed {
				// Closed by a reshard, or lost by its node (R4: checkShard reads meta again;
				// the home shard the caller checks next is not this one).
				if s.checkShard(ctx, e, l, j); e.recovering.Load() != nil {
					return moved, false, ErrRecovering
				}
				return moved, true, nil
			}
			if d.left <= 0 {
				l.empty[j].Store(true)
			}
			if units == 0 {
				tried++ // only shards that had nothing count against MaxOtherShards
				continue
			}
			// The move is finished whatever the request's context says (no deadline of its
			// own either): each Redis call is bounded by the client's timeouts, a reshard by
			// settleWait. A deadline here gave up on a loaded machine whose pool queue was
			// merely slow, and left the units in transit for the sweep.
			err = s.mover.Settle(context.WithoutCancel(ctx), l.keys[j], id, "")
			l.inbound[home].Add(-units)
			if err != nil {
				return moved, false, err
			}
			l.empty[home].Store(false)
			moved += units
		}
	}
	return moved, false, nil
}

// debitChecked is the refill's debit of shard j of l with the mark this instance knows for
// it (rollback.go): the raised mark is recorded; a mark raised since by another debit is
// taken and the debit sent again (a few times); a shard without a generation yet adopts it first; a
// shard whose node went back (its mark, or its reservation counter below the floor this
// instance keeps for it), or of another generation, gives nothing (the first fenced the
// activity: ErrRecovering).
func (s *Store) debitChecked(ctx context.Context, e *entry, l *layout, j int, hk ShardKeys, id string, want int64) (debited, error) {
	for try := 0; ; try++ {
		sent, seen := *l.mark(j, e), l.seen(j)
		d, err := s.mover.debit(ctx, l.keys[j], hk, id, want, sent, l.floorOf(j))
		if err == nil && d.below {
			return debited{}, s.rolledBack(ctx, e, l, j, d.counter)
		}
		if err != nil || !d.differs {
			if err == nil && d.units > 0 && d.mark != "" {
				l.raiseMark(j, d.mark)
			}
			return d, err
		}
		if try > 3 { // raised again each time: others are debiting it, let them
			return debited{}, nil
		}
		switch s.meetMark(ctx, e, l, j, sent, d.mark, seen, d.inHistory) {
		case markRaised:
		case markAdopt:
			ok, moved, err := s.adoptGeneration(ctx, e, l, j)
			if err != nil {
				return debited{}, err
			}
			if moved {
				return debited{closed: true}, nil
			}
			if !ok {
				return debited{}, nil
			}
		case markWentBack:
			return debited{}, ErrRecovering
		default:
			return debited{}, nil
		}
	}
}

func (l *layout) allEmpty() bool {
	for i := range l.empty {
		if !l.empty[i].Load() {
			return false
		}
	}
	return true
}

// inTransit reports whether any of the xout hashes has a transfer out that is not finished:
// units debited from a shard (of any layout the activity had: a compensation of a drained
// shard sends its unit from there) and not yet credited to their target. One pipelined HLEN
// per shard, run only when a request finds every shard empty.
func (s *Store) inTransit(ctx context.Context, xoutKeys []string) (bool, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(xoutKeys))
	for i, k := range xoutKeys {
		cmds[i] = pipe.HLen(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, err
	}
	for _, c := range cmds {
		if c.Val() > 0 {
			return true, nil
		}
	}
	return false, nil
}

// markSoldOut marks the activity sold out locally; a reserve that found every shard empty
// also tells the other instances.
func (s *Store) markSoldOut(ctx context.Context, e *entry, source string) {
	e.soldOutAt.Store(time.Now().UnixNano())
	if !e.soldOut.CompareAndSwap(false, true) {
		return
	}
	e.remaining.Store(0)
	e.gauge.Set(0)
	s.m.soldOut.WithLabelValues(e.def.ID, source).Inc()
	s.log.Info("activity sold out", "activity", e.def.ID, "source", source)
	if source != "reserve" {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := s.rdb.Publish(pctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events), "soldout "+e.def.ID).Err(); err != nil {
		s.log.Warn("publish soldout failed", "activity", e.def.ID, "err", err)
	}
}

// Reservation is a reservation record as kept in Redis.
type Reservation struct {
	ID         string
	ActivityID string
	UserID     string
	Quantity   int
	Status     string // PENDING, CONFIRMED or FAILED
	OrderID    string
	Why        string // of a FAILED record: WhyRefused when MySQL refused its order, else ""
}

// Reservation reads a reservation record. A malformed id is ErrNotFound without a Redis
// call; so is an unknown one, or one whose number holds another id's record.
func (s *Store) Reservation(ctx context.Context, rid string) (Reservation, error) {
	k, n, ok := ParseReservationID(rid)
	if !ok {
		return Reservation{}, ErrNotFound
	}
	r, found, err := ReadRecord(ctx, s.rdb, k, n)
	if err != nil {
		return Reservation{}, fmt.Errorf("inventory: read reservation: %w", err)
	}
	if !found || r.ReservationID != rid {
		return Reservation{}, ErrNotFound
	}
	return Reservation{ID: rid, ActivityID: k.Activity, UserID: r.UserID, Quantity: r.Quantity,
		Status: r.Status, OrderID: r.OrderID, Why: r.Why}, nil
}
