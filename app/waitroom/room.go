// Package waitroom is an activity's waiting room (docs/API.md section 4, "Waiting room";
// docs/DESIGN.md, "Waiting room"): a user takes one place in line, polls it, and once the inlet
// has reached the place gets a pass that the reservation requires.
//
// Who does what:
//   - Join is one script (waitroom_join.lua): a place per user hash, idempotent.
//   - Status answers a poll from memory: every instance follows the line's state (the serving
//     position, the order of the prequeue, the recent inlet steps) every FollowEvery, and
//     remembers the places polled here, which it hands to Redis as heartbeats in one command
//     per period. Only a poll of a place whose turn came makes a Redis call, one round trip
//     that reads the user's place (a line Redis lost numbers its places again: the ticket
//     may name another user's) and whether its pass was used, so that a pass a reservation
//     used (on any instance) is not shown again.
//   - The inlet: exactly one instance at a time holds the line's lease (waitroom_lease.lua, a
//     fencing token per holder) and moves the serving position (waitroom_open.lua at the
//     opening, then waitroom_admit.lua every FollowEvery). The admit script bounds the
//     admissions of any 1 s span by the rate, whoever calls it, and the live passes by the
//     stock factor x the units left.
//   - ConsumePass (waitroom_pass.lua) makes a pass single use; its signature binds it to the
//     user, the activity, the place, its ticket and the line's order, and is checked in memory
//     first; the script checks that the line still gives the place to the user.
package waitroom

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/lua"
)

// Stock is what the room needs of the inventory: the local view of an activity (its opening,
// the units left and the sold-out mark), with no Redis call.
type Stock interface {
	Activity(id string) (inventory.ActivityView, bool)
}

// Signer signs messages and hashes user ids with the deployment's key (inventory.Hasher).
type Signer interface {
	Sign(domain, msg string) string
	UserHash(userID string) string
}

var (
	_ Stock  = (*inventory.Store)(nil)
	_ Signer = (*inventory.Hasher)(nil)
)

// Options configure a Room.
type Options struct {
	// InstanceID names the lease holder; unique per instance.
	InstanceID string
	// FollowEvery is the period of following the lines, flushing heartbeats and, for the
	// lease holder, of the inlet steps. Default 100 ms.
	FollowEvery time.Duration
	// LeaseFor is how long a lease lasts without renewal. Default 2 s.
	LeaseFor time.Duration
	// MaxWalk bounds the places one inlet step walks (and the tickets it passes to the script
	// for a shuffled line): each costs the script a few µs, so one step holds Redis a few ms
	// at most. Default 1000.
	MaxWalk int
}

// Room runs the waiting rooms of every activity whose configuration turns one on. Build it with
// New; Run follows the lines and drives the inlet. Safe for concurrent use.
type Room struct {
	rdb    redis.UniversalClient
	signer Signer
	stock  Stock
	cfg    func() *config.Config
	opts   Options
	m      *Metrics
	log    *slog.Logger

	join, lease, open, admit, pass, unpass *redis.Script

	mu    sync.RWMutex
	lines map[string]*line
}

// New returns a Room. cfg returns the current configuration (nil while none is loaded).
func New(rdb redis.UniversalClient, signer Signer, stock Stock, cfg func() *config.Config, opts Options, m *Metrics, log *slog.Logger) (*Room, error) {
	if opts.InstanceID == "" {
		return nil, errors.New("waitroom: an instance id is required")
	}
	if opts.FollowEvery <= 0 {
		opts.FollowEvery = 100 * time.Millisecond
	}
	if opts.LeaseFor <= 0 {
		opts.LeaseFor = 2 * time.Second
	}
	if opts.MaxWalk <= 0 {
		opts.MaxWalk = 1000
	}
	if m == nil {
		m = newMetrics()
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Room{rdb: rdb, signer: signer, stock: stock, cfg: cfg, opts: opts, m: m, log: log, lines: map[string]*line{}}
	for name, dst := range map[string]**redis.Script{
		"waitroom_join.lua": &r.join, "waitroom_lease.lua": &r.lease, "waitroom_open.lua": &r.open,
		"waitroom_admit.lua": &r.admit, "waitroom_pass.lua": &r.pass, "waitroom_unpass.lua": &r.unpass,
	} {
		s, err := lua.Load(name)
		if err != nil {
			return nil, err
		}
		*dst = s
	}
	return r, nil
}

// Keys of an activity's waiting room, all in the activity's slot {A}.
type keys struct{ users, st, hb, adm, live, used, steps, skip, lease string }

func keysOf(id string) keys {
	p := keyspace.Prefix + "{" + id + "}:q:"
	return keys{users: p + "users", st: p + "st", hb: p + "hb", adm: p + "adm",
		live: p + "live", used: p + "used", steps: p + "steps", skip: p + "skip", lease: p + "lease"}
}

// ErrUnknownLine is returned by Status while this instance has not read the line's state yet
// (within FollowEvery of the room being turned on or of the start): answer 503 and retry.
var ErrUnknownLine = errors.New("waitroom: the line's state is not known here yet")

// ErrNotYourPlace is returned by Status for a ticket whose turn came while the line gives its
// place to another user, or to none: Redis lost the line (or the part of it that held the
// user's place) and numbered its places again. The user joins again for a place of its own.
var ErrNotYourPlace = errors.New("waitroom: the ticket is not the user's place in the line (the line lost it): join again")

// line is what one instance knows of one activity's line.
type line struct {
	id   string
	k    keys
	view atomic.Pointer[view]

	mu    sync.Mutex
	beats map[uint64]int64 // ticket -> local unix ms of its last poll here, not yet flushed
	preds map[uint64]prediction

	// Owned by the Run goroutine.
	fence   int64
	permFor uint64 // seed the view's perm and the inlet's order were built from
	perm    []uint32
	order   []uint32 // place p (1..pre) -> its ticket, when shuffled: what the inlet passes
	// skipped are the places the inlet skipped, ascending (it skips in place order): shared
	// with the views, append-only (a view reads only its own length of it).
	skipped []uint64
}

// prediction is the first ETA given here for a place, once the outflow was measured for 5 s.
type prediction struct{ made, at time.Time }

// maxPredictions bounds the predictions remembered per line.
const maxPredictions = 200000

// view is one reading of a line's state; immutable once stored.
type view struct {
	read     time.Time     // local time of the reading
	offset   time.Duration // Redis clock - local clock
	seq, pos uint64
	opened   bool
	pre      uint64
	seed     uint64
	perm     []uint32 // ticket n (1..pre) -> place, when shuffled; shared, read-only
	openAt   time.Time
	openMs   uint64        // the opening as Redis wrote it: another one means the line was lost
	steps    []step        // recent inlet steps, oldest first
	outflow  float64       // places served per second over the last outflowWindow
	measured time.Duration // how long the outflow was measured over
	admitted uint64
	skipped  uint64
	// skips are the places skipped up to pos at least (read after pos), ascending.
	skips []uint64
}

// wasSkipped is whether the inlet skipped place e (rather than admitting it).
func (v *view) wasSkipped(e uint64) bool {
	_, found := slices.BinarySearch(v.skips, e)
	return found
}

// step is one inlet step that moved the serving position.
type step struct {
	at       time.Time // local time
	pos      uint64
	admitted int
}

// outflowWindow is the span over which the outflow is measured.
const outflowWindow = 10 * time.Second

// place is the place of ticket n in the line, and whether it is known (a ticket of a shuffled
// prequeue has none before the opening).
func (v *view) place(n uint64) (uint64, bool) {
	if v.seed != 0 && n <= v.pre {
		if !v.opened || int(n) > len(v.perm) {
			return 0, false
		}
		return uint64(v.perm[n-1]), true
	}
	return n, true
}

// admittedAt is when the inlet reached place e (known while its step is among the recent ones).
func (v *view) admittedAt(e uint64) (time.Time, bool) {
	for _, s := range v.steps {
		if s.pos >= e {
			return s.at, true
		}
	}
	return time.Time{}, false
}

func (r *Room) lineOf(id string) *line {
	r.mu.RLock()
	ln := r.lines[id]
	r.mu.RUnlock()
	if ln != nil {
		return ln
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ln = r.lines[id]; ln == nil {
		ln = &line{id: id, k: keysOf(id), beats: map[uint64]int64{}, preds: map[uint64]prediction{}}
		r.lines[id] = ln
	}
	return ln
}

// Ticket is a place in line: its number and the signed token the client polls with.
type Ticket struct {
	N     uint64
	Token string
	New   bool // taken by this call (false: the user had it already)
}

// Join takes the user's place in the activity's line, or returns the one the user has. alive
// false (a blacklisted user) takes a place with no heartbeat: the inlet skips it.
func (r *Room) Join(ctx context.Context, activityID, userID string, alive bool) (Ticket, error) {
	if !keyspace.ValidName(activityID) || userID == "" {
		return Ticket{}, errors.New("waitroom: invalid join")
	}
	k := keysOf(activityID)
	flag := "1"
	if !alive {
		flag = "0"
	}
	v, err := r.join.Run(ctx, r.rdb, []string{k.users, k.st, k.hb}, r.userHash(userID), flag).Int64Slice()
	if err != nil {
		return Ticket{}, fmt.Errorf("waitroom: join: %w", err)
	}
	if len(v) != 2 || v[0] < 1 {
		return Ticket{}, fmt.Errorf("waitroom: join: unexpected answer %v", v)
	}
	n := uint64(v[0])
	if v[1] == 1 {
		r.m.joined.WithLabelValues(activityID).Inc()
	}
	r.lineOf(activityID) // followed from now on
	return Ticket{N: n, Token: r.ticketToken(activityID, userID, n), New: v[1] == 1}, nil
}

// userHash is the user hash under the deployment's key (the places hash is keyed by it).
func (r *Room) userHash(userID string) string { return r.signer.UserHash(userID) }

func (r *Room) ticketToken(activityID, userID string, n uint64) string {
	ns := strconv.FormatUint(n, 10)
	return ns + "." + r.signer.Sign("ticket", activityID+"\x00"+userID+"\x00"+ns)
}

// ParseTicket returns the ticket number of a ticket token issued to the user for the activity.
func (r *Room) ParseTicket(activityID, userID, token string) (uint64, bool) {
	ns, sig, ok := strings.Cut(token, ".")
	if !ok || len(ns) > 20 || len(sig) != 32 {
		return 0, false
	}
	n, err := strconv.ParseUint(ns, 10, 64)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != ns {
		return 0, false
	}
	if !equal(r.signer.Sign("ticket", activityID+"\x00"+userID+"\x00"+ns), sig) {
		return 0, false
	}
	return n, true
}

// passToken is a pass for place e of ticket n, in the line ordered by seed, bound to the user
// and the activity, valid until exp. The ticket and the seed let the pass script check that
// the line still gives that place to the user (a line Redis lost numbers its places again).
func (r *Room) passToken(activityID, userID string, e, n, seed uint64, exp time.Time) string {
	body := strconv.FormatUint(e, 10) + "." + strconv.FormatUint(n, 10) + "." + strconv.FormatUint(seed, 10) +
		"." + strconv.FormatInt(exp.UnixMilli(), 10)
	return body + "." + r.signer.Sign("pass", activityID+"\x00"+userID+"\x00"+body)
}

// pass is what a pass names: a place, the ticket that has it, and the seed of the line's order.
type pass struct{ place, ticket, seed uint64 }

// parsePass returns what a pass issued to the user for the activity and not expired at now names.
func (r *Room) parsePass(activityID, userID, token string, now time.Time) (pass, bool) {
	body, sig, ok := cutLast(token, ".")
	parts := strings.Split(body, ".")
	if !ok || len(parts) != 4 || len(sig) != 32 {
		return pass{}, false
	}
	var x [4]uint64
	for i, s := range parts {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || len(s) > 20 || strconv.FormatUint(v, 10) != s {
			return pass{}, false
		}
		x[i] = v
	}
	if x[0] == 0 || x[1] == 0 || !equal(r.signer.Sign("pass", activityID+"\x00"+userID+"\x00"+body), sig) {
		return pass{}, false
	}
	if uint64(now.UnixMilli()) > x[3] {
		return pass{}, false
	}
	return pass{place: x[0], ticket: x[1], seed: x[2]}, true
}

// cutLast slices s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// equal compares two signatures in constant time.
func equal(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := 0; i < len(a); i++ {
		d |= a[i] ^ b[i]
	}
	return d == 0
}

// ConsumePass uses the user's pass for the activity, for the reservation of idempotency key
// idem: true once for a pass issued to this user for this activity whose place the inlet
// admitted less than ttl ago, and again for the same key (the same reservation sent again
// after an answer it did not get); false for any other. The signature and the expiry are
// checked in memory first (a forged or foreign pass costs no Redis call).
func (r *Room) ConsumePass(ctx context.Context, activityID, userID, pass, idem string, ttl time.Duration) (bool, error) {
	p, ok := r.parsePass(activityID, userID, pass, time.Now())
	if !ok {
		return false, nil
	}
	k := keysOf(activityID)
	sum := sha256.Sum256([]byte(idem))
	v, err := r.pass.Run(ctx, r.rdb, []string{k.live, k.used, k.users, k.st}, p.place, ttl.Milliseconds(),
		hex.EncodeToString(sum[:8]), r.userHash(userID), p.ticket, p.seed).Int64()
	if err != nil {
		return false, fmt.Errorf("waitroom: pass: %w", err)
	}
	switch v {
	case 1:
		r.m.passesUsed.WithLabelValues(activityID).Inc()
		return true, nil
	case 0:
		return false, nil
	}
	return false, fmt.Errorf("waitroom: pass script returned unknown code %d", v)
}

// ReturnPass gives back a pass ConsumePass used, for a reservation that was refused or whose
// outcome is unknown (waitroom_unpass.lua): the buyer's turn goes on until the pass expires as
// it would have. True when it was given back; false for a pass not used, expired since, or
// not the user's.
func (r *Room) ReturnPass(ctx context.Context, activityID, userID, pass, idem string, ttl time.Duration) (bool, error) {
	p, ok := r.parsePass(activityID, userID, pass, time.Now())
	if !ok {
		return false, nil
	}
	k := keysOf(activityID)
	sum := sha256.Sum256([]byte(idem))
	v, err := r.unpass.Run(ctx, r.rdb, []string{k.live, k.used, k.adm, k.users, k.st}, p.place, ttl.Milliseconds(),
		hex.EncodeToString(sum[:8]), r.userHash(userID), p.ticket, p.seed).Int64()
	if err != nil {
		return false, fmt.Errorf("waitroom: give the pass back: %w", err)
	}
	if v == 1 {
		r.m.passesReturned.WithLabelValues(activityID).Inc()
	}
	return v == 1, nil
}

// States of a place, as a poll answers them.
const (
	StatePrequeue = "PREQUEUE" // joined before the opening; the order is drawn at the opening
	StateWaiting  = "WAITING"
	StateAdmitted = "ADMITTED" // the turn has come: Pass is set
	StateExpired  = "EXPIRED"  // the turn came and its pass has expired unused
	StateUsed     = "USED"     // a reservation used the pass (it took stock, or its outcome is unknown): no pass
	StateSkipped  = "SKIPPED"  // the turn came while the place was not polled within the heartbeat: lost
)

// Status is the answer to a poll.
type Status struct {
	State string
	// Position is the place counted from the serving position (1 = next), Ahead the places
	// before it; both 0 when unknown (a shuffled prequeue before the opening) or admitted.
	Position, Ahead uint64
	Known           bool          // Position and Ahead are known
	ETA             time.Duration // expected wait until the turn comes; -1 when none can be given
	PollAfter       time.Duration
	Pass            string
	PassExpires     time.Time
}

// Status answers a poll of ticket n from this instance's memory and records that the place is
// alive, unless blocked (a blacklisted user: the place never advances, its heartbeat is never
// recorded, and no pass is given). A place whose turn came costs one Redis round trip, which
// asks whether the line still gives the place to the user (else ErrNotYourPlace) and whether a
// reservation used its pass (waitroom_pass.lua's used passes, the truth of every instance): if
// so the answer is USED, with no pass, before and after the pass's expiry; any other place
// costs none. The error is ErrUnknownLine, ErrNotYourPlace, or that call's.
func (r *Room) Status(ctx context.Context, activityID, userID string, n uint64, w config.WaitingRoom, opensAt time.Time, blocked bool, now time.Time) (Status, error) {
	ln := r.lineOf(activityID)
	v := ln.view.Load()
	if v == nil {
		return Status{}, ErrUnknownLine
	}
	if !blocked {
		ln.mu.Lock()
		ln.beats[n] = now.UnixMilli()
		ln.mu.Unlock()
	}
	maxPoll := w.Heartbeat.D() / 4
	if maxPoll > 10*time.Second {
		maxPoll = 10 * time.Second
	}
	e, known := v.place(n)
	if !v.opened || !known {
		return prequeueStatus(v, n, e, known, w.Rate, opensAt, now, maxPoll), nil
	}
	if e <= v.pos && !blocked && v.wasSkipped(e) {
		// final for the page: said only of the line Redis has (a view read before a loss
		// still holds the old line's skips)
		if err := r.sameLine(ctx, ln, v); err != nil {
			return Status{}, err
		}
		return Status{State: StateSkipped, ETA: -1}, nil
	}
	if e <= v.pos && !blocked {
		return r.turnStatus(ctx, ln, v, activityID, userID, n, e, w.PassTTL.D(), now)
	}
	return waitingStatus(ln, v, e, w.Rate, blocked, now, maxPoll), nil
}

// Poll is Status for a poll of a ticket the user holds from an earlier join: a ticket past
// the last one the line has handed out, as this instance last read it, costs one Redis call,
// which asks whether the line gives it to the user (ErrNotYourPlace if not). Such a ticket
// was joined within the last read (rare for a poll) or belongs to a line Redis lost, whose
// new one has not numbered that far: its holder joins again now rather than when the new
// line reaches the number. (A join's own answer is Status: its ticket is the user's.)
func (r *Room) Poll(ctx context.Context, activityID, userID string, n uint64, w config.WaitingRoom, opensAt time.Time, blocked bool, now time.Time) (Status, error) {
	if v := r.lineOf(activityID).view.Load(); v != nil && n > v.seq {
		got, err := r.rdb.HGet(ctx, keysOf(activityID).users, r.userHash(userID)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Status{}, fmt.Errorf("waitroom: is the place the user's: %w", err)
		}
		if got != strconv.FormatUint(n, 10) {
			return Status{}, ErrNotYourPlace
		}
	}
	return r.Status(ctx, activityID, userID, n, w, opensAt, blocked, now)
}

// prequeueStatus answers a poll of ticket n, at place e if known, before the line opens or
// before the ticket has a place: the wait until the opening, the place's ETA at rate, and
// a PollAfter that spreads the prequeue's polls by ticket within maxPoll. It touches no state.
func prequeueStatus(v *view, n, e uint64, known bool, rate float64, opensAt, now time.Time, maxPoll time.Duration) Status {
	st := Status{State: StatePrequeue, ETA: -1}
	wait := opensAt.Sub(now)
	if wait < 0 {
		wait = 0
	}
	if known { // fifo: the place is the ticket
		st.State, st.Known, st.Position, st.Ahead = StateWaiting, true, e, e-1
		st.ETA = wait + secs(float64(e)/rate)
	} else {
		st.ETA = wait
	}
	// after is the prequeue's first poll after the opening, spread by ticket over the time
	// the line as it stands takes to serve, within a poll bound.
	after := wait + time.Duration(float64(min(maxPoll, secs(float64(v.seq)/rate)))*spread(n))
	switch {
	case !known && after <= 3*maxPoll:
		// This poll is a sign of life recent enough for that one (3 of the 4 poll bounds
		// of a heartbeat): no poll before the opening.
		st.PollAfter = max(after, 100*time.Millisecond)
	case wait > maxPoll:
		// No heartbeat counts before the opening: one poll between 2 and 1 poll bounds
		// before it keeps the place alive (spread by ticket, so that the prequeue does not
		// poll all at once; a minute apart at most, to hear of a kill switch).
		early := maxPoll + time.Duration(float64(maxPoll)*spread(n))
		st.PollAfter = clamp(wait-early, 500*time.Millisecond, time.Minute)
	default:
		st.PollAfter = clamp(wait/2, 500*time.Millisecond, maxPoll)
	}
	return st
}

// turnStatus answers a poll of ticket n, at place e, whose turn came, with one round trip
// that reads the user's place and whether its pass was used: ErrNotYourPlace when the line
// gives place e to another ticket or the user none (Redis lost the line: its places were
// numbered again), USED when a reservation used the pass, EXPIRED once passTTL after the
// admission has passed, else ADMITTED with a pass that expires then.
func (r *Room) turnStatus(ctx context.Context, ln *line, v *view, activityID, userID string, n, e uint64, passTTL time.Duration, now time.Time) (Status, error) {
	at, ok := v.admittedAt(e)
	if !ok {
		at = v.read
	}
	exp := at.Add(passTTL)
	pipe := r.rdb.Pipeline() // one slot: the line's keys share its tag
	mine := pipe.HGet(ctx, ln.k.users, r.userHash(userID))
	usedCmd := pipe.HExists(ctx, ln.k.used, strconv.FormatUint(e, 10))
	opening := pipe.HGet(ctx, ln.k.st, "openMs")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Status{}, fmt.Errorf("waitroom: is the pass used: %w", err)
	}
	if opening.Val() != strconv.FormatUint(v.openMs, 10) {
		// the view is of a line Redis has lost since: its places and seed are not this line's
		return Status{}, ErrUnknownLine
	}
	if mine.Val() != strconv.FormatUint(n, 10) {
		return Status{}, ErrNotYourPlace
	}
	if usedCmd.Val() {
		return Status{State: StateUsed, ETA: -1}, nil
	}
	if !now.Before(exp) {
		return Status{State: StateExpired, ETA: -1}, nil
	}
	return Status{State: StateAdmitted, Pass: r.passToken(activityID, userID, e, n, v.seed, exp), PassExpires: exp}, nil
}

// sameLine is nil when the line Redis has is the one view v read (the same opening), else
// ErrUnknownLine: v was read before Redis lost the line, and the next read follows the new one.
func (r *Room) sameLine(ctx context.Context, ln *line, v *view) error {
	got, err := r.rdb.HGet(ctx, ln.k.st, "openMs").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("waitroom: is the line the one read: %w", err)
	}
	if got != strconv.FormatUint(v.openMs, 10) {
		return ErrUnknownLine
	}
	return nil
}

// waitingStatus answers a poll of place e still waiting (or of a blocked user): its position,
// an ETA at the measured outflow (configured rate until measured; none when blocked), and
// a PollAfter within maxPoll; it records the ETA as a prediction under ln.mu when measured.
func waitingStatus(ln *line, v *view, e uint64, configured float64, blocked bool, now time.Time, maxPoll time.Duration) Status {
	st := Status{State: StateWaiting, Known: true, Position: 1, ETA: -1}
	if e > v.pos {
		st.Position, st.Ahead = e-v.pos, e-v.pos-1
	}
	rate := v.outflow
	if v.measured < 2*time.Second {
		rate = configured // not measured yet: the configured inlet
	}
	if rate > 0 && !blocked {
		st.ETA = secs(float64(st.Position) / rate)
		if v.measured >= 5*time.Second && st.ETA >= time.Second {
			ln.mu.Lock()
			if _, seen := ln.preds[e]; !seen && len(ln.preds) < maxPredictions {
				ln.preds[e] = prediction{made: now, at: now.Add(st.ETA)}
			}
			ln.mu.Unlock()
		}
	}
	if st.ETA >= 0 {
		st.PollAfter = clamp(st.ETA/2, 500*time.Millisecond, maxPoll)
	} else {
		st.PollAfter = maxPoll
	}
	return st
}

// spread is a fraction in [0, 1) fixed by the ticket number, evenly spread over tickets.
func spread(n uint64) float64 { return float64((n*0x9E3779B97F4A7C15)>>11) / (1 << 53) }

func secs(s float64) time.Duration {
	if s > 1e6 {
		s = 1e6
	}
	return time.Duration(s * float64(time.Second))
}

func clamp(d, lo, hi time.Duration) time.Duration {
	if hi < lo {
		hi = lo
	}
	return min(max(d, lo), hi)
}

// Run follows every line whose activity has its waiting room on and is known here (the
// inventory caches it), flushes the heartbeats of the
// places polled here and, on the instance holding a line's lease, opens the line and moves
// its serving position, every FollowEvery until ctx is done.
func (r *Room) Run(ctx context.Context) error {
	t := time.NewTicker(r.opts.FollowEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		cfg := r.cfg()
		if cfg == nil {
			continue
		}
		for id := range cfg.Activities {
			w, on := cfg.WaitingRoom(id)
			if !on {
				continue
			}
			if _, known := r.stock.Activity(id); !known {
				// Only lines of activities this instance holds: an edit may name thousands of
				// ids that do not exist (yet), and each line costs Redis calls every period.
				// A join looks its activity up, so its line is followed from the next period.
				continue
			}
			ln := r.lineOf(id)
			if err := r.stepLine(ctx, ln, w); err != nil && ctx.Err() == nil {
				r.m.errors.WithLabelValues(id).Inc()
				r.log.Debug("waiting room step failed", "activity", id, "err", err)
			}
		}
	}
}

// stepLine is one period of one line: follow, flush heartbeats, lead.
func (r *Room) stepLine(ctx context.Context, ln *line, w config.WaitingRoom) error {
	v, err := r.follow(ctx, ln)
	if err != nil {
		return err
	}
	if err := r.flush(ctx, ln, v); err != nil {
		return err
	}
	return r.lead(ctx, ln, w, v)
}

// follow reads the line's state in one pipeline and stores the new view.
func (r *Room) follow(ctx context.Context, ln *line) (*view, error) {
	pipe := r.rdb.Pipeline()
	st := pipe.HMGet(ctx, ln.k.st, "seq", "pre", "seed", "openMs", "pos", "admitted", "skipped")
	steps := pipe.ZRevRange(ctx, ln.k.steps, 0, 299)
	// After the state: the skips read cover every place up to the pos read.
	var from uint64
	if n := len(ln.skipped); n > 0 {
		from = ln.skipped[n-1]
	}
	skips := pipe.ZRangeByScore(ctx, ln.k.skip, &redis.ZRangeBy{Min: "(" + strconv.FormatUint(from, 10), Max: "+inf"})
	tm := pipe.Time(ctx)
	sent := time.Now()
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("waitroom: follow: %w", err)
	}
	now := time.Now()
	// The Redis clock against ours, taken at the middle of the round trip.
	offset := tm.Val().Sub(sent.Add(now.Sub(sent) / 2))
	vals := st.Val()
	u := func(i int) uint64 {
		s, _ := vals[i].(string)
		x, _ := strconv.ParseUint(s, 10, 64)
		return x
	}
	v := &view{read: now, offset: offset, seq: u(0), pos: u(4), admitted: u(5), skipped: u(6)}
	for _, m := range skips.Val() {
		if e, err := strconv.ParseUint(m, 10, 64); err == nil && e > from {
			ln.skipped = append(ln.skipped, e)
			from = e
		}
	}
	if _, ok := vals[1].(string); ok {
		v.opened, v.pre, v.seed, v.openMs = true, u(1), u(2), u(3)
		v.openAt = time.UnixMilli(int64(v.openMs)).Add(-offset)
	}
	if old := ln.view.Load(); old != nil && (v.seq < old.seq || v.pos < old.pos || v.skipped < old.skipped ||
		old.opened && (!v.opened || v.openMs != old.openMs)) {
		// Redis lost the line, or part of it (a number that only grows went back, or another
		// opening replaced the one known): it numbers or walks its places again, so what this
		// instance remembers by place number belongs to the old line. The skipped places are
		// read again from the start.
		r.log.Warn("waiting room line lost in Redis: following the new one", "activity", ln.id,
			"seq", v.seq, "was", old.seq)
		all, err := r.rdb.ZRangeByScore(ctx, ln.k.skip, &redis.ZRangeBy{Min: "-inf", Max: "+inf"}).Result()
		if err != nil {
			return nil, fmt.Errorf("waitroom: follow: %w", err)
		}
		ln.skipped = ln.skipped[:0:0]
		for _, m := range all {
			if e, err := strconv.ParseUint(m, 10, 64); err == nil && (len(ln.skipped) == 0 || e > ln.skipped[len(ln.skipped)-1]) {
				ln.skipped = append(ln.skipped, e)
			}
		}
		ln.mu.Lock()
		ln.preds = map[uint64]prediction{}
		ln.mu.Unlock()
	}
	v.skips = ln.skipped
	if v.opened && v.seed != 0 && v.pre > 0 {
		ln.shuffle(v.seed, v.pre)
		v.perm = ln.perm
	}
	v.readSteps(steps.Val())
	if v.opened {
		v.measureOutflow(now)
	}
	old := ln.view.Swap(v)
	r.observe(ln, old, v)
	return v, nil
}

// shuffle sets the line's permutation of its pre places (and its inverse) for seed, unless
// it has it already; the same seed and count always give the same permutation.
func (ln *line) shuffle(seed, pre uint64) {
	if ln.permFor != seed || len(ln.perm) != int(pre) {
		order := Shuffle(seed, pre)
		perm, byPlace := make([]uint32, pre), make([]uint32, pre)
		for i, n := range order {
			perm[n-1] = uint32(i + 1)
			byPlace[i] = uint32(n)
		}
		ln.perm, ln.order, ln.permFor = perm, byPlace, seed
	}
}

// readSteps sets the view's steps, oldest first, from the steps set read newest first,
// each at our clock (v.offset taken off); a member that does not parse is skipped.
func (v *view) readSteps(raw []string) {
	v.steps = make([]step, 0, len(raw))
	for i := len(raw) - 1; i >= 0; i-- {
		var ms int64
		var adm int
		var pos uint64
		var skipped int
		if _, err := fmt.Sscanf(raw[i], "%d:%d:%d:%d", &ms, &adm, &pos, &skipped); err != nil {
			continue
		}
		v.steps = append(v.steps, step{at: time.UnixMilli(ms).Add(-v.offset), pos: pos, admitted: adm})
	}
}

// measureOutflow sets the opened view's outflow, the places served per second over the
// last outflowWindow (or since the opening, if later), and the span it was measured over;
// it leaves both zero when the span is the full window and no step read is that old.
func (v *view) measureOutflow(now time.Time) {
	span := now.Sub(v.openAt)
	if span > outflowWindow {
		span = outflowWindow
	}
	if span > 0 {
		var served uint64
		from := now.Add(-span)
		base := uint64(0)
		for _, s := range v.steps {
			if !s.at.After(from) {
				base = s.pos
			}
		}
		if v.pos > base {
			served = v.pos - base
		}
		if len(v.steps) > 0 && !v.steps[0].at.After(from) || span < outflowWindow {
			v.outflow = float64(served) / span.Seconds()
			v.measured = span
		}
	}
}

// observe updates the gauges and measures the ETA error of the places the inlet just reached.
func (r *Room) observe(ln *line, old, v *view) {
	r.m.length.WithLabelValues(ln.id).Set(float64(v.seq - min(v.pos, v.seq)))
	r.m.outflow.WithLabelValues(ln.id).Set(v.outflow)
	if old == nil || v.pos <= old.pos {
		return
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if len(ln.preds) == 0 {
		return
	}
	for e := old.pos + 1; e <= v.pos; e++ {
		p, ok := ln.preds[e]
		if !ok {
			continue
		}
		delete(ln.preds, e)
		at, ok := v.admittedAt(e)
		if !ok || v.wasSkipped(e) {
			continue
		}
		actual := at.Sub(p.made)
		if actual <= 0 {
			continue
		}
		errRatio := math.Abs(float64(p.at.Sub(at))) / float64(actual)
		r.m.etaError.WithLabelValues(ln.id).Observe(errRatio)
	}
}

// flush hands the heartbeats of the places polled here to Redis, in one command, on the
// Redis clock.
func (r *Room) flush(ctx context.Context, ln *line, v *view) error {
	ln.mu.Lock()
	if len(ln.beats) == 0 {
		ln.mu.Unlock()
		return nil
	}
	beats := ln.beats
	ln.beats = make(map[uint64]int64, len(beats))
	ln.mu.Unlock()
	members := make([]redis.Z, 0, len(beats))
	for n, ms := range beats {
		members = append(members, redis.Z{Score: float64(ms + v.offset.Milliseconds()), Member: n})
	}
	if err := r.rdb.ZAdd(ctx, ln.k.hb, members...).Err(); err != nil {
		// Put them back: a later flush may carry them (newer polls win).
		ln.mu.Lock()
		for n, ms := range beats {
			if ms > ln.beats[n] {
				ln.beats[n] = ms
			}
		}
		ln.mu.Unlock()
		return fmt.Errorf("waitroom: heartbeats: %w", err)
	}
	return nil
}

// lead takes or keeps the line's lease and, while held, opens the line at the opening and
// moves the serving position.
func (r *Room) lead(ctx context.Context, ln *line, w config.WaitingRoom, v *view) error {
	act, ok := r.stock.Activity(ln.id)
	if !ok {
		return nil // not known here yet: another instance leads, or this one will soon
	}
	f, err := r.lease.Run(ctx, r.rdb, []string{ln.k.lease, ln.k.st}, r.opts.InstanceID, r.opts.LeaseFor.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("waitroom: lease: %w", err)
	}
	ln.fence = f
	if f == 0 {
		return nil
	}
	fence := strconv.FormatInt(f, 10)
	if !v.opened {
		if time.Now().Before(act.OpensAt) {
			return nil
		}
		return r.openLine(ctx, ln, w, fence)
	}
	capPasses := int64(0)
	if !act.SoldOut && act.Remaining > 0 {
		capPasses = int64(math.Floor(float64(act.Remaining) * w.StockFactor))
		if capPasses < 1 {
			capPasses = 1
		}
	}
	if cfg := r.cfg(); act.Recovering || cfg != nil && cfg.ActivityKilled(ln.id) {
		// Paused: every poll is refused (503), so no heartbeat is recorded, and a walk would
		// skip the whole line. The script walks nothing now, nor for a refused poll's
		// Retry-After and a second once the pause ends: by then every place still followed
		// was polled again (one polled just before the pause is fresh until then too).
		capPasses = -(pauseRetry + time.Second).Milliseconds()
	}
	args := []any{r.opts.InstanceID, fence, strconv.FormatFloat(w.Rate, 'f', -1, 64), w.Heartbeat.D().Milliseconds(),
		w.PassTTL.D().Milliseconds(), capPasses, r.opts.MaxWalk, "0"}
	if v.seed != 0 {
		// The tickets of the next places of the prequeue, from the order this instance derived
		// from the seed: the script walks no further than the list (a view whose pos lags
		// makes a shorter step).
		args[7] = "1"
		from := v.pos + 1
		args = append(args, from)
		if ln.permFor == v.seed && from <= uint64(len(ln.order)) {
			for p := from; p <= uint64(len(ln.order)) && p < from+uint64(r.opts.MaxWalk); p++ {
				args = append(args, ln.order[p-1])
			}
		}
	}
	k := ln.k
	res, err := r.admit.Run(ctx, r.rdb, []string{k.st, k.lease, k.hb, k.adm, k.live, k.steps, k.skip}, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("waitroom: admit: %w", err)
	}
	switch {
	case len(res) == 3:
		r.m.admitted.WithLabelValues(ln.id).Add(float64(res[0]))
		r.m.abandoned.WithLabelValues(ln.id).Add(float64(res[1]))
	case len(res) == 1 && (res[0] == -1 || res[0] == -2):
		ln.fence = 0
	default:
		return fmt.Errorf("waitroom: admit script returned unknown answer %v", res)
	}
	return nil
}

// pauseRetry is the Retry-After of a poll refused while a line is paused (a kill switch's 503
// DISABLED: admission's disabledRetry; a recovering activity's is the same).
const pauseRetry = 5 * time.Second

// openLine freezes the prequeue and, for a shuffled line, draws its order.
func (r *Room) openLine(ctx context.Context, ln *line, w config.WaitingRoom, fence string) error {
	seqS, err := r.rdb.HGet(ctx, ln.k.st, "seq").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("waitroom: open: %w", err)
	}
	pre, _ := strconv.ParseUint(seqS, 10, 64)
	seed := uint64(0)
	if w.Order == config.OrderShuffle && pre > 0 {
		for seed == 0 {
			seed = rand.Uint64()
		}
	}
	v, err := r.open.Run(ctx, r.rdb, []string{ln.k.st, ln.k.lease}, r.opts.InstanceID, fence, pre, strconv.FormatUint(seed, 10)).Int64()
	if err != nil {
		return fmt.Errorf("waitroom: open: %w", err)
	}
	switch v {
	case 1:
		r.log.Info("waiting room opened", "activity", ln.id, "prequeue", pre, "shuffled", seed != 0)
	case 2, -2: // open already, or a join came in between: read again next period
	case -1:
		ln.fence = 0
	default:
		return fmt.Errorf("waitroom: open script returned unknown code %d", v)
	}
	return nil
}

// Shuffle returns the ticket numbers 1..n in the order drawn from seed (place 1 first): a Fisher-Yates shuffle
// driven by ChaCha8 keyed by the seed, written out here so that every instance and every
// release derives the same order from the same seed.
func Shuffle(seed, n uint64) []uint64 {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rng := rand.NewChaCha8(key)
	order := make([]uint64, n)
	for i := range order {
		order[i] = uint64(i + 1)
	}
	for i := n - 1; i > 0; i-- {
		j := rng.Uint64() % (i + 1) // bias below 2^-40 for any line under 2^24 places
		order[i], order[j] = order[j], order[i]
	}
	return order
}
