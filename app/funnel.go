package app

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/prom"
	"github.com/seckill/seckill/inventory"
)

// funnelBuckets are the upper bounds, in seconds, of the funnel's latency buckets (the last
// is +Inf): the report's p50 and p99 are the bound of the bucket they fall in.
var funnelBuckets = [...]float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}

const (
	nFunnelBuckets = len(funnelBuckets) + 1
	// funnelFlushEvery is how often the counts of an instance are added to Redis: the
	// report lags the answers by at most this.
	funnelFlushEvery = 250 * time.Millisecond
)

// funnelMetrics are the sale funnel's Prometheus series, by activity (and campaign) and
// outcome: closed sets, never a user.
type funnelMetrics struct {
	attempts    *prometheus.CounterVec // activity
	answers     *prometheus.CounterVec // activity, outcome
	units       *prometheus.CounterVec // activity: units reserved
	users       *prometheus.GaugeVec   // activity, stage: distinct users estimated in Redis
	campAttempt *prometheus.CounterVec // campaign
	campAnswers *prometheus.CounterVec // campaign, outcome
	flushErrors prometheus.Counter
}

func newFunnelMetrics(reg prometheus.Registerer) *funnelMetrics {
	m := &funnelMetrics{
		attempts: prom.CounterVec("seckill_funnel_attempts_total",
			"Reservation requests that reached the admission step (activity known, request well formed), by activity.", "activity"),
		answers: prom.CounterVec("seckill_funnel_answers_total",
			"Answers to reservation attempts by activity and outcome: accepted, replayed, the refusing layer "+
				"(killswitch, not_open, closed, blacklist, canary, rate_<dimension>, remembered, token, user_limit, sold_out) "+
				"or a fault (unavailable, outcome_unknown). Their sum is seckill_funnel_attempts_total.", "activity", "outcome"),
		units: prom.CounterVec("seckill_funnel_reserved_units_total",
			"Units of the accepted reservations, by activity.", "activity"),
		users: prom.GaugeVec("seckill_funnel_distinct_users",
			"Distinct users of the activity over every instance, by stage (tried, bought): a HyperLogLog estimate "+
				"in Redis (standard error 0.81%), the same on every instance (aggregate with max, not sum).", "activity", "stage"),
		campAttempt: prom.CounterVec("seckill_campaign_attempts_total",
			"Reservation attempts of the campaign's activities, by campaign.", "campaign"),
		campAnswers: prom.CounterVec("seckill_campaign_answers_total",
			"Answers to the attempts of the campaign's activities, by campaign and outcome (as seckill_funnel_answers_total): "+
				"accepted is what the campaign's budget admitted and sold, rate_campaign its budget's refusals, rate_user and user_limit the per-user ones.", "campaign", "outcome"),
		flushErrors: prom.Counter("seckill_funnel_flush_errors_total",
			"Flushes of the funnel counts to Redis that failed (the counts of a flush that may have been applied are not retried)."),
	}
	reg.MustRegister(m.attempts, m.answers, m.units, m.users, m.campAttempt, m.campAnswers, m.flushErrors)
	return m
}

// funnel counts every reservation attempt of this instance by activity and outcome, in
// Prometheus at once and in Redis (the activity's funnel hash, summed over instances, which
// the report reads) every funnelFlushEvery. Safe for concurrent use; Run flushes.
type funnel struct {
	rdb redis.UniversalClient
	// hash is the 64-bit hash a user id adds to the distinct-user sketches (userHash64):
	// only registers reach Redis, never an id.
	hash func(user string) uint64
	// local keeps the distinct-user estimates in this process only (embedded mode: one
	// process, and an in-process Redis without Redis's HyperLogLog encoding).
	local bool
	m     *funnelMetrics
	log   *slog.Logger
	now   func() time.Time

	mu   sync.RWMutex
	acts map[string]*actFunnel
	// campaigns counts the cached activities of each campaign, so a campaign's series go
	// with its last activity.
	campaigns map[string]int
}

func newFunnel(rdb redis.UniversalClient, hash func(string) uint64, m *funnelMetrics, log *slog.Logger, now func() time.Time) *funnel {
	return &funnel{rdb: rdb, hash: hash, m: m, log: log, now: now, acts: map[string]*actFunnel{}, campaigns: map[string]int{}}
}

// actFunnel is the funnel of one activity in this instance: Prometheus children resolved
// once, and the deltas not yet flushed to Redis.
type actFunnel struct {
	id       string
	campaign string
	// opens and closes bound the seconds counted by second (funnelBySecondFor), unix s; closes
	// 0 when the activity has none.
	opens, closes int64
	// expiredAt is when, unix s, the flush last set the keys' expiry (once a minute).
	expiredAt atomic.Int64
	attempts  prometheus.Counter
	answers   [nOutcomes]prometheus.Counter
	units     prometheus.Counter
	// camp* are nil for an activity without a campaign.
	campAttempts prometheus.Counter
	campAnswers  [nOutcomes]prometheus.Counter

	dAttempts atomic.Int64
	dAnswers  [nOutcomes]atomic.Int64
	dUnits    atomic.Int64
	// dLatency counts answers by latency bucket: [0] accepted, [1] refused.
	dLatency [2][nFunnelBuckets]atomic.Int64

	mu sync.Mutex
	// tried and bought are the distinct-user sketches of this instance (funnel_hll.go),
	// cumulative: each flush merges them into the activity's HyperLogLogs in Redis.
	tried, bought hllSketch
	first         int64 // unix ms of the first accepted reservation since the last flush, 0 none
	last          int64
}

// activity returns the funnel of v, creating it (and its series at 0) on first use.
func (f *funnel) activity(v *inventory.ActivityView) *actFunnel {
	f.mu.RLock()
	af := f.acts[v.ID]
	f.mu.RUnlock()
	if af != nil {
		return af
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if af = f.acts[v.ID]; af != nil {
		return af
	}
	af = &actFunnel{id: v.ID, campaign: v.CampaignID, opens: v.OpensAt.Unix(), closes: unixSec(v.ClosesAt), attempts: f.m.attempts.WithLabelValues(v.ID), units: f.m.units.WithLabelValues(v.ID)}
	for o := oAccepted; o < nOutcomes; o++ {
		af.answers[o] = f.m.answers.WithLabelValues(v.ID, o.funnelName())
	}
	if c := v.CampaignID; c != "" {
		f.campaigns[c]++
		af.campAttempts = f.m.campAttempt.WithLabelValues(c)
		for o := oAccepted; o < nOutcomes; o++ {
			af.campAnswers[o] = f.m.campAnswers.WithLabelValues(c, o.funnelName())
		}
	}
	f.m.users.WithLabelValues(v.ID, "tried")
	f.m.users.WithLabelValues(v.ID, "bought")
	f.acts[v.ID] = af
	return af
}

// forget deletes the series of an activity that went away (inventory.Options.Gone), and its
// campaign's with its campaign's last activity.
func (f *funnel) forget(id string) {
	f.mu.Lock()
	af := f.acts[id]
	delete(f.acts, id)
	campaign, last := "", false
	if af != nil && af.campaign != "" {
		campaign = af.campaign
		f.campaigns[campaign]--
		if last = f.campaigns[campaign] <= 0; last {
			delete(f.campaigns, campaign)
		}
	}
	f.mu.Unlock()
	f.m.attempts.DeleteLabelValues(id)
	f.m.units.DeleteLabelValues(id)
	f.m.answers.DeletePartialMatch(prometheus.Labels{"activity": id})
	f.m.users.DeletePartialMatch(prometheus.Labels{"activity": id})
	if last {
		f.m.campAttempt.DeleteLabelValues(campaign)
		f.m.campAnswers.DeletePartialMatch(prometheus.Labels{"campaign": campaign})
	}
}

// attempt counts one attempt of user.
func (af *actFunnel) attempt(f *funnel, user string) {
	af.attempts.Inc()
	af.dAttempts.Add(1)
	if af.campAttempts != nil {
		af.campAttempts.Inc()
	}
	h := f.hash(user)
	af.mu.Lock()
	af.tried.add(h)
	af.mu.Unlock()
}

// answer counts the answer o to an attempt of user (units reserved when accepted) given after
// d.
func (af *actFunnel) answer(f *funnel, o outcome, user string, units int, d time.Duration) {
	if o == oNone || o >= nOutcomes {
		return
	}
	af.answers[o].Inc()
	af.dAnswers[o].Add(1)
	if af.campAnswers[o] != nil {
		af.campAnswers[o].Inc()
	}
	if o == oAccepted || o.refused() {
		i := 0
		if o != oAccepted {
			i = 1
		}
		af.dLatency[i][funnelBucket(d.Seconds())].Add(1)
	}
	if o != oAccepted {
		return
	}
	af.units.Add(float64(units))
	af.dUnits.Add(int64(units))
	ms := f.now().UnixMilli()
	af.mu.Lock()
	if af.first == 0 || ms < af.first {
		af.first = ms
	}
	if ms > af.last {
		af.last = ms
	}
	af.bought.add(f.hash(user))
	af.mu.Unlock()
}

// funnelBucket is the index of the latency bucket of s seconds.
func funnelBucket(s float64) int {
	for i, b := range funnelBuckets {
		if s <= b {
			return i
		}
	}
	return len(funnelBuckets)
}

// Run flushes the counts to Redis every funnelFlushEvery until ctx is done, then once more
// (the server has drained by then: the last answers are counted).
func (f *funnel) Run(ctx context.Context) error {
	t := time.NewTicker(funnelFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			f.flush(fctx)
			cancel()
			return nil
		case <-t.C:
			f.flush(ctx)
		}
	}
}

// flush adds every activity's deltas to Redis, one MULTI per activity (its keys share the
// activity's hash tag), and refreshes the distinct-user gauges.
func (f *funnel) flush(ctx context.Context) {
	f.mu.RLock()
	acts := make([]*actFunnel, 0, len(f.acts))
	for _, af := range f.acts {
		acts = append(acts, af)
	}
	f.mu.RUnlock()
	for _, af := range acts {
		if err := f.flushActivity(ctx, af); err != nil && ctx.Err() == nil {
			f.m.flushErrors.Inc()
			f.log.Debug("funnel flush failed", "activity", af.id, "err", err)
		}
	}
}

func (f *funnel) flushActivity(ctx context.Context, af *actFunnel) error {
	now := f.now()
	fields := af.takeCounts(now)
	// The sets are taken only when not empty (an empty one stays the activity's, and is not
	// read again here: attempts may add to it as soon as the lock is released).
	tried, bought, first, last := f.takeSketches(af)
	// Once a minute an activity whose sketches were merged into Redis checks Redis still has
	// them, even with nothing new to send (below).
	tick := now.Unix()-af.expiredAt.Load() >= 60
	idle := len(fields) == 0 && tried == nil && bought == nil
	if idle && (!tick || f.local || !af.counts()) {
		return nil
	}
	pipe := f.rdb.TxPipeline()
	key := inventory.Funnel(af.id)
	for i := 0; i < len(fields); i += 2 {
		pipe.HIncrBy(ctx, key, fields[i].(string), fields[i+1].(int64))
	}
	if first != 0 {
		tk := inventory.FunnelTimes(af.id)
		pipe.ZAddArgs(ctx, tk, redis.ZAddArgs{LT: true, Members: []redis.Z{{Score: float64(first), Member: "first"}}})
		pipe.ZAddArgs(ctx, tk, redis.ZAddArgs{GT: true, Members: []redis.Z{{Score: float64(last), Member: "last"}}})
	}
	triedKey, boughtKey := inventory.FunnelUsers(af.id, "tried"), inventory.FunnelUsers(af.id, "bought")
	// The funnel's keys end funnelKeep after the close, or after the last count without one:
	// long enough for the archive, which keeps the report in MySQL and deletes them, to be run
	// after a weekend or a holiday. Set at most once a minute per activity, not on every flush
	// (a key first written in between, such as the times of the first sale, gets it at the
	// next flush a minute on; one with no flush after stays until the archive deletes it).
	var expire []string
	if tick {
		af.expiredAt.Store(now.Unix())
		if !idle {
			expire = []string{key, inventory.FunnelTimes(af.id), triedKey, boughtKey}
		}
	}
	exp := now.Add(funnelKeep)
	if af.closes > 0 {
		exp = time.Unix(af.closes, 0).Add(funnelKeep)
	}

	for _, m := range []struct {
		key    string
		sketch []byte
	}{{triedKey, tried}, {boughtKey, bought}} {
		if m.sketch != nil {
			// In the transaction: the sketch's key never outlives the merge.
			tmp := m.key + ":merge"
			pipe.Set(ctx, tmp, m.sketch, 0)
			pipe.PFMerge(ctx, m.key, m.key, tmp)
			pipe.Del(ctx, tmp)
		}
	}
	for _, k := range expire {
		pipe.ExpireAt(ctx, k, exp)
	}
	if f.local {
		_, err := pipe.Exec(ctx)
		return err
	}
	nTried := pipe.PFCount(ctx, triedKey)
	nBought := pipe.PFCount(ctx, boughtKey)
	if _, err := pipe.Exec(ctx); err != nil {
		// The sketches are cumulative: the next flush merges them again.
		af.mu.Lock()
		af.tried.dirty = af.tried.dirty || tried != nil
		af.bought.dirty = af.bought.dirty || bought != nil
		af.mu.Unlock()
		return err
	}
	// A sketch merged into Redis before (or just now) and Redis counts no one: Redis lost the
	// key (restarted with less). The sketches are cumulative: the next flush sends them whole
	// again, and sets the keys' expiry (a tick), so the distinct users are not lost with it.
	af.mu.Lock()
	af.tried.merged = af.tried.merged || tried != nil
	af.bought.merged = af.bought.merged || bought != nil
	lostT, lostB := nTried.Val() == 0 && af.tried.merged, nBought.Val() == 0 && af.bought.merged
	af.tried.dirty = af.tried.dirty || lostT
	af.bought.dirty = af.bought.dirty || lostB
	af.mu.Unlock()
	if lostT || lostB {
		af.expiredAt.Store(0)
		f.log.Warn("the funnel's distinct users were gone from Redis: sending them again", "activity", af.id)
		return nil // the gauges keep their last values until then
	}
	f.m.users.WithLabelValues(af.id, "tried").Set(float64(nTried.Val()))
	f.m.users.WithLabelValues(af.id, "bought").Set(float64(nBought.Val()))
	return nil
}

// counts reports whether either of the activity's sketches was merged into Redis.
func (af *actFunnel) counts() bool {
	af.mu.Lock()
	defer af.mu.Unlock()
	return af.tried.merged || af.bought.merged
}

// takeCounts swaps the activity's counters since the last flush to zero and returns the
// non-zero ones as hash field, increment pairs (per-second fields when af counts seconds now).
func (af *actFunnel) takeCounts(now time.Time) []any {
	bySecond := af.bySecond(now.Unix())
	sec := strconv.FormatInt(now.Unix(), 10)
	var fields []any
	add := func(name string, n int64) {
		if n != 0 {
			fields = append(fields, name, n)
		}
	}
	attempts := af.dAttempts.Swap(0)
	add("attempts", attempts)
	if bySecond {
		add("s:a:"+sec, attempts)
	}
	for o := oAccepted; o < nOutcomes; o++ {
		add("o:"+o.funnelName(), af.dAnswers[o].Swap(0))
	}
	if accepted := fieldValue(fields, "o:accepted"); bySecond {
		add("s:r:"+sec, accepted)
	}
	add("units", af.dUnits.Swap(0))
	for i, kind := range [2]string{"lat:a:", "lat:r:"} {
		for b := range af.dLatency[i] {
			add(kind+strconv.Itoa(b), af.dLatency[i][b].Swap(0))
		}
	}
	return fields
}

// takeSketches, under af.mu, takes the first and last acceptance times since the last flush
// (resetting them) and the dirty distinct-user sketches to merge into Redis; on a local
// funnel it sets the distinct-user gauges instead and returns no sketch.
func (f *funnel) takeSketches(af *actFunnel) (tried, bought []byte, first, last int64) {
	af.mu.Lock()
	first, last = af.first, af.last
	if f.local {
		if af.tried.dirty || af.bought.dirty {
			f.m.users.WithLabelValues(af.id, "tried").Set(float64(af.tried.count()))
			f.m.users.WithLabelValues(af.id, "bought").Set(float64(af.bought.count()))
			af.tried.dirty, af.bought.dirty = false, false
		}
	} else {
		if af.tried.dirty {
			tried = af.tried.dense(nil)
		}
		if af.bought.dirty {
			bought = af.bought.dense(nil)
		}
	}
	af.first, af.last = 0, 0
	af.mu.Unlock()
	return tried, bought, first, last
}

// funnelBySecondFor is how long after its opening an activity's attempts and acceptances are
// counted by second (the report's peakSecond); a minute before the opening is counted too.
// Past it, or past the close, only the totals grow: the funnel hash stays bounded (about
// 7,300 fields by second) however long the activity lives and is asked.
const funnelBySecondFor = time.Hour

// funnelKeep is how long an activity's funnel keys outlive its close (or its last count).
const funnelKeep = 30 * 24 * time.Hour

// bySecond reports whether the counts of the second sec are kept by second.
func (af *actFunnel) bySecond(sec int64) bool {
	if af.closes > 0 && sec >= af.closes {
		return false
	}
	return sec >= af.opens-60 && sec < af.opens+int64(funnelBySecondFor/time.Second)
}

// unixSec is t in unix seconds, 0 for the zero time.
func unixSec(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// localDistinct is the estimate of the distinct users who tried and who bought id, from
// this process's sketches; ok is false unless the estimates are kept locally (f.local).
func (f *funnel) localDistinct(id string) (tried, bought uint64, ok bool) {
	if !f.local {
		return 0, 0, false
	}
	f.mu.RLock()
	af := f.acts[id]
	f.mu.RUnlock()
	if af == nil {
		return 0, 0, true
	}
	af.mu.Lock()
	defer af.mu.Unlock()
	return af.tried.count(), af.bought.count(), true
}

// fieldValue is the value following name in a flat name, value list, 0 when absent.
func fieldValue(fields []any, name string) int64 {
	for i := 0; i < len(fields); i += 2 {
		if fields[i] == name {
			return fields[i+1].(int64)
		}
	}
	return 0
}
