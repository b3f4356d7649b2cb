package inventory

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/logrepeat"
	"github.com/seckill/seckill/internal/lru"
	"github.com/seckill/seckill/lua"
)

// Errors of the store. Decisions a caller maps to an HTTP answer are these sentinels; any
// other error is a Redis failure (fail closed).
var (
	// ErrNotFound: unknown activity, or a malformed or unknown reservation id.
	ErrNotFound = errors.New("inventory: not found")
	// ErrConflict: an activity with the same id and a different definition exists.
	ErrConflict = errors.New("inventory: activity exists with a different definition")
	// ErrInvalid: a request or definition outside its allowed range.
	ErrInvalid = errors.New("inventory: invalid")
	// ErrBusy: the activity is being resharded or a request with the same idempotency key
	// is still in progress; retry shortly (503 with Retry-After).
	ErrBusy = errors.New("inventory: busy, retry shortly")
)

// Activity is an activity's definition. Zero OpensAt or ClosesAt means none.
type Activity struct {
	ID           string
	CampaignID   string
	Stock        int64
	PerUserLimit int
	OpensAt      time.Time
	ClosesAt     time.Time
	// Shards is the number of stock shards: the creation count in Create, the current
	// count in an ActivityView.
	Shards       int
	RequireToken bool
	// Generation identifies the activity's Redis state (generation.go): minted by Create when
	// empty, kept in meta and in the MySQL row. It is not part of the definition.
	Generation string
	// EndedAt is when an operator ended the sale (End; zero: not ended). It is not part of
	// the definition either: a view's ClosesAt is the earlier of the two.
	EndedAt time.Time
}

// ActivityView is what the local cache knows of an activity. Remaining lags the truth by
// at most Options.RefreshEvery and is never negative.
type ActivityView struct {
	Activity
	Remaining int64
	SoldOut   bool
	Epoch     int
	// Recovering is set while Redis lost the activity's state (generation.go): reservations
	// are refused with ErrRecovering until a restore; RecoveringReason says what was lost.
	Recovering       bool
	RecoveringReason string
}

// Options tune a Store. Zero values take the defaults.
type Options struct {
	InstanceID     string        // default: random
	MaxOtherShards int           // other shards a refill of the home shard tries; default 3, <0 none
	RefreshEvery   time.Duration // remaining/sold-out/layout refresh period; default 250ms
	// ReshardWorkers is how many steps of a reshard run at once (default 16; 1 makes a
	// reshard's Redis calls happen in a fixed order, as the simulation tests need).
	ReshardWorkers int
	// ReshardRunLimit bounds how long one run of a reshard may act: its drains of the old
	// shards and its steps on the new ones are refused once the run is older (the run starts
	// over from meta). Default 2 min.
	ReshardRunLimit time.Duration
	// RetireAfter is how long a layout stays after it stopped being current before it may
	// be deleted (retire.go); it must exceed ReshardRunLimit (at least by a second, for the
	// clocks of a cluster's nodes). Default 5 min.
	RetireAfter time.Duration
	// Namespace separates the instance-wide keys (journal and activity lists, events) of
	// deployments sharing one Redis; see Namespaced. Default "".
	Namespace string
	// UserHashKey keys the user hash (see Hasher), at least MinUserHashKey bytes, the same on
	// every instance of a deployment. Empty: New reads it from Redis (LoadUserHashKey).
	UserHashKey []byte
	// Durability is what a write of stock or user state must reach before it counts as
	// done (the zero value: mode none). Its Replicas make every script of the Store and its
	// Mover wait for that many replicas (see Durability.Acked).
	Durability Durability
	// Catalog lists the activities MySQL knows (generation.go); nil: a loss of Redis state is
	// not detected (tests of the inventory alone).
	Catalog Catalog
	// ReserveBatch bounds the reservations of one queue sent in one script call (batch.go:
	// those of a layout, on a cluster of a layout shard, that arrive while the queue's
	// previous call is in flight). Default DefaultReserveBatch; 1 sends each alone.
	ReserveBatch int
	// Gone, when set, is told of each cached activity whose metadata a refresh no longer
	// finds in Redis (the activity was deleted): the store has dropped it and its series.
	Gone func(activity string)
	// Loaded, when set, is told of each activity this store starts caching from Redis (a
	// create, the first refresh after a start, a lookup), once per entry, outside any lock:
	// the app creates the activity's funnel series at 0 then, before its first request.
	Loaded func(v ActivityView)
}

const (
	// negativeTTL is how long an activity id Redis did not know is answered unknown without
	// asking again; well under the 1 s in which a new activity must be visible everywhere.
	negativeTTL = 500 * time.Millisecond
	// maxNegative bounds the remembered unknown ids; the least recently used is forgotten first.
	maxNegative     = 10000
	userHashKeyWait = 5 * time.Second
)

// Store is the inventory of every activity. Safe for concurrent use; Run keeps its cache
// fresh.
type Store struct {
	reports    sync.WaitGroup // the reports setRecovering started (tests wait for them)
	rdb        redis.UniversalClient
	queueCalls int // the calls of one reservation queue in flight at most (batch.go B2)
	opts       Options
	m          *Metrics
	log        *slog.Logger
	rl         *logrepeat.Log // the background passes' failures: one line per kind per 10 s

	reserve, create, load, drain, credit, copy, reshard, token, restore, retire *script
	reserveBatch, end, issued                                                   *script
	mover                                                                       *Mover
	// unlock is inventory_restore_unlock.lua (Unlock), run as the plain EVALSHA it always was:
	// no call metrics, no wait for replicas.
	unlock *lua.Script
	// fence is inventory_fence_meta.lua (writeFence).
	fence *lua.Script
	// issuer and calls make the last part of every reservation id this Store hands out:
	// its mover's incarnation (drawn at start) and '-', boxed once, and the number of the
	// script call (keys.go ReservationID).
	issuer any
	calls  atomic.Int64

	mu   sync.RWMutex
	acts map[string]*entry

	neg *lru.Cache[struct{}] // unknown activity ids, each until negativeTTL after Redis said so

	nonce atomic.Uint64

	// attemptBase and attempts number the reservation attempts of requests without an
	// idempotency key (attemptField): a random start per Store, then one per attempt.
	attemptBase uint64
	attempts    atomic.Uint64

	slotRetries atomic.Int64 // reservations sent a second time while their slot migrated

	// collected: retired layouts ("<id>/<epoch>") whose keys this process deleted once;
	// settledTo: per journal key, the records up to which none is PENDING (retire.go).
	collectMu sync.Mutex
	collected map[string]bool
	settledTo map[string]int64

	sweepMu sync.Mutex
	swept   map[string]time.Time // activity id -> last sweep of its credit records (Recover)

	hasher  *Hasher
	hashKey string // the user-hash key in hex (Rebuild writes it back to a Redis that lost it)

	// The last activity catalog read (generation.go), when, and whether reading it fails.
	catalog        atomic.Pointer[map[string]Activity]
	catalogAt      atomic.Value // time.Time
	catalogChecked atomic.Int64 // unix ns of the catalogAt whose ids a refresh last read
	catalogMu      sync.Mutex   // guards catalogMiss; serializes catalogOne's reads
	catalogMiss    map[string]catalogMiss
	catalogFailing atomic.Bool
}

// script is a Lua script with its metrics.
type script struct {
	name  string
	s     *lua.Script
	hash  any // s.Hash() boxed once (reserveCallFor)
	calls prometheus.Counter
	secs  prometheus.Observer
}

// entry is one cached activity. def never changes; the rest is updated atomically.
type entry struct {
	def       Activity
	layout    atomic.Pointer[layout]
	remaining atomic.Int64
	soldOut   atomic.Bool
	soldOutAt atomic.Int64 // unix ns of the last sold-out mark
	// resharding is true while meta records a reshard in progress.
	resharding atomic.Bool
	issued     prometheus.Counter
	gauge      prometheus.Gauge
	// ended is meta's "ended", unix ms (0: the sale was not ended; End).
	ended atomic.Int64
	// archiveChecked is when, unix ns, a recovering entry last asked MySQL whether it was
	// archived (generation.go recheckDue).
	archiveChecked atomic.Int64
	// The reservation script's arguments boxed once (reserve_args.go): the activity's, and
	// the last per-user and per-IP limits seen.
	reserveArgs atomic.Pointer[entryArgs]
	userLimits  atomic.Pointer[userLimitArgs]
	ipLimits    atomic.Pointer[ipLimitArgs]
	// transit is the xout key of every shard of every layout the activity had (meta
	// layouts): units in transit from any of them are still for sale (the sold-out mark).
	transit atomic.Pointer[transitKeys]
	// gen is meta's generation as last applied; recovering is set while Redis lost the
	// activity's state (generation.go).
	gen        atomic.Pointer[string]
	recovering atomic.Pointer[recovering]
	// metaGenSeen is the last meta generation checkLost saw while recovering.
	metaGenSeen atomic.Pointer[string]
	// past are the layouts this entry used before the current one (their issued marks).
	pastMu sync.Mutex
	past   []*layout
	// answered: the highest number per (epoch, shard) this instance answered as a replay on a
	// layout it does not hold (one a reshard replaced before it started): noteReplayed.
	answeredMu sync.Mutex
	answered   map[[2]int]int64
}

// transitKeys are the xout keys of the shards of the layouts named by spec.
type transitKeys struct {
	spec string
	keys []string
}

// setTransit records the xout keys of every layout named by spec (meta layouts), once per
// spec. An empty or unreadable spec leaves the current layout's keys in use (xoutKeys).
func (e *entry) setTransit(id, spec string) {
	if spec == "" {
		return
	}
	if t := e.transit.Load(); t != nil && t.spec == spec {
		return
	}
	lays, err := parseLayouts(id, spec)
	if err != nil {
		return
	}
	t := &transitKeys{spec: spec}
	for _, l := range lays {
		for i := 0; i < l.Shards; i++ {
			t.keys = append(t.keys, Shard(id, l.Epoch, i).XOut())
		}
	}
	e.transit.Store(t)
}

// xoutKeys returns the xout keys to read for units in transit: those of every layout the
// activity had when meta named them, else those of l.
func (e *entry) xoutKeys(l *layout) []string {
	if t := e.transit.Load(); t != nil {
		return t.keys
	}
	keys := make([]string, len(l.keys))
	for i, k := range l.keys {
		keys[i] = k.XOut()
	}
	return keys
}

// layout is one epoch's shard set with the shards believed to have stock.
type layout struct {
	epoch, shards int
	keys          []ShardKeys
	empty         []atomic.Bool
	inbound       []atomic.Int64           // per shard: units this instance debited to refill it, not credited yet
	args          []shardArgs              // per shard: the reservation script's keys and shard arguments, boxed
	issued        []atomic.Int64           // per shard: the highest reservation number this instance handed out (rollback.go)
	marks         []atomic.Pointer[string] // per shard: the generation mark this instance last saw raised or met there (rollback.go); nil: the entry's generation
	batchers      []batcher                // the reservations waiting for their queue's call in flight: [0] on a single node, one per shard on a cluster (batch.go)
}

func newLayout(id string, epoch, shards int) *layout {
	l := &layout{epoch: epoch, shards: shards, keys: make([]ShardKeys, shards), empty: make([]atomic.Bool, shards),
		inbound: make([]atomic.Int64, shards), issued: make([]atomic.Int64, shards),
		marks:    make([]atomic.Pointer[string], shards),
		batchers: make([]batcher, shards)}
	for i := range l.keys {
		l.keys[i] = Shard(id, epoch, i)
	}
	l.args = newShardArgs(l.keys, epoch)
	return l
}

// New builds a Store on rdb (standalone, cluster or miniredis). m may be nil. Without
// Options.UserHashKey it reads the deployment's key from Redis (creating it on first use),
// waiting at most userHashKeyWait: an error then means Redis was unreachable.
func New(rdb redis.UniversalClient, opts Options, m *Metrics, log *slog.Logger) (*Store, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalid)
	}
	key := opts.UserHashKey
	if len(key) == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), userHashKeyWait)
		k, err := LoadUserHashKey(ctx, rdb)
		cancel()
		if err != nil {
			return nil, err
		}
		key = k
	}
	hasher, err := NewHasher(key)
	if err != nil {
		return nil, err
	}
	opts.UserHashKey = nil // the Hasher keeps its own copy; hashKey one for Rebuild
	if opts, err = storeDefaults(opts); err != nil {
		return nil, err
	}
	if m == nil {
		m = newMetrics()
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Store{rdb: rdb, opts: opts, m: m, log: log, rl: logrepeat.New(log, 0), acts: map[string]*entry{}, neg: lru.New[struct{}](maxNegative), hasher: hasher,
		hashKey: hex.EncodeToString(key), swept: map[string]time.Time{},
		collected: map[string]bool{}, settledTo: map[string]int64{}, queueCalls: 1}
	if s.ChecksIP() && opts.Durability.Replicas > 0 {
		// A layout's queue on a single node whose calls each wait for a replica: a second
		// call goes out while the first waits (batch.go B2).
		s.queueCalls = 2
	}
	var base [8]byte
	_, _ = rand.Read(base[:])
	s.attemptBase = binary.BigEndian.Uint64(base[:])
	if err := s.loadScripts(m); err != nil {
		return nil, err
	}
	if s.unlock, err = lua.Open("inventory_restore_unlock.lua"); err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	if s.fence, err = lua.Open("inventory_fence_meta.lua"); err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	mv, err := NewMover(rdb)
	if err != nil {
		return nil, err
	}
	mv.dur = opts.Durability
	mv.calls = m.calls.WithLabelValues("inventory_transfer")
	mv.secs = m.callSeconds.WithLabelValues("inventory_transfer")
	s.mover = mv
	s.issuer = mv.inc + "-"
	return s, nil
}

// storeDefaults returns opts with a random instance id and the default of every unset
// count and duration filled in; it fails when RetireAfter does not exceed ReshardRunLimit
// by a second at least.
func storeDefaults(opts Options) (Options, error) {
	if opts.InstanceID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		opts.InstanceID = hex.EncodeToString(b[:])
	}
	if opts.MaxOtherShards == 0 {
		opts.MaxOtherShards = 3
	}
	if opts.ReserveBatch == 0 {
		opts.ReserveBatch = DefaultReserveBatch
	}
	if opts.ReshardWorkers <= 0 {
		opts.ReshardWorkers = 16
	}
	if opts.RefreshEvery <= 0 {
		opts.RefreshEvery = 250 * time.Millisecond
	}
	if opts.ReshardRunLimit <= 0 {
		opts.ReshardRunLimit = 2 * time.Minute
	}
	if opts.RetireAfter <= 0 {
		opts.RetireAfter = 5 * time.Minute
	}
	if opts.RetireAfter < opts.ReshardRunLimit+time.Second {
		return opts, fmt.Errorf("%w: RetireAfter %v must exceed ReshardRunLimit %v by a second at least", ErrInvalid, opts.RetireAfter, opts.ReshardRunLimit)
	}
	return opts, nil
}

// loadScripts reads the store's Lua scripts and gives each its call metrics from m; the
// first script that cannot be read fails it.
func (s *Store) loadScripts(m *Metrics) error {
	for _, p := range []struct {
		dst  **script
		name string
	}{
		{&s.reserve, "reserve"}, {&s.create, "create"},
		{&s.load, "load"}, {&s.drain, "drain"}, {&s.credit, "credit"}, {&s.copy, "copy"},
		{&s.reshard, "reshard"}, {&s.token, "token"}, {&s.restore, "restore"}, {&s.retire, "retire"},
		{&s.reserveBatch, "reserve_batch"}, {&s.end, "end"}, {&s.issued, "issued"},
	} {
		sc, err := lua.Open("inventory_" + p.name + ".lua")
		if err != nil {
			return err
		}
		*p.dst = &script{name: p.name, s: sc, hash: sc.Hash(),
			calls: m.calls.WithLabelValues("inventory_" + p.name),
			secs:  m.callSeconds.WithLabelValues("inventory_" + p.name)}
	}
	return nil
}

// UserHash is the user hash of userID under the deployment's key (see Hasher).
func (s *Store) UserHash(userID string) string { return s.hasher.UserHash(userID) }

// Hasher returns the Store's user hasher, for parts that hash user ids without a Store.
func (s *Store) Hasher() *Hasher { return s.hasher }

// run runs sc with EVALSHA (EVAL on NOSCRIPT) and returns its array answer.
func (s *Store) run(ctx context.Context, sc *script, keys []string, args ...any) ([]any, error) {
	start := time.Now()
	v, err := s.opts.Durability.eval(ctx, s.rdb, sc.s, keys, args...).Result()
	return sc.answerOf(v, err, start)
}

// answerOf counts a call of sc that started at start and returns its array answer.
func (sc *script) answerOf(v any, err error, start time.Time) ([]any, error) {
	sc.calls.Inc()
	sc.secs.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, fmt.Errorf("inventory: %s script: %w", sc.name, err)
	}
	if a, ok := v.([]any); ok && len(a) > 0 {
		return a, nil
	}
	if n, ok := v.(int64); ok {
		return []any{n}, nil
	}
	return nil, fmt.Errorf("inventory: %s script: unexpected answer %v", sc.name, v)
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// answer decodes the code a script's answer starts with into the script's result type
// (whose zero value is unknown). The script's numbers are the values of known, except its
// 0, which stands for zero (a script without a 0 answer passes the type's zero value). An
// answer of another form or an unknown code is an error naming the script.
func answer[T ~int](sc *script, res []any, zero T, known ...T) (T, error) {
	n, ok := asInt(res[0])
	switch {
	case !ok:
		return 0, fmt.Errorf("inventory: %s script: unexpected answer %v", sc.name, res)
	case n == 0 && zero != 0:
		return zero, nil
	}
	return lua.Decode("inventory_"+sc.name+".lua", n, known...)
}

// createAnswer is the result of inventory_create.lua. The zero value is unknown.
type createAnswer int

const (
	createUnknown  createAnswer = iota
	createdNow                  // {1}: created
	createExists                // {2, loaded}: exists with the same definition
	createConflict              // {3}: exists with a different definition
)

// definition is the canonical JSON kept in meta.def.
type definition struct {
	ActivityID   string `json:"activityId"`
	CampaignID   string `json:"campaignId"`
	Stock        int64  `json:"stock"`
	PerUserLimit int    `json:"perUserLimit"`
	OpensAt      int64  `json:"opensAt"`
	ClosesAt     int64  `json:"closesAt"`
	Shards       int    `json:"shards"`
	RequireToken bool   `json:"requireToken"`
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func validate(a Activity) error {
	switch {
	case !keyspace.ValidName(a.ID):
		return fmt.Errorf("%w: activity id %q", ErrInvalid, a.ID)
	case a.CampaignID != "" && !keyspace.ValidName(a.CampaignID):
		return fmt.Errorf("%w: campaign id", ErrInvalid)
	case a.Stock < 0 || a.Stock > 1e12:
		return fmt.Errorf("%w: stock %d", ErrInvalid, a.Stock)
	case a.PerUserLimit < 1:
		return fmt.Errorf("%w: perUserLimit %d", ErrInvalid, a.PerUserLimit)
	case a.Shards < 1 || a.Shards > keyspace.MaxShards:
		return fmt.Errorf("%w: shards %d (1..%d)", ErrInvalid, a.Shards, keyspace.MaxShards)
	case !a.ClosesAt.IsZero() && !a.OpensAt.IsZero() && !a.ClosesAt.After(a.OpensAt):
		return fmt.Errorf("%w: closesAt not after opensAt", ErrInvalid)
	}
	return nil
}

// giveGeneration writes meta's generation into the generation key of each shard of epoch
// 0 (ShardKeys.Gen; SET NX, so a restore's fence written meanwhile stands): a itself when
// this Create made meta, else the generation meta holds (a Create finishing the load of
// another's).
func (s *Store) giveGeneration(ctx context.Context, a Activity, created bool) error {
	gen := a.Generation
	if !created {
		g, err := s.rdb.HGet(ctx, Meta(a.ID), "gen").Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("inventory: read generation: %w", err)
		}
		gen = g
	}
	if gen == "" {
		return nil
	}
	pipe := s.rdb.Pipeline()
	for i := 0; i < a.Shards; i++ {
		pipe.SetNX(ctx, Shard(a.ID, 0, i).Gen(), gen, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("inventory: shard generations: %w", err)
	}
	return nil
}

// split is the share of shard i when units are spread over n shards, remainder first.
func split(units int64, n, i int) int64 {
	q := units / int64(n)
	if int64(i) < units%int64(n) {
		q++
	}
	return q
}

// Create defines an activity and loads its stock split over a.Shards shards. It is
// idempotent: the same definition again returns the existing activity and false without
// touching the stock; a different definition under the same id is ErrConflict. Times are
// kept to the millisecond.
func (s *Store) Create(ctx context.Context, a Activity) (Activity, bool, error) {
	if err := validate(a); err != nil {
		return Activity{}, false, err
	}
	if a.Generation == "" {
		a.Generation = NewGeneration()
	}
	a.OpensAt, a.ClosesAt = fromMs(unixMs(a.OpensAt)), fromMs(unixMs(a.ClosesAt))
	def, err := json.Marshal(definition{a.ID, a.CampaignID, a.Stock, a.PerUserLimit,
		unixMs(a.OpensAt), unixMs(a.ClosesAt), a.Shards, a.RequireToken})
	if err != nil {
		return Activity{}, false, err
	}
	rt := 0
	if a.RequireToken {
		rt = 1
	}
	res, err := s.run(ctx, s.create, []string{Meta(a.ID)}, def, a.Stock, a.PerUserLimit,
		unixMs(a.OpensAt), unixMs(a.ClosesAt), a.Shards, a.CampaignID, rt, a.Generation)
	if err != nil {
		return Activity{}, false, err
	}
	c, err := answer(s.create, res, createUnknown, createdNow, createExists, createConflict)
	if err != nil {
		return Activity{}, false, err
	}
	created := false
	switch c {
	case createdNow:
		created = true
	case createExists:
		if len(res) > 1 {
			if n, _ := asInt(res[1]); n == 1 {
				v, _, err := s.lookup(ctx, a.ID)
				if err != nil {
					return Activity{}, false, err
				}
				return v.Activity, false, nil
			}
		}
	case createConflict:
		return Activity{}, false, fmt.Errorf("%w: %s", ErrConflict, a.ID)
	}
	if err := s.loadFirstLayout(ctx, a); err != nil {
		return Activity{}, false, err
	}
	if err := s.giveGeneration(ctx, a, created); err != nil {
		return Activity{}, false, err
	}
	if err := s.registerLoaded(ctx, a); err != nil {
		return Activity{}, false, err
	}
	if created {
		if err := s.rdb.Publish(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Events), "created "+a.ID).Err(); err != nil {
			s.log.Warn("publish created failed", "activity", a.ID, "err", err)
		}
		s.log.Info("activity created", "activity", a.ID, "stock", a.Stock, "shards", a.Shards)
	}
	s.forget(a.ID)
	v, _, err := s.lookup(ctx, a.ID)
	if err != nil {
		return Activity{}, false, err
	}
	return v.Activity, created, nil
}

// loadFirstLayout loads (or finishes loading) the stock of epoch 0 over a.Shards shards,
// one call per shard in order. Each shard loads at most once, so a concurrent or repeated
// Create never adds stock.
func (s *Store) loadFirstLayout(ctx context.Context, a Activity) error {
	for i := 0; i < a.Shards; i++ {
		k := Shard(a.ID, 0, i)
		res, err := s.run(ctx, s.load, []string{k.Stock(), k.Drained()}, split(a.Stock, a.Shards, i))
		if err != nil {
			return err
		}
		if _, err := answer(s.load, res, loadedBefore, loadedNow); err != nil {
			return err
		}
	}
	return nil
}

// registerLoaded registers epoch 0's journals, marks meta loaded and registers the
// activity, in that order; the first write that fails stops it.
func (s *Store) registerLoaded(ctx context.Context, a Activity) error {
	journals := make([]any, a.Shards)
	for i := range journals {
		journals[i] = Shard(a.ID, 0, i).Journal()
	}
	if err := s.rdb.SAdd(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Journals), journals...).Err(); err != nil {
		return fmt.Errorf("inventory: register journals: %w", err)
	}
	if err := s.rdb.HSet(ctx, Meta(a.ID), "loaded", 1).Err(); err != nil {
		return fmt.Errorf("inventory: mark loaded: %w", err)
	}
	if err := s.rdb.SAdd(ctx, keyspace.Namespaced(s.opts.Namespace, keyspace.Activities), a.ID).Err(); err != nil {
		return fmt.Errorf("inventory: register activity: %w", err)
	}
	return nil
}

// Activity returns the cached view of an activity without any Redis call; false when the
// activity is not in the cache (see Lookup).
func (s *Store) Activity(id string) (ActivityView, bool) {
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	if e == nil {
		return ActivityView{}, false
	}
	return e.view(), true
}

func (e *entry) view() ActivityView {
	l := e.layout.Load()
	v := ActivityView{Activity: e.def, Remaining: max(e.remaining.Load(), 0), SoldOut: e.soldOut.Load(), Epoch: l.epoch}
	v.EndedAt = fromMs(e.ended.Load())
	v.ClosesAt = e.closesAt()
	v.Shards = l.shards
	v.Generation = e.generation()
	if r := e.recovering.Load(); r != nil {
		v.Recovering, v.RecoveringReason = true, r.reason
	}
	return v
}

// closesAt is when the sale closes: the definition's closesAt, or the time an operator ended
// it when that is earlier (zero: no close).
func (e *entry) closesAt() time.Time {
	end := fromMs(e.ended.Load())
	if !end.IsZero() && (e.def.ClosesAt.IsZero() || end.Before(e.def.ClosesAt)) {
		return end
	}
	return e.def.ClosesAt
}

// setEnded records meta's end of the sale (0: none); the reservation script's arguments,
// which carry the close, are built again (entryArgs compares the end they were built with).
func (e *entry) setEnded(ms int64) {
	if ms > 0 {
		e.ended.Store(ms)
	}
}

// meta is the parsed meta hash.
type meta struct {
	def        Activity
	epoch      int
	shards     int
	loaded     bool
	resharding bool
	reshard    string // "<epoch>:<shards>" of a reshard in progress
	layouts    string // every epoch the activity had, "epoch:shards" comma-separated
	gen        string // the generation ("" in meta written before generations)
	ended      int64  // unix ms the sale was ended (End), 0 when it was not
}

var metaFields = []string{"def", "epoch", "shards", "loaded", "reshard", "layouts", "gen", "ended"}

// defs remembers the definitions parseMeta decoded, by meta's def field as stored: a refresh
// pass reads the meta of every activity the instance holds (four times a second), and a def
// changes only when its activity is created again, so decoding it every time was a sixth of
// a pass's CPU. Keyed by the text itself, an entry is never stale.
var defs = lru.New[definition](4096)

func parseMeta(id string, vals []any) (meta, bool, error) {
	if len(vals) != len(metaFields) || vals[0] == nil {
		return meta{}, false, nil
	}
	raw := asString(vals[0])
	d, ok := defs.Get(raw, time.Time{})
	if !ok {
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return meta{}, false, fmt.Errorf("inventory: meta of %s: %w", id, err)
		}
		defs.Put(raw, d, time.Time{})
	}
	m := meta{def: Activity{ID: d.ActivityID, CampaignID: d.CampaignID, Stock: d.Stock,
		PerUserLimit: d.PerUserLimit, OpensAt: fromMs(d.OpensAt), ClosesAt: fromMs(d.ClosesAt),
		Shards: d.Shards, RequireToken: d.RequireToken}}
	e, ok1 := asInt(vals[1])
	n, ok2 := asInt(vals[2])
	if !ok1 || !ok2 || n < 1 || n > keyspace.MaxShards || e < 0 {
		return meta{}, false, fmt.Errorf("inventory: meta of %s: bad epoch/shards", id)
	}
	m.epoch, m.shards = int(e), int(n)
	m.loaded = asString(vals[3]) == "1"
	m.reshard = asString(vals[4])
	m.resharding = m.reshard != ""
	m.layouts = asString(vals[5])
	m.gen = asString(vals[6])
	m.def.Generation = m.gen
	if ended, ok := asInt(vals[7]); ok && ended > 0 {
		m.ended = ended
		m.def.EndedAt = fromMs(ended)
	}
	return m, true, nil
}

// Lookup reads an activity's meta from Redis and caches it: the path for an id the cache
// does not know yet. (zero, false, nil) for an unknown activity; an unknown id is remembered
// for negativeTTL so a flood of unknown ids costs one Redis read per id and period (a
// "created" event forgets it at once).
func (s *Store) Lookup(ctx context.Context, id string) (ActivityView, bool, error) {
	if !keyspace.ValidName(id) {
		return ActivityView{}, false, nil
	}
	if v, ok := s.Activity(id); ok {
		return v, true, nil
	}
	now := time.Now()
	if _, neg := s.neg.Get(id, now); neg {
		return ActivityView{}, false, nil
	}
	v, ok, err := s.lookup(ctx, id)
	if err == nil && !ok {
		s.neg.Put(id, struct{}{}, now.Add(negativeTTL))
	}
	return v, ok, err
}

// Unknown reports whether Redis did not know id when Lookup last asked, less than
// negativeTTL ago (and no "created" event came since): Lookup would answer unknown without a
// Redis read.
func (s *Store) Unknown(id string) bool {
	_, neg := s.neg.Get(id, time.Now())
	return neg
}

// forget drops a remembered unknown id.
func (s *Store) forget(id string) { s.neg.Delete(id) }

// lookup reads meta from Redis and caches it, always.
func (s *Store) lookup(ctx context.Context, id string) (ActivityView, bool, error) {
	vals, err := s.rdb.HMGet(ctx, Meta(id), metaFields...).Result()
	if err != nil {
		return ActivityView{}, false, fmt.Errorf("inventory: read meta: %w", err)
	}
	m, ok, err := parseMeta(id, vals)
	if err != nil {
		return ActivityView{}, false, err
	}
	if cat := s.lastCatalog(); s.checkLost(ctx, id, m, ok, cat) {
		if v, found := s.Activity(id); found {
			return v, true, nil
		}
	}
	if !ok {
		return ActivityView{}, false, nil
	}
	s.mu.RLock()
	known := s.acts[id] != nil
	s.mu.RUnlock()
	e := s.apply(m)
	if !known && m.loaded {
		// A new entry: read its stock now rather than show the full stock until the
		// next refresh.
		if keys, err := s.refreshStock(ctx, []*entry{e}); err != nil || keys != nil {
			err = errors.Join(keys, err)
			s.log.Debug("first stock read failed", "activity", id, "err", err)
		}
	}
	return e.view(), true, nil
}

// apply caches m, creating the entry or switching its layout when the epoch changed.
func (s *Store) apply(m meta) *entry {
	id := m.def.ID
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	if e == nil {
		created := false
		s.mu.Lock()
		if e = s.acts[id]; e == nil {
			e = s.newEntryLocked(m.def, m.epoch, m.shards)
			e.resharding.Store(m.resharding)
			e.setTransit(id, m.layouts)
			e.gen.Store(&m.gen)
			created = true
		}
		s.mu.Unlock()
		e.setEnded(m.ended)
		if created && s.opts.Loaded != nil {
			s.opts.Loaded(e.view())
		}
		return e
	}
	e.setEnded(m.ended)
	if e.generation() != m.gen {
		e.gen.Store(&m.gen)
	}
	e.resharding.Store(m.resharding)
	e.setTransit(id, m.layouts)
	for {
		old := e.layout.Load()
		if old.epoch >= m.epoch {
			return e
		}
		if e.layout.CompareAndSwap(old, newLayout(id, m.epoch, m.shards)) {
			e.pastMu.Lock()
			e.past = append(e.past, old)
			e.pastMu.Unlock()
			return e
		}
	}
}

// newEntryLocked caches a new entry for def at the given layout, with the full stock as
// remaining until the first stock read. s.mu must be held for writing.
func (s *Store) newEntryLocked(def Activity, epoch, shards int) *entry {
	id := def.ID
	e := &entry{def: def,
		issued: s.m.issued.WithLabelValues(id),
		gauge:  s.m.remaining.WithLabelValues(id)}
	e.remaining.Store(def.Stock)
	e.ended.Store(unixMs(def.EndedAt))
	e.layout.Store(newLayout(id, epoch, shards))
	s.m.recovering.WithLabelValues(id).Set(0)
	s.acts[id] = e
	return e
}

// lastCatalog is the last activity catalog read (nil when none).
func (s *Store) lastCatalog() map[string]Activity {
	if c := s.catalog.Load(); c != nil {
		return *c
	}
	return nil
}

// entryFor returns the cached entry, reading meta once on a miss.
func (s *Store) entryFor(ctx context.Context, id string) (*entry, error) {
	s.mu.RLock()
	e := s.acts[id]
	s.mu.RUnlock()
	if e != nil {
		return e, nil
	}
	if _, ok, err := s.Lookup(ctx, id); err != nil {
		return nil, err
	} else if !ok {
		return nil, ErrNotFound
	}
	s.mu.RLock()
	e = s.acts[id]
	s.mu.RUnlock()
	return e, nil
}

// ChecksIP reports whether the reservation script can take the per-IP token in its own round
// trip (ReserveRequest.IPKey): true on a single Redis node, false on a cluster, where the IP
// bucket and the user's shard live in different slots.
func (s *Store) ChecksIP() bool {
	_, cluster := s.rdb.(*redis.ClusterClient)
	return !cluster
}

// loadAnswer is the result of inventory_load.lua. The zero value is unknown.
type loadAnswer int

const (
	loadUnknown  loadAnswer = iota
	loadedNow               // 1: the shard's stock was loaded now
	loadedBefore            // 0: loaded before (or drained): nothing changed
)
