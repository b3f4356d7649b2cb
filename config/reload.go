package config

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/prom"
)

// Payload sources.
const (
	SourceNacos = "nacos" // fetched from the Nacos server
	SourceFile  = "file"  // read from the watched file (embedded mode)
	SourceCache = "cache" // the local snapshot of the last good Nacos content
)

// Payload is one raw configuration document offered to a Reloader.
type Payload struct {
	Data   []byte
	Source string // SourceNacos, SourceFile or SourceCache
	// Seq orders payloads of one source: a source stamps it from a monotonic counter when it
	// fetches the content, and the Reloader drops a payload whose Seq is lower than that of
	// a payload it already processed from the same source.
	Seq uint64
	// Applied, if not nil, is called on the reload goroutine once this payload's content is
	// the running configuration (built and stored, or identical to the running one), never
	// for a refused payload. It must return at once.
	Applied func()
}

// Meta describes the payload a snapshot is being built from.
type Meta struct {
	Source  string
	Version string
	Seq     uint64
}

// Status describes the active snapshot and the latest reload outcome.
type Status struct {
	Source      string    `json:"source"`  // source of the active snapshot
	Version     string    `json:"version"` // content hash of the active snapshot
	AppliedAt   time.Time `json:"appliedAt"`
	LastError   string    `json:"lastError"` // why the latest refused payload was refused; "" if none yet
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
	// LastErrorSuperseded is true when a payload processed after the last refused one was
	// good (applied, or the same content as the running configuration): the error is history.
	LastErrorSuperseded bool    `json:"lastErrorSuperseded"`
	Config              *Config `json:"config"` // the active Config; nil before the first good load
	Ready               bool    `json:"ready"`  // a good payload has been applied
}

// Metrics are the config package's Prometheus metrics, all named seckill_config_* except
// seckill_nacos_healthy_instances.
type Metrics struct {
	lastSuccessful   prometheus.Gauge
	lastSuccessTime  prometheus.Gauge
	failures         prometheus.Counter
	stale            prometheus.Counter
	info             *prometheus.GaugeVec
	sourceErrors     *prometheus.CounterVec
	healthyInstances *setOnceGauge
}

// NewMetrics creates the package metrics and registers them with reg (nil: not registered);
// an error when reg refuses one (already registered).
// Create it once per registry and share it. The source errors of every source exist at 0.
// seckill_nacos_healthy_instances is exported only once the Nacos registry has set it: in
// file mode there is no Nacos naming to count (the limiter exports the count it divides its
// fallback budget by as seckill_rate_limiter_healthy_instances in every mode).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := newMetrics()
	if reg != nil {
		if err := prom.Register(reg, m.lastSuccessful, m.lastSuccessTime, m.failures, m.stale, m.info,
			m.sourceErrors, m.healthyInstances); err != nil {
			return nil, fmt.Errorf("config: register metrics: %w", err)
		}
	}
	return m, nil
}

// newMetrics builds the package metrics, unregistered.
func newMetrics() *Metrics {
	m := &Metrics{
		lastSuccessful: prom.Gauge("seckill_config_last_reload_successful",
			"1 if the latest configuration payload was applied, 0 if it was refused."),
		lastSuccessTime: prom.Gauge("seckill_config_last_reload_success_timestamp_seconds",
			"Unix time of the latest applied configuration."),
		failures: prom.Counter("seckill_config_reload_failures_total",
			"Configuration payloads refused (decode, validation or build errors)."),
		stale: prom.Counter("seckill_config_stale_payloads_total",
			"Configuration payloads dropped because a newer one from the same source was already processed."),
		info: prom.GaugeVec("seckill_config_info",
			"Always 1; labels name the source and version of the active configuration.", "source", "version"),
		sourceErrors: prom.CounterVec("seckill_config_source_errors_total",
			"Failed reads of a configuration source (Nacos fetch, file read, snapshot write), by source (nacos, file, cache).", "source"),
		healthyInstances: &setOnceGauge{g: prom.Gauge("seckill_nacos_healthy_instances",
			"Healthy seckill instances registered in Nacos naming, as last seen (exported only when Nacos naming is in use).")},
	}
	m.lastSuccessful.Set(0)
	for _, s := range []string{SourceNacos, SourceFile, SourceCache} {
		m.sourceErrors.WithLabelValues(s)
	}
	return m
}

// setOnceGauge is a gauge that is collected only once it has been set. It is an unchecked
// collector (Describe sends nothing), so a registry accepts it before its first value.
type setOnceGauge struct {
	g   prometheus.Gauge
	set atomic.Bool
}

// Set sets the gauge to v; from then on it is collected. Safe for concurrent use.
func (s *setOnceGauge) Set(v float64) {
	s.g.Set(v)
	s.set.Store(true)
}

// Describe sends nothing: the gauge may not be exported at all.
func (s *setOnceGauge) Describe(chan<- *prometheus.Desc) {}

// Collect sends the gauge once it has been set.
func (s *setOnceGauge) Collect(ch chan<- prometheus.Metric) {
	if s.set.Load() {
		s.g.Collect(ch)
	}
}

func (m *Metrics) sourceError(source string) {
	if m != nil {
		m.sourceErrors.WithLabelValues(source).Inc()
	}
}

// DefaultBuildTimeout bounds decoding, validating and building one payload.
const DefaultBuildTimeout = 5 * time.Second

// Reloader is the single reload path: sources Offer raw payloads, one goroutine (Run)
// decodes, validates and builds each into a *T (on a goroutine of its own, abandoned after
// DefaultBuildTimeout so that nothing an edit contains can stall the reload path), and
// stores it once behind an atomic pointer. Readers call Current once per request and use only that snapshot. All methods
// are safe for concurrent use.
type Reloader[T any] struct {
	build func(*Config, Meta) (*T, error)
	m     *Metrics
	log   *slog.Logger

	cur    atomic.Pointer[T]
	status atomic.Pointer[Status]

	mu      sync.Mutex
	pending *Payload // newest offered payload not yet processed; guarded by mu
	wake    chan struct{}

	ready     chan struct{}
	readyOnce sync.Once

	// changed is closed (and replaced) each time a snapshot is stored; see Changed.
	changed atomic.Pointer[chan struct{}]

	// Touched only by the Run goroutine.
	lastSeq map[string]uint64
	timeout time.Duration
	retry   *Payload         // a payload refused by the timeout before the first applied one
	retryIn backoff.Doubling // delays before retry is tried again: retryMinDelay doubling to retryMaxDelay
}

// Delays between tries of a payload whose build overran the timeout while nothing was
// applied yet: a loaded machine, not a bad edit, and no source offers unchanged content again.
const (
	retryMinDelay = time.Second
	retryMaxDelay = time.Minute
)

// NewReloader returns a Reloader that turns each good payload into a *T with build.
// build must not block for long, must not modify the Config, and may be called while an
// earlier call that overran the timeout is still running. A nil m or log is allowed.
func NewReloader[T any](build func(*Config, Meta) (*T, error), m *Metrics, log *slog.Logger) *Reloader[T] {
	if m == nil {
		m = newMetrics()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader[T]{
		build:   build,
		m:       m,
		log:     log.With("component", "config"),
		wake:    make(chan struct{}, 1),
		ready:   make(chan struct{}),
		lastSeq: map[string]uint64{},
		timeout: DefaultBuildTimeout,
		retryIn: backoff.Doubling{Min: retryMinDelay, Max: retryMaxDelay},
	}
	r.status.Store(&Status{})
	ch := make(chan struct{})
	r.changed.Store(&ch)
	return r
}

// Offer hands p to the reload goroutine and returns at once. Offers not yet processed
// coalesce to the newest one; an older payload (lower Seq) from the same source as the
// pending one is dropped.
func (r *Reloader[T]) Offer(p Payload) {
	r.mu.Lock()
	if q := r.pending; q != nil && q.Source == p.Source && p.Seq < q.Seq {
		r.mu.Unlock()
		r.m.stale.Inc()
		return
	}
	r.pending = &p
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run processes offered payloads until ctx is done; it returns ctx's error. Run it once.
// A payload refused because its build overran the timeout (a loaded machine, a pause) is
// tried again after a growing delay, unless a newer payload came in: its source offers the
// same content no more (Nacos's worker and the file watcher offer a content once), so an edit
// such as a kill switch would stay unapplied on this instance alone.
func (r *Reloader[T]) Run(ctx context.Context) error {
	retryTimer := time.NewTimer(time.Hour)
	retryTimer.Stop()
	defer retryTimer.Stop()
	for {
		var p *Payload
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.wake:
			r.mu.Lock()
			p = r.pending
			r.pending = nil
			r.mu.Unlock()
			r.retryIn.Reset() // a new payload's retries start again at the shortest delay
		case <-retryTimer.C:
			if q := r.retry; q != nil && r.lastSeq[q.Source] == q.Seq {
				r.log.Info("config: trying again a payload whose build overran the timeout", "source", q.Source, "seq", q.Seq)
				p = q
			}
		}
		if p == nil {
			continue
		}
		r.retry = nil
		if r.process(ctx, *p) {
			r.retry = p
			retryTimer.Reset(r.retryIn.Next())
		}
	}
}

// Current returns the active snapshot, or nil before the first good payload.
func (r *Reloader[T]) Current() *T { return r.cur.Load() }

// Status returns the active snapshot's metadata and the latest reload outcome.
func (r *Reloader[T]) Status() Status { return *r.status.Load() }

// Ready returns a channel closed once the first good payload has been applied.
func (r *Reloader[T]) Ready() <-chan struct{} { return r.ready }

// Changed returns a channel that is closed when the next snapshot is stored (after the
// one Current returns now). A follower of the configuration calls Changed, then Current,
// acts on that snapshot and waits on the channel: no swap is missed, and any number of
// followers may wait at once.
func (r *Reloader[T]) Changed() <-chan struct{} { return *r.changed.Load() }

// prepared is the outcome of decoding and building one payload.
type prepared[T any] struct {
	cfg      *Config
	snap     *T
	same     bool // the content is the running configuration's: nothing was built
	timedOut bool // err is the timeout: the content itself may be good
	err      error
}

// prepare decodes and builds p on a goroutine of its own and waits at most r.timeout for
// it, so that a build that hangs cannot stop later payloads (a kill switch) from being
// applied: the hung build is abandoned (its goroutine ends when build returns, if ever) and
// the payload refused. It returns nil when ctx is done first.
func (r *Reloader[T]) prepare(ctx context.Context, p Payload, old *Status) *prepared[T] {
	done := make(chan prepared[T], 1)
	go func() {
		var res prepared[T]
		res.cfg, res.err = Decode(p.Data)
		switch {
		case res.err != nil:
		case old.Ready && res.cfg.Version() == old.Version:
			res.same = true
		default:
			res.snap, res.err = r.build(res.cfg, Meta{Source: p.Source, Version: res.cfg.Version(), Seq: p.Seq})
			if res.err == nil && old.Config != nil {
				if err := old.Config.identityFixed(res.cfg); err != nil {
					res.snap, res.err = nil, err
				}
			}
		}
		done <- res
	}()
	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case res := <-done:
		return &res
	case <-t.C:
		return &prepared[T]{timedOut: true, err: fmt.Errorf("config: decoding and building the payload took longer than %v: refused", r.timeout)}
	case <-ctx.Done():
		return nil
	}
}

// process runs on the Run goroutine only. It reports whether p should be tried again: its
// build overran the timeout.
func (r *Reloader[T]) process(ctx context.Context, p Payload) (retry bool) {
	if last, ok := r.lastSeq[p.Source]; ok && p.Seq < last {
		r.m.stale.Inc()
		r.log.Debug("config: stale payload dropped", "source", p.Source, "seq", p.Seq, "last_seq", last)
		return false
	}
	r.lastSeq[p.Source] = p.Seq
	old := r.status.Load()
	res := r.prepare(ctx, p, old)
	if res == nil {
		return false
	}
	if res.same {
		r.m.lastSuccessful.Set(1) // e.g. a refused edit reverted to the active content
		st := *old
		st.LastErrorSuperseded = st.LastError != ""
		if old.Source != p.Source {
			// Same content from another source (e.g. Nacos confirming the cached snapshot).
			st.Source = p.Source
			r.setInfo(st.Source, st.Version)
			r.log.Info("config: source changed, content unchanged", "source", p.Source, "version", st.Version)
		}
		r.status.Store(&st)
		if p.Applied != nil {
			p.Applied()
		}
		return false
	}
	if res.err != nil {
		st := *old
		st.LastError = res.err.Error()
		st.LastErrorAt = time.Now()
		st.LastErrorSuperseded = false
		r.status.Store(&st)
		r.m.lastSuccessful.Set(0)
		r.m.failures.Inc()
		r.log.Error("config: payload refused, keeping the current configuration",
			"source", p.Source, "seq", p.Seq, "current_version", old.Version, "err", res.err)
		return res.timedOut
	}
	now := time.Now()
	r.cur.Store(res.snap)
	next := make(chan struct{})
	close(*r.changed.Swap(&next))
	st := &Status{Source: p.Source, Version: res.cfg.Version(), AppliedAt: now,
		LastError: old.LastError, LastErrorAt: old.LastErrorAt, LastErrorSuperseded: old.LastError != "",
		Config: res.cfg, Ready: true}
	r.status.Store(st)
	r.m.lastSuccessful.Set(1)
	r.m.lastSuccessTime.Set(float64(now.UnixNano()) / 1e9)
	r.setInfo(st.Source, st.Version)
	r.readyOnce.Do(func() { close(r.ready) })
	if p.Applied != nil {
		p.Applied()
	}
	r.log.Info("config: applied", "source", p.Source, "version", st.Version, "previous", old.Version)
	if old.Config == nil { // the identity mode is fixed from here on (identityFixed)
		switch res.cfg.Auth.Mode {
		case AuthHeader:
			r.log.Warn("config: identity from X-User-Id (auth mode header): the configuration states that a gateway authenticates every request and overwrites the header; any client reaching this port directly can claim any user")
		case AuthJWT:
			r.log.Info("config: identity from bearer JWTs (auth mode jwt)")
		}
	}
	return false
}

func (r *Reloader[T]) setInfo(source, version string) {
	r.m.info.Reset()
	r.m.info.WithLabelValues(source, version).Set(1)
}
