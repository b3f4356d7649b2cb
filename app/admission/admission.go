// Package admission is the admission step of a storefront request (docs/API.md section 3,
// steps 1 to 5, and the grab token): the layers run in order, and the first that refuses
// answers one typed *Rejection. A reservation is then
//
//	adm, err := gate.Admit(ctx, policy, req) // kill switch, state, blacklist, canary, limits, token
//	res, err := gate.Reserve(ctx, &adm)      // the reservation script, refunds, memory of rejects
//
// and its caller maps every error in one place: a *Rejection is an answer, a *Fault a 503.
// The grab-token route runs the same step with Request.Kind ForToken (its layers are a subset).
//
// Who takes the per-IP token is decided here, once: the reservation script on a single Redis
// node (one round trip for an admitted request), the limiter on Redis Cluster (where the IP
// bucket lives in another slot).
package admission

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
)

// TokenTTL is how long a grab token stays valid; the token route admits from TokenTTL before
// the opening.
const TokenTTL = 5 * time.Minute

// Stock is what the admission step needs of the inventory.
type Stock interface {
	// ChecksIP reports whether the reservation script can take the per-IP token (single node).
	ChecksIP() bool
	Replay(ctx context.Context, activityID, userID, key string) (string, bool, error)
	// ConsumeToken uses a grab token for the reservation of key idem; ReturnToken gives it
	// back (inventory.Store).
	ConsumeToken(ctx context.Context, activityID, userID, token, idem string) (bool, error)
	ReturnToken(ctx context.Context, activityID, userID, token, idem string) (bool, error)
	Reserve(ctx context.Context, r inventory.ReserveRequest) (inventory.ReserveResult, error)
}

// Limiter is what the admission step needs of the rate limiter.
type Limiter interface {
	Allow(ctx context.Context, r limiter.Request) (limiter.Decision, error)
	Refund(d limiter.Decision)
	Remember(version, userKey, ipKey string, retryAfter time.Duration)
	// ScriptAdmitted and ScriptRejected count what the reservation script decided of the
	// limits it checks (the user's bucket and window, the IP's when it takes the token) as
	// the limiter's own decisions (Gate.Reserve reports them).
	ScriptAdmitted(user, ip bool)
	ScriptRejected(dimension, reason string, retryAfter time.Duration)
	ObserveRedis(d time.Duration, err error)
	IPKey(addr netip.Addr, ipv6Prefix int) string
}

// Passes uses waiting-room passes (waitroom.Room): ConsumePass is true once, for a pass issued
// to the user for the activity whose turn came less than ttl ago; ReturnPass gives a pass back
// that the reservation of key idem used (it did not take stock), so ConsumePass is true for it
// once more.
type Passes interface {
	ConsumePass(ctx context.Context, activityID, userID, pass, idem string, ttl time.Duration) (bool, error)
	ReturnPass(ctx context.Context, activityID, userID, pass, idem string, ttl time.Duration) (bool, error)
}

// Budgets are the per-instance token buckets by key (limits.tokens and limits.reads).
type Budgets interface {
	Allow(key string, l tokenbucket.Limit, now time.Time) (bool, time.Duration)
}

var (
	_ Stock   = (*inventory.Store)(nil)
	_ Limiter = (*limiter.Limiter)(nil)
)

// Gate runs the admission step. Build it with NewGate; safe for concurrent use.
type Gate struct {
	stock   Stock
	lim     Limiter
	budgets Budgets
	passes  Passes // nil: no waiting room is served
	log     *slog.Logger
	now     func() time.Time
	// checksIP is whether the reservation script takes the per-IP token (Stock.ChecksIP,
	// fixed by the kind of Redis client).
	checksIP bool
}

// NewGate returns a Gate over the stock, the limiter, the local budgets and the waiting-room
// passes (nil: an activity whose waiting room is on refuses every reservation). now is the
// clock of the activity state (nil: time.Now); log may be nil (slog.Default()).
func NewGate(stock Stock, lim Limiter, budgets Budgets, passes Passes, now func() time.Time, log *slog.Logger) *Gate {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Gate{stock: stock, lim: lim, budgets: budgets, passes: passes, log: log, now: now, checksIP: stock.ChecksIP()}
}

// Kind is which route a Request is for.
type Kind int

const (
	// ForReservation is POST .../reservations: every layer.
	ForReservation Kind = iota
	// ForToken is POST .../tokens: kill switch, state (from TokenTTL before the opening),
	// blacklist, canary and the per-IP token budget.
	ForToken
	// ForQueue is POST .../queue: kill switch, state (from the waiting room's prequeue before
	// the opening), canary and the per-IP token budget; a blacklisted user is admitted with
	// Admission.Blocked set (the place is taken and never advances).
	ForQueue
	// ForPoll is GET .../queue/{ticket}: kill switch, state (as ForQueue), the per-user and
	// per-IP read budget (local); a blacklisted user is admitted with Admission.Blocked set.
	ForPoll
)

// Request is one request to admit, decoded and validated by the caller, its activity looked up
// (an unknown one is answered 404 before admission). A Request also holds the Rejection that
// Admit or Reserve returns when it carries something of the request: keep it (a pooled value,
// say) until the answer is written.
type Request struct {
	Kind     Kind
	Activity inventory.ActivityView
	UserID   string
	Addr     netip.Addr // client address; invalid when unknown
	Channel  string     // X-Channel, "" when absent
	Quantity int        // 1..Activity.PerUserLimit
	// IdempotencyKey is the client's key, "" when absent (Reserve then makes one).
	IdempotencyKey string
	Token          string // grab token of the body, "" when absent

	rej Rejection
}

// reject returns x held by r, as an error.
func (r *Request) reject(x Rejection) (Admission, error) {
	r.rej = x
	return Admission{}, &r.rej
}

// Admission is an admitted request, what Reserve needs. When Replay is set the request's
// idempotency key is already bound to that reservation (found after a sell-out, or before a
// one-time grab token was spent): nothing is held, answer it instead of reserving.
type Admission struct {
	Replay string
	// Blocked is set for a blacklisted user admitted by ForQueue.
	Blocked bool

	r        *Request
	decision limiter.Decision // what the limiter took, refunded when a later layer refuses
	reserve  inventory.ReserveRequest
	// passTTL is set when the admission used a waiting-room pass (r.Token), tokenUsed when it
	// used a grab token: Reserve gives either back unless the reservation took stock.
	passTTL   time.Duration
	tokenUsed bool
}

// Admit runs the layers of docs/API.md section 3 in order: kill switches, activity state from
// the local snapshot, blacklist, canary, rate limits (the limiter, or the token route's per-IP
// budget), then the grab token. It returns an Admission, or a *Rejection (the first layer that
// refused), or a *Fault (Redis failed on a read of the token layer or of a replay). Whatever it
// took is given back when it refuses.
func (g *Gate) Admit(ctx context.Context, p *Policy, r *Request) (Admission, error) {
	v, cfg := &r.Activity, p.cfg
	// 1. Kill switches (the global one included).
	if cfg.ActivityKilled(v.ID) {
		return Admission{}, rejDisabled
	}
	// 2. State from the local snapshot: no Redis call for a known answer.
	now := g.now()
	opens := v.OpensAt
	switch r.Kind {
	case ForToken:
		opens = opens.Add(-TokenTTL) // an earlier token would expire before the opening
	case ForQueue, ForPoll:
		w, _ := cfg.WaitingRoom(v.ID)
		opens = opens.Add(-w.Prequeue.D())
	}
	if now.Before(opens) {
		return r.reject(notOpen(v.OpensAt))
	}
	if !v.ClosesAt.IsZero() && !now.Before(v.ClosesAt) {
		return Admission{}, rejClosed
	}
	if v.Recovering {
		return Admission{}, rejRecovering
	}
	if v.SoldOut {
		// A retry of a reservation that took one of the last units (after an OUTCOME_UNKNOWN,
		// say) must still find it: a keyed request costs one hash read, within the client's
		// read budget (past it, the answer is the plain 410).
		if r.Kind == ForReservation && r.IdempotencyKey != "" && g.readAllowed(p, r.Addr, r.UserID) {
			if rid, ok, err := g.stock.Replay(ctx, v.ID, r.UserID, r.IdempotencyKey); err != nil {
				return Admission{}, &Fault{Err: err}
			} else if ok {
				return Admission{Replay: rid}, nil
			}
		}
		return Admission{}, rejSoldOut
	}
	// 3. Blacklist.
	blocked := cfg.BlockedUser(r.UserID) || (r.Addr.IsValid() && cfg.BlockedAddr(r.Addr))
	if blocked && r.Kind != ForQueue && r.Kind != ForPoll {
		return Admission{}, rejForbidden
	}
	if r.Kind == ForPoll {
		if ok, dim, wait := g.readBudget(p, r.Addr, r.UserID); !ok {
			return r.reject(rateLimited(dim, wait))
		}
		return Admission{r: r, Blocked: blocked}, nil
	}
	// 4. Canary.
	if !cfg.CanaryAdmits(v.ID, r.UserID) {
		return Admission{}, rejNotAdmitted
	}
	// 5. Rate limits.
	if r.Kind == ForToken || r.Kind == ForQueue {
		if k := LimitKey(r.Addr, p.ipv6Prefix); k != "" {
			if ok, wait := g.budgets.Allow("t|ip|"+k, p.tokens, now); !ok {
				return r.reject(rateLimited(limiter.DimIP, wait))
			}
		}
		return Admission{r: r, Blocked: blocked}, nil
	}
	// The per-IP plan, decided once: the key of the client's IP bucket, taken by the limiter
	// or, in the same round trip as the reservation, by its script (ipInReservation). The
	// limiter's memory of rejected users is in this process only: the user id keys it, so no
	// request hashes the user here (the reservation script does, once).
	ipKey := g.ipKey(p, r.Addr)
	ipInScript := g.ipInReservation(ipKey)
	lreq := p.limiterRequest(v.ID, v.CampaignID, r.Channel, ipKey, r.UserID)
	lreq.IPInReservation = ipInScript
	dec, err := g.lim.Allow(ctx, lreq)
	if err != nil {
		return Admission{}, rejCanceled
	}
	if !dec.Allowed {
		x := rateLimited(dec.Dimension, dec.RetryAfter)
		x.Reason = dec.Reason
		return r.reject(x)
	}
	// 6. Grab token, or the waiting room's pass when the room is on (the pass is the grab
	// token of a queued sale). A replayed key is answered before the one-time token is
	// spent, so a safe retry (with the already used token) returns the reservation.
	var passTTL time.Duration
	if w, on := cfg.WaitingRoom(v.ID); on {
		if adm, err := g.checkPass(ctx, r, w.PassTTL.D()); adm.Replay != "" || err != nil {
			g.lim.Refund(dec)
			return adm, err
		}
		passTTL = w.PassTTL.D()
	} else if v.RequireToken {
		if adm, err := g.checkToken(ctx, r); adm.Replay != "" || err != nil {
			g.lim.Refund(dec)
			return adm, err
		}
	}
	adm := Admission{r: r, decision: dec, passTTL: passTTL, tokenUsed: v.RequireToken && passTTL == 0, reserve: inventory.ReserveRequest{
		ActivityID: v.ID, UserID: r.UserID, IdempotencyKey: r.IdempotencyKey, Quantity: r.Quantity,
		UserRate: p.userRate, Window: p.window, WindowMax: p.windowMax,
	}}
	if ipInScript {
		adm.reserve.IPKey, adm.reserve.IPRate = ipKey, p.ipRate
	}
	return adm, nil
}

// ipKey is the per-IP plan of a reservation: the Redis key of the client's IP bucket, ""
// when the IP is not limited (no per-IP limit, or the address is unknown).
func (g *Gate) ipKey(p *Policy, addr netip.Addr) string {
	if !p.ip.Limited() {
		return ""
	}
	return g.lim.IPKey(addr, p.ipv6Prefix)
}

// ipInReservation is the one place that decides who takes the per-IP token of ipKey: the
// reservation script when it can (single Redis node) and the IP is limited, else the limiter.
func (g *Gate) ipInReservation(ipKey string) bool {
	return g.checksIP && ipKey != ""
}

// replay answers a request whose idempotency key is bound to a reservation already, before
// a one-time token or pass is spent: done is true with that reservation (Admission.Replay) or
// with a *Fault; false when there is no key or it is bound to nothing.
func (g *Gate) replay(ctx context.Context, r *Request) (_ Admission, done bool, _ error) {
	if r.IdempotencyKey == "" {
		return Admission{}, false, nil
	}
	rid, ok, err := g.stock.Replay(ctx, r.Activity.ID, r.UserID, r.IdempotencyKey)
	if err != nil {
		return Admission{}, true, &Fault{Err: err}
	}
	if ok {
		return Admission{Replay: rid}, true, nil
	}
	return Admission{}, false, nil
}

// checkToken is the grab-token layer: the reservation the idempotency key is bound to, if any,
// else the one-time token is used for the reservation's key (403 TOKEN_REQUIRED when there is
// none, it is not valid, or another reservation used it); Reserve gives it back when the
// reservation took no stock.
func (g *Gate) checkToken(ctx context.Context, r *Request) (Admission, error) {
	id := r.Activity.ID
	if adm, done, err := g.replay(ctx, r); done {
		return adm, err
	}
	if r.Token == "" {
		return Admission{}, rejTokenRequired
	}
	if r.IdempotencyKey == "" {
		// The token is bound to the reservation's key, as a pass is (checkPass).
		r.IdempotencyKey = newIdempotencyKey()
	}
	ok, err := g.stock.ConsumeToken(ctx, id, r.UserID, r.Token, r.IdempotencyKey)
	if err != nil {
		// The script may have bound the token to the key: the answer carries it.
		return Admission{}, &Fault{Err: err, IdempotencyKey: r.IdempotencyKey}
	}
	if !ok {
		return Admission{}, rejTokenRequired
	}
	return Admission{}, nil
}

// checkPass is the grab-token layer of an activity behind a waiting room: the reservation the
// idempotency key is bound to, if any, else the pass is used (403 TOKEN_REQUIRED when there is
// none, it is another user's, another activity's, used before or expired).
func (g *Gate) checkPass(ctx context.Context, r *Request, ttl time.Duration) (Admission, error) {
	id := r.Activity.ID
	if adm, done, err := g.replay(ctx, r); done {
		return adm, err
	}
	if r.Token == "" || g.passes == nil {
		return Admission{}, rejPassRequired
	}
	if r.IdempotencyKey == "" {
		// The pass is bound to the reservation's key: one is made now (the answer of a
		// fault carries it), so the reservation sent again with it finds its pass.
		r.IdempotencyKey = newIdempotencyKey()
	}
	ok, err := g.passes.ConsumePass(ctx, id, r.UserID, r.Token, r.IdempotencyKey, ttl)
	if err != nil {
		// The script may have bound the pass to the key: the answer carries it.
		return Admission{}, &Fault{Err: err, IdempotencyKey: r.IdempotencyKey}
	}
	if !ok {
		return Admission{}, rejPassRequired
	}
	return Admission{}, nil
}

// Reservation is a reservation made (or found again by its idempotency key: Replayed).
type Reservation struct {
	ID       string
	Replayed bool
}

// Reserve runs the reservation script for an admission (idempotency, per-user limits and stock
// in one script on the user's home shard; the per-IP token too when the script takes it). A
// request without an idempotency key gets one, so that a reservation whose answer is lost can
// be found again by retrying with it. Every answer but a new reservation refunds what the
// limiter took. What the script decided of the limits is counted by the limiter, from the
// answer's rejection (scriptRejections): a rate rejection is remembered, so the next request
// of that user or IP is answered locally. It returns the reservation, a *Rejection, or a
// *Fault whose IdempotencyKey is set (the script may have run).
func (g *Gate) Reserve(ctx context.Context, a *Admission) (Reservation, error) {
	req := a.reserve
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = newIdempotencyKey()
	}
	start := time.Now()
	res, err := g.stock.Reserve(ctx, req)
	g.lim.ObserveRedis(time.Since(start), err)
	if err == nil && res.Code == inventory.Reserved {
		g.scriptPassed(&a.reserve)
		return Reservation{ID: res.ReservationID}, nil
	}
	g.lim.Refund(a.decision)
	if errors.Is(err, inventory.ErrRecovering) {
		g.giveBack(ctx, a)
		return Reservation{}, rejRecovering // refused before any script ran
	}
	if err != nil {
		return Reservation{}, &Fault{Err: err, IdempotencyKey: req.IdempotencyKey}
	}
	r := a.r
	if res.Code == inventory.Replayed {
		return Reservation{ID: res.ReservationID, Replayed: true}, nil
	}
	x, ok := scriptRejection(res.Code)
	if !ok {
		g.log.Error("unexpected reservation result", "code", res.Code)
		g.giveBack(ctx, a)
		return Reservation{}, rejUnexpected
	}
	if x.Code != CodeAlreadyPurchased {
		g.giveBack(ctx, a) // refused by the script: the turn goes on (at the limit it is over)
	}
	// The fields the answer carries, from the script's answer.
	x.RetryAfter = res.RetryAfter
	x.ReservationID = res.ReservationID
	if x.Code == CodeNotOpen {
		x.OpensAt = res.OpensAt
		if x.OpensAt.IsZero() {
			x.OpensAt = r.Activity.OpensAt
		}
	}
	switch x.Dimension {
	case limiter.DimIP:
		g.lim.ScriptRejected(x.Dimension, x.Reason, res.RetryAfter)
		g.lim.Remember(a.decision.Version, "", a.reserve.IPKey, res.RetryAfter)
	case limiter.DimUser:
		g.lim.ScriptRejected(x.Dimension, x.Reason, res.RetryAfter)
		g.lim.Remember(a.decision.Version, r.UserID, "", res.RetryAfter)
	default:
		if x.Code == CodeAlreadyPurchased || x.Code == CodeSoldOut {
			g.scriptPassed(&a.reserve) // answered after the limits' checks
		}
	}
	_, e := r.reject(x)
	return Reservation{}, e
}

// scriptPassed counts a request that the reservation script let through the limits it
// checks (before the per-user limit and the stock): the user's when a per-user bucket or
// window was in force, the IP's when the script took the IP token.
func (g *Gate) scriptPassed(r *inventory.ReserveRequest) {
	g.lim.ScriptAdmitted(r.UserRate.Limited() || (r.WindowMax > 0 && r.Window > 0), r.IPKey != "")
}

// passReturnTimeout bounds the call that gives a pass or token back (the client may be gone).
const passReturnTimeout = 500 * time.Millisecond

// giveBack gives back the waiting-room pass or grab token the admission used, when it used
// one and the reservation script refused it (a rate limit, sold out) or the activity is
// recovering: the reservation took no stock and the turn, or the token, goes on. A fault whose
// outcome is unknown keeps it used, bound to the reservation's idempotency key
// (waitroom_pass.lua, inventory_token.lua): sent again with that key, the same reservation uses
// it again and is replayed or made, once; a buyer at the per-user limit keeps it used too. A
// failure to give it back is logged: the buyer then waits for a new turn, or takes a new token.
func (g *Gate) giveBack(ctx context.Context, a *Admission) {
	if a.passTTL == 0 && !a.tokenUsed {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), passReturnTimeout)
	defer cancel()
	r := a.r
	if a.tokenUsed {
		if _, err := g.stock.ReturnToken(ctx, r.Activity.ID, r.UserID, r.Token, r.IdempotencyKey); err != nil {
			g.log.Warn("giving a grab token back failed: the buyer needs a new one", "activity", r.Activity.ID, "err", err)
		}
		return
	}
	if g.passes == nil {
		return
	}
	if _, err := g.passes.ReturnPass(ctx, r.Activity.ID, r.UserID, r.Token, r.IdempotencyKey, a.passTTL); err != nil {
		g.log.Warn("giving a waiting-room pass back failed: the buyer's turn is lost", "activity", r.Activity.ID, "err", err)
	}
}

// ReadBudget takes one token of the read budget (limits.reads) of the client's IP (prefix) and,
// when user is not empty, of the user. It returns nil, or a *Rejection 429 RATE_LIMITED naming
// the dimension that is empty.
func (g *Gate) ReadBudget(p *Policy, addr netip.Addr, user string) error {
	if ok, dim, wait := g.readBudget(p, addr, user); !ok {
		r := rateLimited(dim, wait)
		return &r
	}
	return nil
}

// readAllowed is ReadBudget for a caller that only needs to know.
func (g *Gate) readAllowed(p *Policy, addr netip.Addr, user string) bool {
	ok, _, _ := g.readBudget(p, addr, user)
	return ok
}

func (g *Gate) readBudget(p *Policy, addr netip.Addr, user string) (bool, string, time.Duration) {
	now := g.now()
	if k := LimitKey(addr, p.ipv6Prefix); k != "" {
		if ok, wait := g.budgets.Allow("r|ip|"+k, p.reads, now); !ok {
			return false, limiter.DimIP, wait
		}
	}
	if user != "" {
		if ok, wait := g.budgets.Allow("r|u|"+user, p.reads, now); !ok { // local: no hash needed
			return false, limiter.DimUser, wait
		}
	}
	return true, "", 0
}

// newIdempotencyKey is a server-generated idempotency key: "srv-" and 128 random bits, in
// base64url (one allocation: the string).
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var s [len(keyPrefix) + 22]byte
	copy(s[:], keyPrefix)
	base64.RawURLEncoding.Encode(s[len(keyPrefix):], b[:])
	return string(s[:])
}

const keyPrefix = "srv-"
