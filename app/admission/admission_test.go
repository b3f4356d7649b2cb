package admission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
)

// countBudgets is a Budgets that allows n takes per key and then refuses with a wait of 1 s.
type countBudgets struct {
	mu   sync.Mutex
	n    int
	used map[string]int
}

func (b *countBudgets) Allow(key string, _ tokenbucket.Limit, _ time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used[key] >= b.n {
		return false, time.Second
	}
	b.used[key]++
	return true, 0
}

// gateFixture is a Gate over a real Store and Limiter on miniredis (pure logic: the scripts
// run in miniredis's Lua).
type gateFixture struct {
	calls redishook.Counter // the Redis commands of the fixture's client
	gate  *Gate
	inv   *inventory.Store
	lim   *limiter.Limiter
	now   time.Time
	price *countBudgets
}

func newGateFixture(t *testing.T) *gateFixture {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	f := &gateFixture{now: time.Now(), price: &countBudgets{n: 1, used: map[string]int{}}}
	rdb.AddHook(&f.calls)
	inv, err := inventory.New(rdb, inventory.Options{InstanceID: "t", UserHashKey: bytes.Repeat([]byte{7}, 32)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limiter.New(rdb, limiter.Options{InstanceID: "t"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.inv, f.lim = inv, lim
	f.gate = NewGate(inv, lim, f.price, nil, func() time.Time { return f.now }, nil)
	return f
}

func (f *gateFixture) create(t *testing.T, a inventory.Activity) inventory.ActivityView {
	t.Helper()
	if a.Shards == 0 {
		a.Shards = 1
	}
	if _, _, err := f.inv.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	v, ok := f.inv.Activity(a.ID)
	if !ok {
		t.Fatalf("activity %s not known after Create", a.ID)
	}
	return v
}

func policy(t *testing.T, yaml string) *Policy {
	t.Helper()
	cfg, err := config.Decode([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return NewPolicy(cfg)
}

// generous is a configuration generous enough that only what a test sets limits anything.
const generous = testsvc.GenerousConfig

func rejection(t *testing.T, err error) *Rejection {
	t.Helper()
	var r *Rejection
	if !errors.As(err, &r) {
		t.Fatalf("want a *Rejection, got %v", err)
	}
	return r
}

// TestAdmitLayersInOrder: each layer answers its rejection, and when several layers would
// refuse, the outermost one answers (docs/API.md section 3).
func TestAdmitLayersInOrder(t *testing.T) {
	f := newGateFixture(t)
	open := f.create(t, inventory.Activity{ID: "open", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute)})
	later := open
	later.OpensAt = f.now.Add(time.Hour)
	soon := open
	soon.OpensAt = f.now.Add(time.Minute) // within TokenTTL of the opening
	closed := open
	closed.ClosesAt = f.now.Add(-time.Second)
	soldOut := open
	soldOut.SoldOut = true
	base := generous + `
blacklist: {users: [mallory], ips: [192.0.2.0/24]}
`
	addr := netip.MustParseAddr("198.51.100.7")
	tests := []struct {
		name       string
		cfg        string
		kind       Kind
		view       inventory.ActivityView
		user       string
		addr       netip.Addr
		wantStatus int
		wantCode   string
	}{
		{name: "kill switch first", cfg: base + "killSwitch: true\n", view: soldOut, user: "mallory", addr: addr, wantStatus: 503, wantCode: CodeDisabled},
		{name: "not open", cfg: base, view: later, user: "u", addr: addr, wantStatus: http.StatusTooEarly, wantCode: CodeNotOpen},
		{name: "token before TokenTTL of the opening", cfg: base, kind: ForToken, view: later, user: "u", addr: addr, wantStatus: http.StatusTooEarly, wantCode: CodeNotOpen},
		{name: "token within TokenTTL of the opening", cfg: base, kind: ForToken, view: soon, user: "u", addr: addr},
		{name: "closed", cfg: base, view: closed, user: "mallory", addr: addr, wantStatus: 410, wantCode: CodeClosed},
		{name: "sold out before the blacklist", cfg: base, view: soldOut, user: "mallory", addr: addr, wantStatus: 410, wantCode: CodeSoldOut},
		{name: "blocked user", cfg: base, view: open, user: "mallory", addr: addr, wantStatus: 403, wantCode: CodeForbidden},
		{name: "blocked address", cfg: base, view: open, user: "u", addr: netip.MustParseAddr("192.0.2.9"), wantStatus: 403, wantCode: CodeForbidden},
		{name: "outside the canary", cfg: base + "activities: {open: {canaryRatio: 0}}\n", view: open, user: "u", addr: addr, wantStatus: 429, wantCode: CodeNotAdmitted},
		{name: "admitted", cfg: base, view: open, user: "u", addr: addr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{Kind: tt.kind, Activity: tt.view, UserID: tt.user, Addr: tt.addr, Quantity: 1}
			adm, err := f.gate.Admit(context.Background(), policy(t, tt.cfg), r)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("want admitted, got %v", err)
				}
				if tt.kind == ForReservation {
					f.lim.Refund(adm.decision)
				}
				return
			}
			rej := rejection(t, err)
			if rej.Status != tt.wantStatus || rej.Code != tt.wantCode {
				t.Fatalf("got %d %s, want %d %s", rej.Status, rej.Code, tt.wantStatus, tt.wantCode)
			}
			if rej.Code == CodeNotOpen && !rej.OpensAt.Equal(tt.view.OpensAt) {
				t.Fatalf("opensAt %v, want %v", rej.OpensAt, tt.view.OpensAt)
			}
			if (rej.Status == 429 || rej.Status == 503) && rej.RetryAfter <= 0 {
				t.Fatalf("%s without a Retry-After", rej.Code)
			}
		})
	}
}

// TestAdmitRateLimitsAndRefunds: an exhausted activity budget answers 429 naming the
// activity dimension; a request the token layer refuses gives its budget token back.
func TestAdmitRateLimitsAndRefunds(t *testing.T) {
	f := newGateFixture(t)
	v := f.create(t, inventory.Activity{ID: "tok", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute), RequireToken: true})
	p := policy(t, generous+"activities: {tok: {limits: {rate: 0.001, burst: 1}}}\n")
	ctx := context.Background()
	// The only token of the budget, taken and given back three times over by a request
	// without a grab token.
	for i := 0; i < 3; i++ {
		_, err := f.gate.Admit(ctx, p, &Request{Activity: v, UserID: "u", Quantity: 1})
		if rej := rejection(t, err); rej.Code != CodeTokenRequired || rej.Status != 403 {
			t.Fatalf("request %d without a token: %d %s", i, rej.Status, rej.Code)
		}
	}
	tok, _, err := f.inv.IssueToken(ctx, "tok", "u", TokenTTL)
	if err != nil {
		t.Fatal(err)
	}
	adm, err := f.gate.Admit(ctx, p, &Request{Activity: v, UserID: "u", Quantity: 1, Token: tok})
	if err != nil {
		t.Fatalf("with a grab token: %v", err)
	}
	_, err = f.gate.Admit(ctx, p, &Request{Activity: v, UserID: "w", Quantity: 1, Token: tok})
	if rej := rejection(t, err); rej.Code != CodeRateLimited || rej.Dimension != limiter.DimActivity || rej.RetryAfter <= 0 {
		t.Fatalf("budget spent: %+v", rej)
	}
	res, err := f.gate.Reserve(ctx, &adm)
	if err != nil || res.ID == "" || res.Replayed {
		t.Fatalf("reserve: %+v %v", res, err)
	}
}

// TestReserveAnswers: a new reservation, a replayed idempotency key (also after a sell-out,
// from Admit, before any budget), and the per-user limit with the last reservation's id.
func TestReserveAnswers(t *testing.T) {
	f := newGateFixture(t)
	v := f.create(t, inventory.Activity{ID: "res", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute)})
	p := policy(t, generous)
	ctx := context.Background()
	reserve := func(user, key string, view inventory.ActivityView) (Admission, Reservation, error) {
		r := &Request{Activity: view, UserID: user, Quantity: 1, IdempotencyKey: key}
		adm, err := f.gate.Admit(ctx, p, r)
		if err != nil || adm.Replay != "" {
			return adm, Reservation{}, err
		}
		res, err := f.gate.Reserve(ctx, &adm)
		return adm, res, err
	}
	_, first, err := reserve("u", "k1", v)
	if err != nil || first.ID == "" || first.Replayed {
		t.Fatalf("first: %+v %v", first, err)
	}
	if _, again, err := reserve("u", "k1", v); err != nil || again.ID != first.ID || !again.Replayed {
		t.Fatalf("replayed key: %+v %v, want %s replayed", again, err, first.ID)
	}
	_, _, err = reserve("u", "k2", v)
	if rej := rejection(t, err); rej.Status != 409 || rej.Code != CodeAlreadyPurchased || rej.ReservationID != first.ID {
		t.Fatalf("second key: %+v", rej)
	}
	soldOut := v
	soldOut.SoldOut = true
	if adm, _, err := reserve("u", "k1", soldOut); err != nil || adm.Replay != first.ID {
		t.Fatalf("replay after a sell-out: %+v %v", adm, err)
	}
	if _, _, err := reserve("u", "k3", soldOut); rejection(t, err).Code != CodeSoldOut {
		t.Fatalf("unknown key after a sell-out: %v", err)
	}
	// Past the read budget (one read per client here), a keyed request after a sell-out gets
	// the plain 410 without a read.
	if _, _, err := reserve("u", "k1", soldOut); rejection(t, err).Code != CodeSoldOut {
		t.Fatalf("replay past the read budget: %v", err)
	}
}

// TestRejectionsAllocateNothing: a rejection allocates nothing. The 410 of a known sell-out
// allocates nothing at all; the 429 of a spent budget allocates only the IP key that the
// limiter's request names (measured alongside, the same way).
func TestRejectionsAllocateNothing(t *testing.T) {
	f := newGateFixture(t)
	v := f.create(t, inventory.Activity{ID: "alloc", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute)})
	p := policy(t, generous+"activities: {alloc: {limits: {rate: 0.001, burst: 1}}}\n")
	ctx := context.Background()
	addr := netip.MustParseAddr("198.51.100.7")
	r := &Request{Activity: v, UserID: "u", Quantity: 1, Addr: addr}
	if _, err := f.gate.Admit(ctx, p, r); err != nil {
		t.Fatal(err) // spends the budget
	}
	soldOut := *r
	soldOut.Activity.SoldOut = true
	names := testing.AllocsPerRun(100, func() {
		if LimitKey(addr, 64) == "" {
			t.Fatal("empty name")
		}
	})
	tests := []struct {
		name string
		r    *Request
		want string
		max  float64
	}{{"410", &soldOut, CodeSoldOut, 0}, {"429", r, CodeRateLimited, names}}
	for _, tt := range tests {
		n := testing.AllocsPerRun(100, func() {
			if _, err := f.gate.Admit(ctx, p, tt.r); !isRejection(err, tt.want) {
				t.Fatalf("want %s, got %v", tt.want, err)
			}
		})
		if n > tt.max {
			t.Errorf("%s: %.1f allocations per Admit, want at most %.1f", tt.name, n, tt.max)
		}
	}
}

// isRejection says whether err is a Rejection with code want (errors.AsType allocates nothing,
// so it may run inside AllocsPerRun).
func isRejection(err error, want string) bool {
	rej, ok := errors.AsType[*Rejection](err)
	return ok && rej.Code == want
}

// TestKnownStateMakesNoRedisCall: admission owns the answer of an activity its snapshot shows
// not open, closed or sold out: no Redis command (inventory.Reserve checks none of it again:
// the script decides, with Redis time, for the requests admitted).
func TestKnownStateMakesNoRedisCall(t *testing.T) {
	f := newGateFixture(t)
	v := f.create(t, inventory.Activity{ID: "known", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute)})
	later, closed, soldOut := v, v, v
	later.OpensAt = f.now.Add(time.Hour)
	closed.ClosesAt = f.now.Add(-time.Second)
	soldOut.SoldOut = true
	p := policy(t, generous)
	for _, tt := range []struct {
		view inventory.ActivityView
		want string
	}{{later, CodeNotOpen}, {closed, CodeClosed}, {soldOut, CodeSoldOut}} {
		before := f.calls.Load()
		_, err := f.gate.Admit(context.Background(), p, &Request{Activity: tt.view, UserID: "u", Quantity: 1, Addr: netip.MustParseAddr("198.51.100.7")})
		if rej := rejection(t, err); rej.Code != tt.want {
			t.Fatalf("got %s, want %s", rej.Code, tt.want)
		}
		if n := f.calls.Load() - before; n != 0 {
			t.Fatalf("%s: %d Redis commands, want 0", tt.want, n)
		}
	}
}

// answerStock is a Stock whose reservation script answers res.
type answerStock struct {
	Stock // nil: only Reserve and ChecksIP are called
	res   inventory.ReserveResult
}

func (s *answerStock) ChecksIP() bool { return true }
func (s *answerStock) Reserve(context.Context, inventory.ReserveRequest) (inventory.ReserveResult, error) {
	return s.res, nil
}

// TestScriptAnswersAsRejections: each answer of the reservation script is the rejection of
// docs/API.md section 4 (one table, scriptRejections), with what the answer carries.
func TestScriptAnswersAsRejections(t *testing.T) {
	f := newGateFixture(t)
	v := f.create(t, inventory.Activity{ID: "codes", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute)})
	opens := f.now.Add(time.Hour).Truncate(time.Millisecond)
	tests := []struct {
		give inventory.ReserveResult
		want Rejection
	}{
		{inventory.ReserveResult{Code: inventory.AlreadyPurchased, ReservationID: "r1"},
			Rejection{Status: 409, Code: CodeAlreadyPurchased, Message: "the per-user limit is reached", ReservationID: "r1"}},
		{inventory.ReserveResult{Code: inventory.AlreadyPurchased},
			Rejection{Status: 409, Code: CodeAlreadyPurchased, Message: "the per-user limit is reached"}},
		{inventory.ReserveResult{Code: inventory.SoldOut}, Rejection{Status: 410, Code: CodeSoldOut, Message: "sold out"}},
		{inventory.ReserveResult{Code: inventory.Closed}, Rejection{Status: 410, Code: CodeClosed, Message: "the activity is closed"}},
		{inventory.ReserveResult{Code: inventory.NotOpen, OpensAt: opens},
			Rejection{Status: 425, Code: CodeNotOpen, Message: msgNotOpen, OpensAt: opens}},
		{inventory.ReserveResult{Code: inventory.NotOpen}, // no opening in the answer: the snapshot's
			Rejection{Status: 425, Code: CodeNotOpen, Message: msgNotOpen, OpensAt: v.OpensAt}},
		{inventory.ReserveResult{Code: inventory.UserRateLimited, RetryAfter: 1500 * time.Millisecond},
			Rejection{Status: 429, Code: CodeRateLimited, Message: msgRateLimited, Dimension: limiter.DimUser, Reason: limiter.ReasonRate, RetryAfter: 1500 * time.Millisecond}},
		{inventory.ReserveResult{Code: inventory.UserWindowLimited, RetryAfter: time.Minute},
			Rejection{Status: 429, Code: CodeRateLimited, Message: msgRateLimited, Dimension: limiter.DimUser, Reason: limiter.ReasonWindow, RetryAfter: time.Minute}},
		{inventory.ReserveResult{Code: inventory.IPRateLimited, RetryAfter: 2 * time.Second},
			Rejection{Status: 429, Code: CodeRateLimited, Message: msgRateLimited, Dimension: limiter.DimIP, Reason: limiter.ReasonRate, RetryAfter: 2 * time.Second}},
		{inventory.ReserveResult{Code: inventory.Unknown}, *rejUnexpected},
		{inventory.ReserveResult{Code: inventory.Code(99)}, *rejUnexpected},
	}
	for _, tt := range tests {
		t.Run(tt.give.Code.String(), func(t *testing.T) {
			st := &answerStock{res: tt.give}
			g := NewGate(st, f.lim, f.price, nil, func() time.Time { return f.now }, nil)
			r := &Request{Activity: v, UserID: "u", Quantity: 1}
			adm := Admission{r: r}
			_, err := g.Reserve(context.Background(), &adm)
			if got := rejection(t, err); *got != tt.want {
				t.Fatalf("got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// recordingLimiter is a limiter that keeps what the admission step reports to it of the
// reservation script's decisions.
type recordingLimiter struct {
	*limiter.Limiter
	events []string
}

func (l *recordingLimiter) ScriptAdmitted(user, ip bool) {
	l.events = append(l.events, fmt.Sprintf("admitted user=%v ip=%v", user, ip))
	l.Limiter.ScriptAdmitted(user, ip)
}

func (l *recordingLimiter) ScriptRejected(dim, reason string, retry time.Duration) {
	l.events = append(l.events, fmt.Sprintf("rejected %s %s retry>0=%v", dim, reason, retry > 0))
	l.Limiter.ScriptRejected(dim, reason, retry)
}

// TestScriptLimitDecisionsAreCounted: what the reservation script decides of the user's and
// the IP's limits reaches the limiter from the admission step, once per answer; answers
// that decide nothing (replays) are not counted.
func TestScriptLimitDecisionsAreCounted(t *testing.T) {
	f := newGateFixture(t)
	if !f.inv.ChecksIP() {
		t.Fatal("a single Redis node must let the script take the IP token")
	}
	v := f.create(t, inventory.Activity{ID: "counted", Stock: 10, PerUserLimit: 1, OpensAt: f.now.Add(-time.Minute)})
	rec := &recordingLimiter{Limiter: f.lim}
	g := NewGate(f.inv, rec, f.price, nil, func() time.Time { return f.now }, nil)
	limits := `
auth: {mode: header, trustedGateway: true}
limits:
  user: {rate: 0.001, burst: 2}
  ip:   {rate: 0.001, burst: 3}
`
	plain, windowed := policy(t, limits), policy(t, limits+"  userWindow: {window: 60s, max: 1}\n")
	addr := netip.MustParseAddr("198.51.100.9")
	want := []string{}
	for i, c := range []struct {
		p        *Policy
		user     string
		key      string
		wantCode string // "" a reservation, "REPLAYED" a replay
		want     string
	}{
		{plain, "u1", "k1", "", "admitted user=true ip=true"},
		{plain, "u1", "k1", "REPLAYED", ""},
		{plain, "u1", "", CodeAlreadyPurchased, "admitted user=true ip=true"},
		{plain, "u1", "", CodeRateLimited, "rejected user rate retry>0=true"},
		{windowed, "u2", "", "", "admitted user=true ip=true"},
		{windowed, "u2", "", CodeRateLimited, "rejected user window retry>0=true"},
		{plain, "u3", "", CodeRateLimited, "rejected ip rate retry>0=true"},
	} {
		r := &Request{Kind: ForReservation, Activity: v, UserID: c.user, Addr: addr, Quantity: 1, IdempotencyKey: c.key}
		adm, err := g.Admit(context.Background(), c.p, r)
		if err != nil {
			t.Fatalf("%d: admit: %v", i, err)
		}
		res, err := g.Reserve(context.Background(), &adm)
		got := ""
		switch {
		case err != nil:
			got = rejection(t, err).Code
		case res.Replayed:
			got = "REPLAYED"
		}
		if got != c.wantCode {
			t.Fatalf("%d: %s: got %q (%v), want %q", i, c.user, got, err, c.wantCode)
		}
		if c.want != "" {
			want = append(want, c.want)
		}
	}
	if got := strings.Join(rec.events, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("counted:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
