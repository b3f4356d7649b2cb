package inventory

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Limit is a token bucket: Rate tokens per second, Burst capacity. Rate <= 0 disables it.
type Limit struct {
	Rate  float64
	Burst int
}

// ReserveRequest asks for Quantity units of an activity for a user. UserRate, Window and
// WindowMax are the per-user limits of the current configuration (zero disables each);
// they travel with every call so a configuration swap never rebuilds Redis state.
type ReserveRequest struct {
	ActivityID     string
	UserID         string
	IdempotencyKey string // optional, scoped to (user, activity)
	Quantity       int    // 1..PerUserLimit
	UserRate       Limit
	Window         time.Duration
	WindowMax      int
	// IPKey, when set and Store.ChecksIP, is the limiter's per-IP token bucket: the
	// reservation script takes one token from it along with the user's, in the same round
	// trip (IPRateLimited when empty). Ignored on Redis Cluster, where the key lives in
	// another slot and the limiter takes the IP token itself.
	IPKey  string
	IPRate Limit
}

// Code is the outcome of a reservation. The zero value Unknown is never returned with a
// nil error.
type Code int

// Reservation outcomes.
const (
	Unknown           Code = iota
	Reserved               // a new reservation: ReservationID
	Replayed               // the idempotency key was seen: the first ReservationID
	AlreadyPurchased       // the per-user limit is reached: ReservationID is the last one, may be ""
	SoldOut                // no stock for this request
	NotOpen                // before OpensAt
	Closed                 // at or after ClosesAt
	UserRateLimited        // per-user token bucket: RetryAfter
	UserWindowLimited      // per-user sliding window: RetryAfter
	IPRateLimited          // per-IP token bucket (IPKey): RetryAfter
)

var codeNames = [...]string{"UNKNOWN", "RESERVED", "REPLAYED", "ALREADY_PURCHASED", "SOLD_OUT", "NOT_OPEN", "CLOSED", "USER_RATE_LIMITED", "USER_WINDOW_LIMITED", "IP_RATE_LIMITED"}

func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
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

// Script answers of inventory_reserve.lua and inventory_take.lua.
const (
	rcReserved    = 1
	rcReplayed    = 2
	rcAlready     = 3
	rcNotOpen     = 4
	rcClosed      = 5
	rcUserRate    = 6
	rcUserWindow  = 7
	rcEmpty       = 8
	rcIPRate      = 12
	rcNeedOther   = 9
	rcShardClosed = 10
	rcPending     = 11
)

// attempt is what one pass over a layout decided.
type attempt int

const (
	done     attempt = iota
	relayout         // a shard was closed by a reshard: re-read meta and retry
	pending          // the idempotency key is bound to a hold in progress: wait and retry
)

// busyWait bounds how long Reserve waits for a reshard or a pending hold before ErrBusy.
const busyWait = time.Second

// idemField is the idem hash field of a user's idempotency key.
func idemField(uh, key string) string {
	sum := sha1.Sum([]byte(key))
	return uh + ":" + hex.EncodeToString(sum[:8])
}

// Reserve takes r.Quantity units for the user, or says why not. A known sold-out,
// not-yet-open or closed activity is answered from the local cache with no Redis call;
// otherwise one script runs on the user's home shard, and only when that shard is empty
// up to Options.MaxOtherShards other shards are tried (two more calls each way). An error
// means Redis failed or the activity is unknown (ErrNotFound) or busy (ErrBusy); the caller
// fails closed.
func (s *Store) Reserve(ctx context.Context, r ReserveRequest) (ReserveResult, error) {
	if !ValidActivityID(r.ActivityID) {
		return ReserveResult{}, ErrNotFound
	}
	if r.UserID == "" || len(r.UserID) > 512 || !utf8.ValidString(r.UserID) || len(r.IdempotencyKey) > 512 {
		return ReserveResult{}, fmt.Errorf("%w: user id or idempotency key", ErrInvalid)
	}
	e, err := s.entryFor(ctx, r.ActivityID)
	if err != nil {
		return ReserveResult{}, err
	}
	if r.Quantity < 1 || r.Quantity > e.def.PerUserLimit {
		return ReserveResult{}, fmt.Errorf("%w: quantity %d outside 1..%d", ErrInvalid, r.Quantity, e.def.PerUserLimit)
	}
	if e.soldOut.Load() {
		return ReserveResult{Code: SoldOut}, nil
	}
	now := time.Now()
	if !e.def.OpensAt.IsZero() && now.Before(e.def.OpensAt) {
		return ReserveResult{Code: NotOpen, OpensAt: e.def.OpensAt}, nil
	}
	if !e.def.ClosesAt.IsZero() && !now.Before(e.def.ClosesAt) {
		return ReserveResult{Code: Closed}, nil
	}
	uh := UserHash(r.UserID)
	idf := ""
	if r.IdempotencyKey != "" {
		idf = idemField(uh, r.IdempotencyKey)
	}
	// A reshard closes shards before the new layout opens: wait for it (normally a few ms),
	// up to busyWait.
	deadline := time.Now().Add(busyWait)
	for i := 0; ; i++ {
		l := e.layout.Load()
		res, next, err := s.reserveOn(ctx, e, l, &r, uh, idf)
		if err != nil || next == done {
			return res, err
		}
		if next == relayout {
			if _, _, err := s.lookup(ctx, r.ActivityID); err != nil {
				return ReserveResult{}, err
			}
			if e.layout.Load() != l {
				continue
			}
			if !e.resharding.Load() {
				// Closed shard, same epoch, no reshard recorded: the activity is not loaded
				// (a Create that has not finished). Waiting will not help.
				return ReserveResult{}, fmt.Errorf("%w: %s has a closed shard outside a reshard", ErrBusy, r.ActivityID)
			}
		}
		if time.Now().After(deadline) {
			break
		}
		// Same layout (a reshard is still moving stock) or a pending hold: wait a little.
		t := time.NewTimer(time.Duration(min(2*(i+1), 25)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ReserveResult{}, ctx.Err()
		case <-t.C:
		}
	}
	return ReserveResult{}, ErrBusy
}

func (s *Store) reserveOn(ctx context.Context, e *entry, l *layout, r *ReserveRequest, uh, idf string) (ReserveResult, attempt, error) {
	home := HomeShard(uh, l.shards)
	k := l.keys[home]
	hold := 0
	if s.opts.MaxOtherShards > 0 && l.otherNonEmpty(home) {
		hold = 1
	}
	nonce := s.opts.InstanceID + ":" + strconv.FormatUint(s.nonce.Add(1), 36)
	keys := []string{k.Stock(), k.Users(), k.Last(), k.Idem(), k.Seq(), k.Journal(), k.Stats(), k.Holds(),
		k.Drained(), k.Bucket(uh), k.Window(uh), k.RecordPrefix()}
	args := []any{r.ActivityID, r.UserID, uh, r.Quantity, e.def.PerUserLimit, unixMs(e.def.OpensAt), unixMs(e.def.ClosesAt),
		r.UserRate.Rate, max(r.UserRate.Burst, 1), r.Window.Milliseconds(), r.WindowMax, idf, nonce, hold,
		l.epoch, home, s.opts.RecordTTLAfterClose.Milliseconds(), recordTTLNoClose.Milliseconds(), holdTTL.Milliseconds()}
	if r.IPKey != "" && r.IPRate.Rate > 0 && s.ChecksIP() {
		keys = append(keys, r.IPKey)
		args = append(args, r.IPRate.Rate, max(r.IPRate.Burst, 1))
	}
	res, err := s.run(ctx, s.reserve, keys, args...)
	if err != nil {
		return ReserveResult{}, done, err
	}
	c := code(res)
	s.m.countLimits(res, r, r.IPKey != "" && r.IPRate.Rate > 0 && s.ChecksIP()) // as the IP key was passed above
	arg := func(i int) any {
		if i < len(res) {
			return res[i]
		}
		return nil
	}
	num := func(i int) int64 { n, _ := asInt(arg(i)); return n }
	switch c {
	case rcReserved:
		if num(2) <= 0 {
			l.empty[home].Store(true)
		}
		e.issued.Inc()
		return ReserveResult{Code: Reserved, ReservationID: asString(arg(1))}, done, nil
	case rcReplayed:
		return ReserveResult{Code: Replayed, ReservationID: asString(arg(1))}, done, nil
	case rcAlready:
		return ReserveResult{Code: AlreadyPurchased, ReservationID: asString(arg(1))}, done, nil
	case rcNotOpen:
		return ReserveResult{Code: NotOpen, OpensAt: fromMs(num(1))}, done, nil
	case rcClosed:
		return ReserveResult{Code: Closed}, done, nil
	case rcUserRate:
		return ReserveResult{Code: UserRateLimited, RetryAfter: time.Duration(num(1)) * time.Millisecond}, done, nil
	case rcUserWindow:
		return ReserveResult{Code: UserWindowLimited, RetryAfter: time.Duration(num(1)) * time.Millisecond}, done, nil
	case rcIPRate:
		return ReserveResult{Code: IPRateLimited, RetryAfter: time.Duration(num(1)) * time.Millisecond}, done, nil
	case rcEmpty:
		if num(1) <= 0 {
			l.empty[home].Store(true)
			if l.allEmpty() {
				s.markSoldOut(ctx, e, "reserve")
			}
		}
		return ReserveResult{Code: SoldOut}, done, nil
	case rcNeedOther:
		if num(3) <= 0 {
			l.empty[home].Store(true)
		}
		return s.takeOther(ctx, e, l, r, uh, idf, home, asString(arg(1)), num(2))
	case rcShardClosed:
		return ReserveResult{}, relayout, nil
	case rcPending:
		return ReserveResult{}, pending, nil
	}
	return ReserveResult{}, done, fmt.Errorf("inventory: reserve script: unexpected answer %v", res)
}

// takeOther takes the units on other shards while the home shard holds the user's quota,
// then commits or releases the hold. When the outcome of a take is unknown (a Redis error)
// the hold is kept: the user may end below the limit, never above it.
func (s *Store) takeOther(ctx context.Context, e *entry, l *layout, r *ReserveRequest, uh, idf string, home int, hid string, seq int64) (ReserveResult, attempt, error) {
	hk := l.keys[home]
	closed := false
	tried := 0
	start := int(s.nonce.Add(1) % uint64(l.shards))
	for o := 0; o < l.shards && tried < s.opts.MaxOtherShards; o++ {
		j := (start + o) % l.shards
		if j == home || l.empty[j].Load() {
			continue
		}
		tried++
		k := l.keys[j]
		res, err := s.run(ctx, s.take,
			[]string{k.Stock(), k.Seq(), k.Journal(), k.Stats(), k.Drained(), k.RecordPrefix()},
			r.ActivityID, r.UserID, uh, r.Quantity, seq, home, l.epoch, j, unixMs(e.def.ClosesAt),
			s.opts.RecordTTLAfterClose.Milliseconds(), recordTTLNoClose.Milliseconds())
		if err != nil {
			return ReserveResult{}, done, err
		}
		switch code(res) {
		case rcReserved:
			if len(res) > 2 {
				if n, _ := asInt(res[2]); n <= 0 {
					l.empty[j].Store(true)
				}
			}
			rid := asString(res[1])
			if _, err := s.run(ctx, s.hold, []string{hk.Holds(), hk.Users(), hk.Last(), hk.Idem()},
				"commit", hid, uh, rid, idf); err != nil {
				// The unit is taken and journaled; only the 409/replay hints are missing.
				s.log.Warn("hold commit failed", "activity", r.ActivityID, "rid", rid, "err", err)
			}
			e.issued.Inc()
			return ReserveResult{Code: Reserved, ReservationID: rid}, done, nil
		case rcEmpty:
			if len(res) > 1 {
				if n, _ := asInt(res[1]); n <= 0 {
					l.empty[j].Store(true)
				}
			}
		case rcShardClosed:
			closed = true
		default:
			return ReserveResult{}, done, fmt.Errorf("inventory: take script: unexpected answer %v", res)
		}
		if closed {
			break
		}
	}
	if _, err := s.run(ctx, s.hold, []string{hk.Holds(), hk.Users(), hk.Last(), hk.Idem()},
		"release", hid, uh, "", idf); err != nil {
		return ReserveResult{}, done, err
	}
	if closed {
		return ReserveResult{}, relayout, nil
	}
	if l.allEmpty() {
		s.markSoldOut(ctx, e, "reserve")
	}
	return ReserveResult{Code: SoldOut}, done, nil
}

func (l *layout) otherNonEmpty(home int) bool {
	for i := range l.empty {
		if i != home && !l.empty[i].Load() {
			return true
		}
	}
	return false
}

func (l *layout) allEmpty() bool {
	for i := range l.empty {
		if !l.empty[i].Load() {
			return false
		}
	}
	return true
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
	if err := s.rdb.Publish(pctx, Namespaced(s.opts.Namespace, EventsChannel), "soldout "+e.def.ID).Err(); err != nil {
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
}

// Reservation reads a reservation record. A malformed id is ErrNotFound without a Redis
// call; so is an unknown or expired one.
func (s *Store) Reservation(ctx context.Context, rid string) (Reservation, error) {
	k, n, ok := ParseReservationID(rid)
	if !ok {
		return Reservation{}, ErrNotFound
	}
	v, err := s.rdb.HMGet(ctx, k.Record(n), "rid", "aid", "uid", "qty", "status", "orderId").Result()
	if err != nil {
		return Reservation{}, fmt.Errorf("inventory: read reservation: %w", err)
	}
	if v[0] == nil || asString(v[0]) != rid {
		return Reservation{}, ErrNotFound
	}
	q, _ := strconv.Atoi(asString(v[3]))
	return Reservation{ID: rid, ActivityID: asString(v[1]), UserID: asString(v[2]), Quantity: q,
		Status: asString(v[4]), OrderID: asString(v[5])}, nil
}
