// Package limiter decides the rate limits of docs/API.md section 3 step 5 for every dimension at once,
// all or nothing: global, per campaign, per activity, per channel and per IP, plus a local
// memory of users and IPs that were just rejected. The per-user token bucket and sliding window
// run in the reservation script (lua/lib_bucket.lua, lua/lib_window.lua's counter form);
// RedisBucket runs the same bucket on its own, RedisWindow the library's exact log form.
//
// The shared budgets (global, campaign, activity, channel) are leased: each instance takes
// tokens in batches from a Redis token bucket (lua/limiter_lease.lua) and spends them locally,
// so they cost far less than one Redis call per request. The per-IP bucket is exact, one Redis
// round trip (lua/limiter_bucket.lua). When Redis is slow (confirmed against a local control, so
// that CPU starvation of this process is not taken for a slow Redis) or failing, the Limiter degrades to
// in-process buckets (golang.org/x/time/rate) sized from the fallback budget divided by the
// number of healthy instances, and one prober, run by Run, recovers when Redis answers fast.
//
// Thresholds travel as values on every call (Request), so a configuration swap never rebuilds
// the state held in Redis; local state keyed by (dimension, name) is reused while its Limit is
// unchanged and reconfigured in place, tokens clamped and never refilled, when it changes.
//
// Leasing error. Every token is counted by the Redis bucket when it is leased, so over any run
// the admissions of all instances stay within rate*t + burst; unspent tokens go back after
// LeaseTTL, so the loss is small, and within a window w admissions stay within
// rate*(w+LeaseTTL) + burst. Measured (TestLeasingErrorOfGlobalRate, 3 Limiters x 16
// goroutines, rate 2000/s, burst 200, 2 s, one Redis on a 2-core machine): 4183 to 4198
// admitted against a ceiling of 4200 to 4206, an error of -0.1% to -0.6%; per 100 ms after the
// burst 193 to 206 against the ideal 200; about 0.0005 lease calls per request and 0.65 per
// admission at saturation (far fewer below it: 0.005 calls per request for 4 leased budgets at
// 10k requests/s under their rates, TestLeaseCostsFewRedisCalls).
package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/lua"
)

// Fallback is the policy while Redis is slow or down, as values from the configuration
// snapshot. Zero fields take the defaults of docs/API.md section 6: RedisSlow 20 ms,
// SlowCallsToDegrade 20, ProbeEvery 1 s; a ProbeEvery over MaxProbeEvery acts as
// MaxProbeEvery. A Global with Rate 0 leaves the global dimension unlimited while degraded.
type Fallback struct {
	RedisSlow          time.Duration     // a Redis call slower than this is slow
	SlowCallsToDegrade int               // net slow calls (slow minus fast, floor 0) that trigger a check (see health)
	ProbeEvery         time.Duration     // how often the single prober tries Redis while degraded
	Global             tokenbucket.Limit // the global budget of all instances together while degraded
}

func (f Fallback) withDefaults() Fallback {
	f.RedisSlow = positiveOr(f.RedisSlow, 20*time.Millisecond)
	f.SlowCallsToDegrade = positiveOr(f.SlowCallsToDegrade, 20)
	f.ProbeEvery = min(positiveOr(f.ProbeEvery, time.Second), MaxProbeEvery)
	return f
}

// MaxProbeEvery is the longest the prober waits between tries while degraded (the
// configuration refuses a longer fallback.probeEvery): one Redis blip must not leave the
// looser local limits in force for longer.
const MaxProbeEvery = time.Minute

// Request is one admission decision: the limits of every dimension, as values from one
// configuration snapshot, and the names they apply to. A dimension whose Limit has Rate 0, or
// whose name is empty (campaign, activity, channel, IP), is not limited.
type Request struct {
	Global, Campaign, Activity, Channel, IP tokenbucket.Limit

	CampaignID, ActivityID, ChannelName string
	// IPKey is the per-IP plan of the request, one value: the Redis key of the client's IP
	// token bucket (Limiter.IPKey); empty: not limited by IP. Allow takes the IP token with
	// it (unless IPInReservation), and the local memory of rejected IPs and the fallback
	// buckets are keyed by it.
	IPKey string
	// UserKey is the user's key in the local memory of rejected users: the raw user id (the
	// memory never leaves the process, so nothing is hashed for it).
	UserKey string

	// IPInReservation says the caller's reservation script takes the per-IP token itself,
	// with IPKey, in the same round trip as the reservation (single-node Redis): Allow then
	// makes no Redis call for the IP. Remembered IPs and, while degraded, the local per-IP
	// bucket still apply.
	IPInReservation bool

	Fallback Fallback

	// Version names the configuration the limits come from (config.Config.Version). The
	// local memory of refusals holds for one version only: the first request of another
	// version forgets every remembered user and IP, and a refusal decided under a version
	// other than the latest seen is not remembered, so an edit (a limit tightened by
	// mistake, then reverted) is re-evaluated at once instead of refusing until the
	// Retry-After. Empty: not versioned (the memory is kept across calls).
	Version string
}

// Dimensions named in Decision.Dimension and in the metrics.
const (
	DimGlobal   = "global"
	DimCampaign = "campaign"
	DimActivity = "activity"
	DimChannel  = "channel"
	DimIP       = "ip"
	DimUser     = "user"
	// DimNone labels, in the metrics only, a rejection no dimension made (a canceled request);
	// its Decision.Dimension is "".
	DimNone = "none"
)

// Reasons named in Decision.Reason and in the metrics.
const (
	ReasonRate       = "rate"       // the dimension's Redis bucket (or leased budget) is empty
	ReasonRemembered = "remembered" // rejected recently, answered locally until its Retry-After
	ReasonFallback   = "fallback"   // the local limiter rejected while Redis is slow or down
	ReasonCanceled   = "canceled"   // the request's context ended before a decision
	ReasonWindow     = "window"     // the user's sliding window (reservation script) is full
)

// leased dimensions, in the order they are taken.
const (
	dGlobal = iota
	dCampaign
	dActivity
	dChannel
	nLeased
)

var dimNames = [...]string{DimGlobal, DimCampaign, DimActivity, DimChannel, DimIP, DimUser, DimNone}

const (
	dIP   = 4
	dUser = 5
	dNone = 6
)

// Results of a slowness check (health.confirm), indexes of Limiter.checkC.
const (
	checkConfirmed = iota
	checkRefuted
)

var reasonNames = [...]string{ReasonRate, ReasonRemembered, ReasonFallback, ReasonCanceled, ReasonWindow}

const (
	rRate = iota
	rRemembered
	rFallback
	rCanceled
	rWindow
)

// Decision is the answer for one Request. When Allowed is false, Dimension names the dimension
// that rejected it, Reason why, and RetryAfter (at least 1 ms) when to try again, computed from
// that dimension's state. An allowed Decision remembers what it took, for Refund.
type Decision struct {
	Allowed    bool
	Dimension  string
	Reason     string
	RetryAfter time.Duration
	// Version is the Request's: pass it to Remember.
	Version string

	taken taken
}

type taken struct {
	pools   [nLeased]*pool               // leased budgets a token was taken from
	local   [nLeased]*tokenbucket.Bucket // fallback buckets a token was taken from
	ipLocal *tokenbucket.Bucket          // fallback per-IP bucket
	ipKey   string                       // Redis per-IP bucket a token was taken from
	ipLimit tokenbucket.Limit
}

// Clock tells the time; tests inject one. Nil means the system clock.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Options tune a Limiter. Zero fields take defaults.
type Options struct {
	// InstanceID names this instance in the heartbeat set sk:instances. Default: random.
	InstanceID string
	// Healthy reports how many instances are healthy, for dividing the fallback budget. It is
	// called once a second by Run and when the Limiter degrades, must be safe for concurrent
	// use, and a result below 1 is ignored. Nil: the Redis heartbeat set sk:instances is used
	// (instances seen within the last 5 s). When that count cannot be read (Redis down), the
	// last count read is kept; if none was ever read, 1 is used: each instance then allows the
	// whole fallback budget, so the cluster may admit up to (instances x budget).
	Healthy func() int
	// Clock is the time for token arithmetic and the local memory. Default: the system clock.
	// Redis latency is always measured on the system clock.
	Clock Clock
	// LeaseWindow sizes a lease: the budget's rate over this window, divided among the healthy
	// instances, at least 1 and at most the burst. Default 50 ms.
	LeaseWindow time.Duration
	// LeaseTTL is how long leased tokens may be spent; later they go back to Redis. It bounds
	// the leasing error to about rate x LeaseTTL per budget. Default 100 ms.
	LeaseTTL time.Duration
	// CallTimeout bounds each Redis call on the request path; a call that runs out counts as a
	// failure (degrade). Default 300 ms.
	CallTimeout time.Duration
	// Namespace keeps deployments (and test runs) sharing one Redis apart, the convention of
	// keyspace.Namespaced: every limiter key (budgets, IP buckets, sk:instances) gets the
	// suffix ":<Namespace>". Empty: the default deployment, the key names of docs/DESIGN.md.
	Namespace string
	// MaxKeys bounds each local map (remembered users, remembered IPs, fallback per-IP
	// buckets, budgets). Default 100000.
	MaxKeys int
}

// ErrRunning is returned by Run when the Limiter is already running.
var ErrRunning = errors.New("limiter: already running")

// Limiter decides admissions. Build it with New; run Run for heartbeats, the prober and
// housekeeping. All methods are safe for concurrent use.
type Limiter struct {
	rdb   redis.UniversalClient
	opts  Options
	clock Clock
	log   *slog.Logger

	leaseScript, bucketScript, heartbeatScript *redis.Script

	pools  [nLeased]*cowMap[*pool]
	local  [nLeased]*cowMap[*tokenbucket.Bucket]
	ipLoc  *shardMap[*tokenbucket.Bucket]
	users  memo
	ips    memo
	health health

	fb      atomic.Pointer[Fallback] // the latest policy seen on a Request (with defaults)
	version atomic.Pointer[string]   // the latest Request.Version seen, nil = none
	healthy atomic.Int64             // last known healthy instance count, 0 = never known

	// key naming (prefix is a test hook), and a script clock for tests (0 = Redis TIME)
	prefix       string
	suffix       string
	instancesKey string
	scriptNow    func() int64

	// metric children resolved once, so a decision allocates nothing for metrics
	passC        [dNone + 1]prometheus.Counter
	rejectC      [dNone + 1][len(reasonNames)]prometheus.Counter // nil: a pair outside rejectLabels
	rejectVec    *prometheus.CounterVec
	retryH       prometheus.Histogram
	degradedG    prometheus.Gauge
	healthyG     prometheus.Gauge
	slowC        prometheus.Counter
	callsLease   prometheus.Counter
	callsBucket  prometheus.Counter
	callsRefund  prometheus.Counter
	callsHB      prometheus.Counter
	callsProbe   prometheus.Counter
	callsConfirm prometheus.Counter
	checkC       [2]prometheus.Counter // checkConfirmed, checkRefuted
	toDegraded   prometheus.Counter
	toRecovered  prometheus.Counter
	leased       prometheus.Counter
	returned     prometheus.Counter

	runMu   sync.Mutex
	running bool
	cancel  context.CancelFunc
	done    chan struct{}
	wake    chan struct{} // a degrade or a suspicion of slowness wakes Run's prober
	pingers []*pinger     // the prober's own connections (see pinger); used by Run only
}

// New builds a Limiter over rdb (standalone or cluster: every script touches one key). m may be
// nil (unregistered metrics), log may be nil (slog.Default()).
func New(rdb redis.UniversalClient, opts Options, m *Metrics, log *slog.Logger) (*Limiter, error) {
	opts = limiterDefaults(opts)
	if m == nil {
		m = newMetrics()
	}
	if log == nil {
		log = slog.Default()
	}
	l := &Limiter{
		rdb:          rdb,
		opts:         opts,
		clock:        opts.Clock,
		log:          log.With("component", "limiter"),
		ipLoc:        newShardMap[*tokenbucket.Bucket](opts.MaxKeys),
		users:        newMemo(opts.MaxKeys),
		ips:          newMemo(opts.MaxKeys),
		prefix:       keyspace.Prefix,
		suffix:       keyspace.Suffix(opts.Namespace),
		instancesKey: keyspace.Namespaced(opts.Namespace, keyspace.Instances),
		wake:         make(chan struct{}, 1),
		rejectVec:    m.reject,
		retryH:       m.retryAfter,
		degradedG:    m.degraded,
		healthyG:     m.healthy,
		slowC:        m.slowCalls,
		callsLease:   m.redisCalls.WithLabelValues("lease"),
		callsBucket:  m.redisCalls.WithLabelValues("bucket"),
		callsRefund:  m.redisCalls.WithLabelValues("refund"),
		callsHB:      m.redisCalls.WithLabelValues("heartbeat"),
		callsProbe:   m.redisCalls.WithLabelValues("probe"),
		callsConfirm: m.redisCalls.WithLabelValues("confirm"),
		checkC: [2]prometheus.Counter{m.slowChecks.WithLabelValues("confirmed"),
			m.slowChecks.WithLabelValues("refuted")},
		toDegraded:  m.transitions.WithLabelValues("degraded"),
		toRecovered: m.transitions.WithLabelValues("recovered"),
		leased:      m.leaseTokens.WithLabelValues("leased"),
		returned:    m.leaseTokens.WithLabelValues("returned"),
	}
	for d := range nLeased {
		l.pools[d] = newCowMap[*pool](opts.MaxKeys)
		l.local[d] = newCowMap[*tokenbucket.Bucket](opts.MaxKeys)
	}
	for d, dn := range dimNames {
		if d != dNone {
			l.passC[d] = m.pass.WithLabelValues(dn)
		}
		for r, rn := range reasonNames {
			l.rejectC[d][r] = m.rejectCounter(dn, rn)
		}
	}
	if err := l.loadScripts(); err != nil {
		return nil, err
	}
	l.degradedG.Set(0)
	return l, nil
}

// limiterDefaults returns opts with a random instance id, the system clock and the default
// of every unset duration and count filled in; it keeps every value given.
func limiterDefaults(opts Options) Options {
	if opts.InstanceID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opts.InstanceID = "inst-" + hex.EncodeToString(b[:])
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	opts.LeaseWindow = positiveOr(opts.LeaseWindow, 50*time.Millisecond)
	opts.LeaseTTL = positiveOr(opts.LeaseTTL, 100*time.Millisecond)
	opts.CallTimeout = positiveOr(opts.CallTimeout, 300*time.Millisecond)
	opts.MaxKeys = positiveOr(opts.MaxKeys, 100_000)
	return opts
}

// positiveOr is v when it is positive, else def: the default of an unset (or meaningless,
// negative) duration or count.
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// loadScripts loads the limiter's three Lua scripts; the first that cannot be loaded fails
// it, wrapped as the limiter's.
func (l *Limiter) loadScripts() error {
	for _, x := range []struct {
		dst  **redis.Script
		name string
	}{{&l.leaseScript, "limiter_lease.lua"}, {&l.bucketScript, "limiter_bucket.lua"}, {&l.heartbeatScript, "limiter_heartbeat.lua"}} {
		s, err := lua.Load(x.name)
		if err != nil {
			return fmt.Errorf("limiter: %w", err)
		}
		*x.dst = s
	}
	return nil
}

// Allow decides r for every dimension at once, all or nothing: when one dimension rejects, the
// tokens taken from the others are given back. A user or IP rejected recently is answered
// locally, with no Redis call, until its Retry-After. While degraded (Redis slow or failing)
// the decision is local. A request whose ctx is done is rejected (Reason "canceled") and the
// context's error returned; every other outcome returns a nil error, Redis failures included
// (they degrade and the request is decided locally).
func (l *Limiter) Allow(ctx context.Context, r Request) (Decision, error) {
	d, err := l.allow(ctx, &r)
	d.Version = r.Version
	return d, err
}

func (l *Limiter) allow(ctx context.Context, r *Request) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return l.reject(dNone, rCanceled, 0), err
	}
	l.noteVersion(r.Version)
	now := l.clock.Now()
	if r.UserKey != "" {
		if u, ok := l.users.until(r.UserKey, now); ok {
			return l.reject(dUser, rRemembered, u.Sub(now)), nil
		}
	}
	if r.IPKey != "" {
		if u, ok := l.ips.until(r.IPKey, now); ok {
			return l.reject(dIP, rRemembered, u.Sub(now)), nil
		}
	}
	l.notePolicy(r.Fallback)
	if l.health.degraded.Load() {
		return l.allowLocal(now, r), nil
	}
	return l.allowRedis(ctx, now, r)
}

// noteVersion forgets the remembered refusals when v is not the latest configuration
// version seen (see Request.Version). Forgetting is always safe: Redis (or the local
// fallback bucket) decides again.
func (l *Limiter) noteVersion(v string) {
	if v == "" {
		return
	}
	if p := l.version.Load(); p != nil && *p == v {
		return
	}
	nv := new(string) // a copy only on change: storing &v would move v to the heap on every call
	*nv = v
	l.version.Store(nv)
	l.users.forget()
	l.ips.forget()
}

// currentVersion reports whether v is the latest configuration version seen ("" always is).
func (l *Limiter) currentVersion(v string) bool {
	if v == "" {
		return true
	}
	p := l.version.Load()
	return p == nil || *p == v
}

func leasedDims(r *Request) [nLeased]struct {
	name string
	lim  tokenbucket.Limit
} {
	return [nLeased]struct {
		name string
		lim  tokenbucket.Limit
	}{
		{"", r.Global},
		{r.CampaignID, r.Campaign},
		{r.ActivityID, r.Activity},
		{r.ChannelName, r.Channel},
	}
}

func (l *Limiter) allowRedis(ctx context.Context, now time.Time, r *Request) (Decision, error) {
	var t taken
	for d, x := range leasedDims(r) {
		if !x.lim.Limited() || (d != dGlobal && x.name == "") {
			continue
		}
		p := l.pool(d, x.name, now)
		ok, retry, err := p.take(ctx, l, now, x.lim)
		if err != nil {
			return l.redisFailed(ctx, &t, now, r)
		}
		if !ok {
			l.giveBack(&t, now)
			return l.reject(d, rRate, retry), nil
		}
		t.pools[d] = p
	}
	if r.IP.Limited() && r.IPKey != "" && !r.IPInReservation {
		ok, retry, err := l.bucketCall(ctx, r.IPKey, r.IP, 1)
		if err != nil {
			return l.redisFailed(ctx, &t, now, r)
		}
		if !ok {
			l.giveBack(&t, now)
			if l.currentVersion(r.Version) {
				l.ips.remember(r.IPKey, now.Add(retry), now)
			}
			return l.reject(dIP, rRate, retry), nil
		}
		t.ipKey, t.ipLimit = r.IPKey, r.IP
	}
	return l.pass(r, t), nil
}

// allowLocal decides r with in-process buckets: the fallback global budget and the campaign,
// activity, channel and IP limits, each divided by the number of healthy instances.
func (l *Limiter) allowLocal(now time.Time, r *Request) Decision {
	n := l.healthyCount()
	var t taken
	dims := leasedDims(r)
	dims[dGlobal].lim = r.Fallback.Global
	for d, x := range dims {
		if !x.lim.Limited() || (d != dGlobal && x.name == "") {
			continue
		}
		lim := x.lim.Share(n)
		b := l.local[d].getOrAdd(x.name, func() *tokenbucket.Bucket { return tokenbucket.NewBucket(lim, now) }, nil)
		b.Configure(lim, now)
		ok, retry := b.Take(now)
		if !ok {
			l.giveBack(&t, now)
			return l.reject(d, rFallback, retry)
		}
		t.local[d] = b
	}
	if r.IP.Limited() && r.IPKey != "" {
		lim := r.IP.Share(n)
		b := l.ipLoc.getOrAdd(r.IPKey, func() *tokenbucket.Bucket { return tokenbucket.NewBucket(lim, now) },
			func(b *tokenbucket.Bucket) bool { return b.IdleSince(now.Add(-time.Minute)) })
		b.Configure(lim, now)
		ok, retry := b.Take(now)
		if !ok {
			l.giveBack(&t, now)
			if l.currentVersion(r.Version) {
				l.ips.remember(r.IPKey, now.Add(retry), now)
			}
			return l.reject(dIP, rFallback, retry)
		}
		t.ipLocal = b
	}
	return l.pass(r, t)
}

func (l *Limiter) pass(r *Request, t taken) Decision {
	for d := range nLeased {
		if t.pools[d] != nil || t.local[d] != nil {
			l.passC[d].Inc()
		}
	}
	if t.ipKey != "" || t.ipLocal != nil {
		l.passC[dIP].Inc()
	}
	return Decision{Allowed: true, taken: t}
}

func (l *Limiter) reject(d, reason int, retry time.Duration) Decision {
	if reason != rCanceled && retry < time.Millisecond {
		retry = time.Millisecond
	}
	l.countReject(d, reason, retry)
	dim := ""
	if d != dNone {
		dim = dimNames[d]
	}
	return Decision{Dimension: dim, Reason: reasonNames[reason], RetryAfter: retry}
}

// redisFailed answers a request whose Redis call failed: the tokens taken so far go back
// and the request is decided locally, or rejected as canceled when ctx is done.
func (l *Limiter) redisFailed(ctx context.Context, t *taken, now time.Time, r *Request) (Decision, error) {
	l.giveBack(t, now)
	if ctx.Err() != nil {
		return l.reject(dNone, rCanceled, 0), ctx.Err()
	}
	return l.allowLocal(now, r), nil
}

// giveBack returns the local tokens of t (leased and fallback buckets); no Redis call.
func (l *Limiter) giveBack(t *taken, now time.Time) {
	for d := range nLeased {
		if p := t.pools[d]; p != nil {
			p.give()
		}
		if b := t.local[d]; b != nil {
			b.Give(now)
		}
	}
	if t.ipLocal != nil {
		t.ipLocal.Give(now)
	}
}

// Refund gives back what an allowed Decision took, for a request that a later layer rejected
// (the reservation script's per-user bucket or window, sold out). Budget tokens go back to the
// local lease; the per-IP token costs one Redis call (bounded by the call timeout; a failure is
// only observed for the health tracking; skipped while degraded). A rejected or zero Decision
// refunds nothing. Refund a Decision once.
func (l *Limiter) Refund(d Decision) {
	if !d.Allowed {
		return
	}
	now := l.clock.Now()
	l.giveBack(&d.taken, now)
	// While degraded the IP token stays spent: one token is cheaper than a call to a slow Redis.
	if d.taken.ipKey != "" && !l.Degraded() {
		_, _, _ = l.bucketCall(context.Background(), d.taken.ipKey, d.taken.ipLimit, -1)
	}
}

// Remember answers the user (by the key of Request.UserKey) and the IP (by Request.IPKey)
// locally with 429 until retryAfter from now, with no Redis call: the app calls it when the
// reservation script rejected the user or the IP for rate.
// Empty keys are skipped; a non-positive retryAfter remembers nothing; a longer deadline already
// remembered is kept. The user memory is per user across activities. version is the
// configuration the refusal was decided under (Decision.Version): a refusal of an older
// configuration than the latest seen is not remembered.
func (l *Limiter) Remember(version, userKey, ipKey string, retryAfter time.Duration) {
	if retryAfter <= 0 || !l.currentVersion(version) {
		return
	}
	now := l.clock.Now()
	until := now.Add(retryAfter)
	if userKey != "" {
		l.users.remember(userKey, until, now)
	}
	if ipKey != "" {
		l.ips.remember(ipKey, until, now)
	}
}

// Degraded reports whether the Limiter currently decides locally because Redis is slow or down.
func (l *Limiter) Degraded() bool { return l.health.degraded.Load() }

// SetFallback hands the limiter the fallback policy of a configuration just applied, so a
// running prober takes a new probeEvery at once, without waiting for the next request (with
// no traffic while degraded, none would come).
func (l *Limiter) SetFallback(f Fallback) { l.notePolicy(f) }

// notePolicy keeps the latest fallback policy for ObserveRedis and the prober; it allocates
// only when the policy changed.
func (l *Limiter) notePolicy(f Fallback) {
	f = f.withDefaults()
	if p := l.fb.Load(); p != nil && *p == f {
		return
	}
	nf := new(Fallback) // a fresh copy only on change: storing &f would move f to the heap
	*nf = f
	l.fb.Store(nf)
	l.wakeRun() // a running prober re-arms with the new period
}

func (l *Limiter) policy() Fallback {
	if p := l.fb.Load(); p != nil {
		return *p
	}
	return Fallback{}.withDefaults()
}

// healthyCount is the last known number of healthy instances, at least 1.
func (l *Limiter) healthyCount() int {
	if n := l.healthy.Load(); n > 0 {
		return int(n)
	}
	return 1
}

// IPKey is the Redis key of the per-IP token bucket of addr, "" for an invalid address: the
// one value of a request's per-IP plan (Request.IPKey; the reservation script takes the
// token with it when it takes it, see Request.IPInReservation). The bucket is the client's
// limit key's (AppendLimitKey) under FNV-1a. It allocates the key only.
func (l *Limiter) IPKey(addr netip.Addr, ipv6Prefix int) string {
	if !addr.IsValid() {
		return ""
	}
	var b [64]byte
	return l.ipKey(AppendLimitKey(b[:0], addr, ipv6Prefix))
}

func (l *Limiter) ipKey(limitKey []byte) string {
	h := uint64(fnvOffset64)
	for _, c := range limitKey { // hash/fnv's New64a, without its interface
		h ^= uint64(c)
		h *= fnvPrime64
	}
	var buf [16]byte
	s := strconv.AppendUint(buf[:0], h, 16)
	return l.prefix + "{ip:" + string(s) + "}:tk" + l.suffix
}

// FNV-1a, 64 bits (hash/fnv).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// AppendLimitKey appends to dst the per-IP limit key of addr, a valid address: the address
// itself for IPv4, its prefix of prefixLen bits for IPv6 (one subscriber usually holds a
// whole /64), without a zone.
func AppendLimitKey(dst []byte, addr netip.Addr, prefixLen int) []byte {
	addr = addr.WithZone("")
	if addr.Is4() || prefixLen <= 0 || prefixLen >= 128 {
		return addr.AppendTo(dst)
	}
	p, err := addr.Prefix(prefixLen)
	if err != nil {
		return addr.AppendTo(dst)
	}
	dst = append(p.Addr().AppendTo(dst), '/')
	return strconv.AppendInt(dst, int64(prefixLen), 10)
}

func (l *Limiter) budgetKey(d int, name string) string {
	if d == dGlobal {
		return l.prefix + "{budget:global}:tk" + l.suffix
	}
	return l.prefix + "{budget:" + dimNames[d] + ":" + name + "}:tk" + l.suffix
}

func (l *Limiter) nowArg() int64 {
	if l.scriptNow != nil {
		return l.scriptNow()
	}
	return 0
}

// bucketCall runs the exact bucket script: n > 0 takes, n < 0 gives back.
func (l *Limiter) bucketCall(ctx context.Context, key string, lim tokenbucket.Limit, n int) (bool, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.CallTimeout)
	defer cancel()
	if n < 0 {
		l.callsRefund.Inc()
	} else {
		l.callsBucket.Inc()
	}
	start := time.Now()
	res, err := l.bucketScript.Run(ctx, l.rdb, []string{key}, lim.Rate, lim.Capacity(), n, l.nowArg()).Int64Slice()
	l.observe(time.Since(start), err)
	if err != nil {
		return false, 0, err
	}
	return decode(res)
}

// ErrBadReply is returned when a script answers something it is documented never to answer.
var ErrBadReply = errors.New("limiter: unexpected script reply")

// code is the first element of a bucket or window script's reply.
type code int

const (
	codeUnknown  code = iota // never sent: a zero value is an error
	codeAllowed              // 1: taken (or given back)
	codeRejected             // 2: rejected, the second element is the retry-after in ms
)

func decode(res []int64) (bool, time.Duration, error) {
	if len(res) != 2 {
		return false, 0, ErrBadReply
	}
	switch code(res[0]) {
	case codeAllowed:
		return true, 0, nil
	case codeRejected:
		return false, time.Duration(res[1]) * time.Millisecond, nil
	default:
		return false, 0, fmt.Errorf("%w: code %d", ErrBadReply, res[0])
	}
}
