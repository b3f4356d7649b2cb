// Package app builds every part of seckill from its Options, wires them together and runs
// them: the HTTP API (Gin), the configuration reloader, the inventory, the limiter and the
// order pipeline. Each backing service that is not configured is replaced by its embedded
// stand-in (miniredis, SQLite, an in-process queue, the YAML file), running the same code.
package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill/seckill/app/waitroom"
	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
	"github.com/seckill/seckill/order"
	"github.com/seckill/seckill/sql"
)

// App is one running seckill instance.
type App struct {
	opts Options
	log  *slog.Logger
	reg  *prometheus.Registry
	om   *order.Metrics

	rdb      redis.UniversalClient
	mini     *miniredis.Miniredis
	db       *gorm.DB
	cfg      *config.Reloader[Snapshot]
	cfgM     *config.Metrics
	inv      *inventory.Store
	lim      *limiter.Limiter
	queue    queue
	relay    *order.Relay
	writer   *order.Writer
	rec      *order.Reconciler
	registry *config.NacosRegistry
	room     *waitroom.Room
	api      *api
	server   *http.Server // storefront: API and health
	listener net.Listener
	conns    *connLimiter // nil when MaxConns is 0
	adminSrv *http.Server // /admin/v1 and /metrics
	adminLn  net.Listener

	tokenGenerated bool // the admin token was generated here (printed in the banner)
	started        time.Time

	layouts shardFollow // runReshard's progress (layouts.go)

	embedded []string
	tmpDirs  []string

	// fsyncHorizon is how old a journal entry must be before the relay publishes it, in
	// nanoseconds (mode aof while a master runs appendfsync everysec): set by checkDurability
	// at start and by runDurabilityCheck after each check, read by the relay once per batch
	// (relayHorizon). durabilityOK is the gauge of runDurabilityCheck.
	fsyncHorizon atomic.Int64
	durabilityOK prometheus.Gauge
}

// drainTimeout is how long Run lets in-flight requests finish at shutdown. Deployments give
// the process longer than this to stop (deploy/kubernetes: terminationGracePeriodSeconds 30).
const drainTimeout = 10 * time.Second

// queue is what the app needs of the reservation queue: RocketMQ or in-process.
type queue interface {
	order.Publisher
	order.Subscriber
}

var (
	_ queue = (*order.RocketMQ)(nil)
	_ queue = (*order.MemQueue)(nil)
)

// buildParts builds the limiter and the order pipeline's parts; an error means a script did
// not load or a metric was registered twice.
func (a *App) buildParts(opts Options, healthy func() int, invM *inventory.Metrics, log *slog.Logger) error {
	lm, err := limiter.NewMetrics(a.reg)
	if err != nil {
		return err
	}
	if a.lim, err = limiter.New(a.rdb, limiter.Options{InstanceID: opts.InstanceID, Healthy: healthy, Namespace: opts.Namespace}, lm, log.With("part", "limiter")); err != nil {
		return err
	}

	om, err := order.NewMetrics(a.reg)
	if err != nil {
		return err
	}
	a.om = om
	if !opts.has("writer") {
		// The writer's series mean nothing where it does not run (its last-success time
		// would read 0, "stale", on every API-only pod): not exported there.
		for _, c := range om.WriterCollectors() {
			a.reg.Unregister(c)
		}
	}
	if a.durabilityOK, err = newDurabilityGauge(a.reg, opts.RedisDurability.String()); err != nil {
		return err
	}
	// One ledger for the pipeline's parts.
	ledger, err := inventory.NewLedger(a.rdb)
	if err != nil {
		return err
	}
	ledger.SetDurability(opts.RedisDurability)
	if a.relay, err = order.NewRelay(a.rdb, a.queue, order.RelayOptions{InstanceID: opts.InstanceID, ClaimIdle: opts.RelayClaimIdle, JournalsKey: keyspace.Namespaced(opts.Namespace, keyspace.Journals),
		Durability: opts.RedisDurability, FsyncHorizon: a.relayHorizon}, om, log.With("part", "relay")); err != nil {
		return err
	}
	writerRate := opts.WriterRate
	if writerRate == 0 {
		writerRate = -1 // no cap
	}
	if a.writer, err = order.NewWriter(a.db, a.rdb, order.WriterOptions{Ledger: ledger, MaxOrdersPerSecond: writerRate, PoolSize: opts.MySQLPool}, om, log.With("part", "writer")); err != nil {
		return err
	}
	a.rec, err = order.NewReconciler(a.db, a.rdb, order.ReconcileOptions{Ledger: ledger, Repair: true, ActivitiesKey: keyspace.Namespaced(opts.Namespace, keyspace.Activities)}, om, log.With("part", "reconciler"))
	return err
}

// activityGone deletes the series of an activity whose metadata is gone from Redis
// (inventory.Options.Gone).
func (a *App) activityGone(id string) {
	if a.api != nil && a.api.funnel != nil {
		a.api.funnel.forget(id)
	}
	if a.om != nil {
		a.om.Forget(id)
	}
}

// runFallbackFollow hands the limiter the fallback policy of each applied configuration: a
// degraded limiter's prober then follows an edit of fallback.probeEvery at once, even with no
// request coming (a request hands it the policy too, ObserveRedis).
func (a *App) runFallbackFollow(ctx context.Context) error {
	for {
		changed := a.cfg.Changed() // before Current: a swap in between closes it
		if snap := a.cfg.Current(); snap != nil {
			a.lim.SetFallback(snap.Admission.Fallback())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// activityLoaded creates the funnel series of an activity the inventory started caching, at
// 0, so that rate() sees a sale shorter than a scrape from its first count.
func (a *App) activityLoaded(v inventory.ActivityView) {
	if a.api != nil && a.api.funnel != nil {
		a.api.funnel.activity(&v)
	}
}

// New builds the instance; it connects to every configured backing service and starts the
// embedded stand-ins of the others. Run starts the work.
func New(ctx context.Context, opts Options, log *slog.Logger) (_ *App, err error) {
	a := &App{opts: opts, log: log, reg: prometheus.NewRegistry(), layouts: newShardFollow(), started: time.Now()}
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	b := Build()
	log.Info("seckill starting", "version", b.Version, "revision", b.Revision, "go", b.GoVersion,
		"instance", opts.InstanceID, "roles", opts.Roles, "pid", os.Getpid())
	if err := registerBuildInfo(a.reg, b); err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		// Stable across restarts, so the last good Nacos snapshot is found again.
		opts.DataDir = DefaultDataDir(os.Getenv)
		a.opts.DataDir = opts.DataDir
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := a.resolveConfigFile(); err != nil {
		return nil, err
	}
	keys, err := loadAuthKeys(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			a.Close() // whatever was opened before the failure
		}
	}()
	if err := a.openRedis(ctx); err != nil {
		return nil, err
	}
	if err := a.openDB(); err != nil {
		return nil, err
	}
	if err := a.openQueue(); err != nil {
		return nil, err
	}
	opts = a.opts
	if err := a.ensureAdminToken(); err != nil {
		return nil, err
	}

	if a.cfgM, err = config.NewMetrics(a.reg); err != nil {
		return nil, err
	}
	a.cfg = config.NewReloader(keys.buildSnapshot, a.cfgM, log.With("part", "config"))

	healthy, err := a.newRegistry(ctx, opts, log)
	if err != nil {
		return nil, err
	}
	invM, err := a.newInventory(opts, log)
	if err != nil {
		return nil, err
	}
	if err := a.buildParts(opts, healthy, invM, log); err != nil {
		return nil, err
	}
	if err := a.buildRoomAndAPI(opts, log); err != nil {
		return nil, err
	}
	if err := a.listen(); err != nil {
		return nil, err
	}
	if len(a.embedded) > 0 {
		log.Info("embedded stand-ins in use", "parts", strings.Join(a.embedded, ","))
	}
	return a, nil
}

// ensureAdminToken generates a random admin token when none is set and the instance runs
// embedded stand-ins, and warns when the admin API is left without one; it changes only
// a.opts.AdminToken and a.tokenGenerated.
func (a *App) ensureAdminToken() error {
	if a.opts.AdminToken == "" && a.opts.embedded() {
		b := make([]byte, minProductionAdminToken)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		a.opts.AdminToken = hex.EncodeToString(b)
		a.tokenGenerated = true
	}
	if a.opts.AdminToken == "" {
		a.log.Warn("admin API refuses every request: no admin token set (SECKILL_ADMIN_TOKEN)")
	}
	return nil
}

// newRegistry checks the Nacos login and sets up the instance's Nacos service registration
// when a Nacos address is configured, and returns its health probe (nil without Nacos).
func (a *App) newRegistry(ctx context.Context, opts Options, log *slog.Logger) (func() int, error) {
	var healthy func() int
	if opts.NacosAddr != "" {
		// A wrong password is a start-up error, not a service that never gets ready.
		if err := config.CheckNacosLogin(ctx, opts.NacosAddr, opts.NacosUsername, opts.NacosPassword, opts.NacosNamespace); err != nil {
			return nil, err
		}
		host, port := splitHostPort(opts.HTTPAddr)
		a.registry = &config.NacosRegistry{
			Addr: opts.NacosAddr, ServiceName: "seckill", Group: opts.NacosGroup,
			Namespace: opts.NacosNamespace, Username: opts.NacosUsername, Password: opts.NacosPassword,
			IP: host, Port: uint64(port), InstanceID: opts.InstanceID,
			CacheDir: filepath.Join(opts.DataDir, "nacos-naming"), Log: log.With("part", "registry"), Metrics: a.cfgM,
		}
		healthy = a.registry.Healthy
	}
	return healthy, nil
}

// newInventory registers the inventory's metrics and opens the inventory store on a.rdb;
// a failure without a configured user-hash key says the key is read from Redis at start.
func (a *App) newInventory(opts Options, log *slog.Logger) (*inventory.Metrics, error) {
	invM, err := inventory.NewMetrics(a.reg)
	if err != nil {
		return nil, err
	}
	a.inv, err = inventory.New(a.rdb, inventory.Options{InstanceID: opts.InstanceID, Namespace: opts.Namespace, UserHashKey: opts.UserHashKey,
		Durability: opts.RedisDurability, Catalog: &adminStore{db: a.db}, Gone: a.activityGone, Loaded: a.activityLoaded, ReserveBatch: opts.ReserveBatch}, invM, log.With("part", "inventory"))
	if err != nil {
		if len(opts.UserHashKey) == 0 {
			return nil, fmt.Errorf("%w (without SECKILL_USER_HASH_KEY the key is read from Redis at start)", err)
		}
		return nil, err
	}
	return invM, nil
}

// buildRoomAndAPI builds the waiting room, the funnel and the HTTP API on the parts built
// before; it starts nothing and opens no listener.
func (a *App) buildRoomAndAPI(opts Options, log *slog.Logger) error {
	wm, err := waitroom.NewMetrics(a.reg)
	if err != nil {
		return err
	}
	a.room, err = waitroom.New(a.rdb, a.inv.Hasher(), a.inv, a.currentConfig, waitroom.Options{InstanceID: opts.InstanceID}, wm, log.With("part", "waitroom"))
	if err != nil {
		return err
	}
	fun := newFunnel(a.rdb, userHash64, newFunnelMetrics(a.reg), log.With("part", "funnel"), time.Now)
	fun.local = a.mini != nil
	a.api = newAPI(api{
		room: a.room, cfg: a.cfg, inv: a.inv, lim: a.lim, rec: a.rec, admin: &adminStore{db: a.db}, rdb: a.rdb,
		adminToken: a.opts.AdminToken, metrics: newHTTPMetrics(a.reg), gatherer: a.reg,
		funnel: fun,
		log:    log.With("part", "http"), now: time.Now, servesAPI: opts.has("api"),
	})
	if opts.AccessLog {
		a.api.accessLog = log.With("part", "access")
	}
	if opts.has("writer") {
		a.api.writerHealthy = a.writer.Healthy
	}
	a.api.activityCreated = a.layouts.activityCreated
	return nil
}

// currentConfig is the configuration in force, nil while none is loaded.
func (a *App) currentConfig() *config.Config {
	if s := a.cfg.Current(); s != nil {
		return s.Cfg
	}
	return nil
}

// listen opens the storefront listener (api role only), capped at MaxConns, and the admin
// listener (when AdminAddr is set).
func (a *App) listen() error {
	a.server = newServer(track(a.api.router()), writeTimeout)
	if a.opts.has("api") {
		ln, err := net.Listen("tcp", a.opts.HTTPAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", a.opts.HTTPAddr, err)
		}
		a.listener = ln
		if a.opts.MaxConns > 0 {
			a.conns = newConnLimiter(a.opts.MaxConns)
			a.conns.exempt = func(addr netip.Addr) bool {
				snap := a.cfg.Current()
				return snap != nil && snap.Cfg.TrustedProxy(addr)
			}
			a.server.ConnState = a.conns.ConnState
			a.listener = &limitListener{Listener: ln, lim: a.conns}
		}
	}
	if a.opts.AdminAddr != "" {
		a.adminSrv = newServer(a.api.adminRouter(), adminWriteTimeout)
		ln, err := net.Listen("tcp", a.opts.AdminAddr)
		if err != nil {
			return fmt.Errorf("listen %s (admin): %w", a.opts.AdminAddr, err)
		}
		a.adminLn = ln
	}
	return nil
}

// resolveConfigFile picks the watched configuration file when Nacos is not used. A default
// path that does not exist (the binary run outside the repository) falls back to the
// compiled-in default, copied once to the data dir so it can be edited there, in the embedded
// mode only (no Redis, no MySQL): that default trusts X-User-Id, so a production start
// without its config file is an error rather than a silent header-mode service. A path given
// explicitly must exist.
func (a *App) resolveConfigFile() error {
	if a.opts.NacosAddr != "" {
		a.log.Info("configuration from Nacos, no file watched", "addr", a.opts.NacosAddr, "dataId", a.opts.NacosDataID, "group", a.opts.NacosGroup)
		return nil
	}
	_, err := os.Stat(a.opts.ConfigFile)
	switch {
	case err == nil:
	case !errors.Is(err, fs.ErrNotExist) || a.opts.ConfigFileSet:
		return fmt.Errorf("config file: %w", err)
	case a.opts.RedisAddr != "" || a.opts.MySQLDSN != "":
		return fmt.Errorf("config file %s: %w; the compiled-in default is used in the embedded mode only "+
			"(no Redis, no MySQL): give SECKILL_CONFIG_FILE or SECKILL_NACOS_ADDR", a.opts.ConfigFile, err)
	default:
		p := filepath.Join(a.opts.DataDir, "seckill.yaml")
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(p, config.DefaultYAML(), 0o644); err != nil {
				return fmt.Errorf("config file: %w", err)
			}
			a.log.Info("config file not found, wrote the compiled-in default", "missing", a.opts.ConfigFile, "path", p)
		}
		a.opts.ConfigFile = p
	}
	abs, err := filepath.Abs(a.opts.ConfigFile)
	if err == nil {
		a.opts.ConfigFile = abs
	}
	a.log.Info("watching configuration file", "path", a.opts.ConfigFile)
	return nil
}

// Addr is the address the storefront HTTP server listens on ("" when the api role is off).
func (a *App) Addr() string {
	if a.listener == nil {
		return ""
	}
	return a.listener.Addr().String()
}

// AdminAddr is the address of the admin listener ("" when there is none).
func (a *App) AdminAddr() string {
	if a.adminLn == nil {
		return ""
	}
	return a.adminLn.Addr().String()
}

// AdminToken is the admin API's bearer token (generated in embedded mode when none is set).
func (a *App) AdminToken() string { return a.opts.AdminToken }

func (a *App) openRedis(ctx context.Context) error {
	addr := a.opts.RedisAddr
	if addr == "" {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("embedded redis: %w", err)
		}
		a.mini = m
		addr = m.Addr()
		a.opts.RedisDurability = inventory.Durability{} // nothing outlives the process
		a.embedded = append(a.embedded, "redis")
	}
	addrs := strings.Split(addr, ",")
	timeout := time.Second
	if a.mini != nil {
		// The embedded server runs Lua in Go, in this process: give it room on a busy machine.
		timeout = 3 * time.Second
	}
	// MaxRetries 1 sends a command again when its connection broke before the reply (on a
	// Cluster, MaxRedirects also sends it to the new master). The scripts that move units
	// are idempotent under that: transfers, confirms and failures by their ids, the
	// reservation by its attempt, bound like an idempotency key (inventory's attemptField),
	// so a retry never takes a second unit (a limiter token may be taken twice).
	uo := &redis.UniversalOptions{
		Addrs: addrs, IsClusterMode: len(addrs) > 1 && a.opts.RedisSentinelMaster == "", DisableIdentity: true,
		PoolSize: 128, MinIdleConns: 16, DialTimeout: 2 * time.Second,
		ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: 1,
	}
	if err := a.opts.redisAuth(uo); err != nil {
		return err
	}
	// With a master name, NewUniversalClient builds a failover client: it asks the
	// sentinels for the master and follows their promotions without a restart.
	a.rdb = redis.NewUniversalClient(uo)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := a.rdb.Ping(pctx).Err(); err != nil {
		// Not fatal: the service starts, is not ready until it reached Redis once, and
		// answers 503 until Redis is back (app/readiness.go).
		a.log.Warn("redis not reachable at start", "addr", addr, "err", err)
	}
	return a.checkDurability(ctx)
}

func (a *App) openDB() error {
	gcfg := &gorm.Config{Logger: logger.Default.LogMode(logger.Silent), SkipDefaultTransaction: true}
	var dial gorm.Dialector
	if a.opts.MySQLDSN == "" {
		// The embedded database lives as long as the process, like the embedded Redis.
		dir, err := os.MkdirTemp("", "seckill-embedded-")
		if err != nil {
			return fmt.Errorf("embedded database: %w", err)
		}
		a.tmpDirs = append(a.tmpDirs, dir)
		dial = sqlite.Open("file:" + filepath.Join(dir, "seckill.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
		a.embedded = append(a.embedded, "mysql")
	} else {
		dial = mysql.Open(withDSNDefaults(a.opts.MySQLDSN))
	}
	db, err := gorm.Open(dial, gcfg)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	// The whole service, writer included, stays within this pool.
	sqlDB.SetMaxOpenConns(a.opts.MySQLPool)
	sqlDB.SetMaxIdleConns(a.opts.MySQLPool)
	sqlDB.SetConnMaxLifetime(5 * time.Minute)
	if a.opts.MySQLDSN == "" {
		// SQLite takes one writer at a time.
		a.opts.MySQLPool = 1
		sqlDB.SetMaxOpenConns(1)
	}
	a.db = db
	if err := sql.Migrate(db); err != nil {
		a.log.Warn("schema not applied at start (database unreachable?)", "err", err)
	}
	return nil
}

func (a *App) openQueue() error {
	if a.opts.RocketMQNamesrv == "" {
		a.queue = order.NewMemQueue(4096, a.log.With("part", "queue"))
		a.embedded = append(a.embedded, "rocketmq")
		return nil
	}
	q, err := order.NewRocketMQ(order.RocketMQOptions{
		NameServer:    strings.Split(a.opts.RocketMQNamesrv, ","),
		Topic:         a.opts.RocketMQTopic,
		ProducerGroup: "seckill-relay-" + a.opts.RocketMQTopic,
		ConsumerGroup: "seckill-writer-" + a.opts.RocketMQTopic,
		InstanceName:  a.opts.InstanceID,
	})
	if err != nil {
		return fmt.Errorf("rocketmq: %w", err)
	}
	a.queue = q
	return nil
}

// Run starts every part and blocks until ctx is done, then shuts down gracefully.
func (a *App) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	start := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				a.log.Error("part stopped", "part", name, "err", err)
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	if err := a.startParts(start); err != nil {
		return err
	}
	serve := func(name string, srv *http.Server, ln net.Listener) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.log.Info("serving HTTP", "listener", name, "addr", ln.Addr().String())
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("http %s: %w", name, err)
			}
		}()
	}
	if a.listener != nil {
		serve("storefront", a.server, a.listener)
	}
	if a.adminLn != nil {
		serve("admin", a.adminSrv, a.adminLn)
	}

	var runErr error
	select {
	case <-ctx.Done():
		a.log.Info("seckill stopping: signal received", "drainSeconds", drainTimeout.Seconds())
	case runErr = <-errc:
		a.log.Error("seckill stopping: a part failed", "err", runErr)
	}
	defer func() {
		a.log.Info("seckill stopped", "uptimeSeconds", time.Since(a.started).Seconds(), "clean", runErr == nil)
	}()
	sctx, scancel := context.WithTimeout(context.Background(), drainTimeout)
	defer scancel()
	if a.listener != nil {
		_ = a.server.Shutdown(sctx)
	}
	if a.adminLn != nil {
		_ = a.adminSrv.Shutdown(sctx)
	}
	cancel()
	wg.Wait()
	return runErr
}

// startParts starts, through start, every background part the instance's roles and
// backing services call for, and subscribes the writer to the queue; it fails only when
// that subscription does, leaving the parts started before it running.
func (a *App) startParts(start func(name string, f func(context.Context) error)) error {
	if a.mini != nil {
		start("embedded-redis-clock", a.runMiniClock)
	}
	start("config", a.cfg.Run)
	start("config-source", a.runSource)
	if a.registry != nil {
		start("registry", a.registry.Run)
	}
	start("inventory", a.inv.Run)
	start("restores", a.api.restores.Run)
	start("limiter", a.lim.Run)
	start("reshard", a.runReshard)
	start("fallback", a.runFallbackFollow)
	if d := a.opts.RedisDurability; a.mini == nil && (d.AOF || d.Replicas > 0) {
		start("durability-check", a.runDurabilityCheck)
	}
	if a.opts.has("api") {
		start("funnel", a.api.funnel.Run)
		start("waitroom", a.room.Run)
	}
	if a.opts.has("relay") {
		start("relay", a.relay.Run)
	}
	if a.opts.has("writer") {
		if err := a.queue.Subscribe(a.writer.Handle); err != nil {
			return fmt.Errorf("writer: %w", err)
		}
	}
	if a.opts.has("reconciler") {
		start("reconciler", a.rec.Run)
	}
	if a.opts.Demo {
		start("demo", a.loadDemo)
	}
	return nil
}

// runMiniClock moves the embedded Redis's clock for key expiry: miniredis expires keys only
// when told that time has passed, and each FastForward visits every key (sorted), so its cost
// grows with the keys a load run left behind. The next move waits miniClockInterval of the
// last one's cost: the clock takes at most 1/miniClockRatio of a core (0.25 %) until the
// wait reaches miniClockMax (about 50,000 keys), then cost/2 s; a key expires at most
// miniClockMax late (every TTL the service sets only collects garbage or bounds a lock held
// for seconds).
func (a *App) runMiniClock(ctx context.Context) error {
	last := time.Now()
	for wait := miniClockMin; backoff.Sleep(ctx, wait) == nil; {
		start := time.Now()
		a.mini.FastForward(start.Sub(last))
		last = start
		wait = miniClockInterval(time.Since(start))
	}
	return nil
}

// Bounds of the embedded Redis's clock steps (runMiniClock), and the wait after a step as a
// multiple of its cost.
const (
	miniClockMin   = 100 * time.Millisecond
	miniClockMax   = 2 * time.Second
	miniClockRatio = 400
)

// miniClockInterval is the wait before the next clock step after one that took cost:
// miniClockRatio times the cost, within miniClockMin..miniClockMax.
func miniClockInterval(cost time.Duration) time.Duration {
	return min(max(miniClockRatio*cost, miniClockMin), miniClockMax)
}

// runSource feeds the reloader from Nacos, or from the watched YAML file.
func (a *App) runSource(ctx context.Context) error {
	if a.opts.NacosAddr != "" {
		src := &config.NacosSource{
			Addr: a.opts.NacosAddr, DataID: a.opts.NacosDataID, Group: a.opts.NacosGroup,
			Namespace: a.opts.NacosNamespace, Username: a.opts.NacosUsername, Password: a.opts.NacosPassword,
			CacheDir:          filepath.Join(a.opts.DataDir, "nacos"),
			LocalSnapshotPath: snapshotPath(a.opts),
			Log:               a.log.With("part", "nacos"), Metrics: a.cfgM,
		}
		return src.Run(ctx, a.cfg.Offer)
	}
	src := &config.FileSource{Path: a.opts.ConfigFile, Log: a.log.With("part", "config-file"), Metrics: a.cfgM}
	return src.Run(ctx, a.cfg.Offer)
}

// snapshotPath is where the last good configuration of the Nacos server, namespace, group and
// data id of opts is kept: one file per configuration, so a data dir reused after one of them changed
// (or shared by two deployments) never starts an instance on another source's configuration,
// which fixes the identity mode among the rest (a staging header-mode snapshot would make a
// JWT instance trust X-User-Id).
func snapshotPath(opts Options) string {
	sum := sha256.Sum256([]byte(opts.NacosAddr + "\x00" + opts.NacosNamespace + "\x00" + opts.NacosGroup + "\x00" + opts.NacosDataID))
	return filepath.Join(opts.DataDir, "config-snapshot-"+hex.EncodeToString(sum[:8])+".yaml")
}

// loadDemo creates the demo activity of the embedded mode and tells how to try it.
func (a *App) loadDemo(ctx context.Context) error {
	select {
	case <-a.cfg.Ready():
	case <-ctx.Done():
		return nil
	}
	act := inventory.Activity{ID: "demo", Stock: 100, PerUserLimit: 1, Shards: 4, OpensAt: time.Now().UTC().Truncate(time.Millisecond)}
	got, _, err := a.inv.Create(ctx, act)
	if err != nil {
		return fmt.Errorf("demo activity: %w", err)
	}
	if err := a.api.admin.saveActivity(ctx, got); err != nil {
		return fmt.Errorf("demo activity: %w", err)
	}
	// The banner is for a person at a terminal: stdout, apart from the JSON log on stderr.
	fmt.Fprint(os.Stdout, a.banner())
	return nil
}

// banner tells how to try the demo. It shows the admin token only when it was generated here.
func (a *App) banner() string {
	var b strings.Builder
	base := "http://" + displayAddr(a.Addr())
	fmt.Fprintf(&b, "\nseckill is running (embedded: %s). Try it:\n", strings.Join(a.embedded, ", "))
	fmt.Fprintf(&b, "  curl -s %s/api/v1/activities/demo\n", base)
	// Each line pastes into a shell as it is: the reservation's id goes through a variable.
	fmt.Fprintf(&b, "  curl -s -X POST -H 'X-User-Id: alice' -H 'Idempotency-Key: k1' %s/api/v1/activities/demo/reservations\n", base)
	fmt.Fprintf(&b, "  rid=$(curl -s -X POST -H 'X-User-Id: alice' -H 'Idempotency-Key: k1' %s/api/v1/activities/demo/reservations | sed -n 's/.*\"reservationId\":\"\\([^\"]*\\)\".*/\\1/p')\n", base)
	fmt.Fprintf(&b, "  curl -s -H 'X-User-Id: alice' \"%s/api/v1/reservations/$rid\"\n", base)
	if a.adminLn != nil {
		tok := "$SECKILL_ADMIN_TOKEN"
		if a.tokenGenerated {
			tok = a.opts.AdminToken
			fmt.Fprintf(&b, "Admin token (generated, changes at each start): %s\n", tok)
		}
		// Double quotes, so a shell expands $SECKILL_ADMIN_TOKEN when the line is pasted.
		fmt.Fprintf(&b, "  curl -s -H \"Authorization: Bearer %s\" http://%s/admin/v1/activities/demo/reconciliation\n", tok, displayAddr(a.AdminAddr()))
	}
	if a.opts.NacosAddr == "" {
		fmt.Fprintf(&b, "Edit %s to change limits, kill switches and canary ratios live.\n", a.opts.ConfigFile)
	}
	b.WriteString("\n")
	return b.String()
}

// Close releases every connection and embedded server. Call it after Run returned.
func (a *App) Close() {
	if a.queue != nil {
		_ = a.queue.Close()
	}
	if a.registry != nil {
		a.registry.Close()
	}
	if a.listener != nil {
		a.listener.Close()
	}
	if a.adminLn != nil {
		a.adminLn.Close()
	}
	if a.conns != nil {
		a.conns.wait()
	}
	if a.rdb != nil {
		a.rdb.Close()
	}
	if a.db != nil {
		if s, err := a.db.DB(); err == nil {
			s.Close()
		}
	}
	if a.mini != nil {
		a.mini.Close()
	}
	for _, d := range a.tmpDirs {
		os.RemoveAll(d)
	}
}

func splitHostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "127.0.0.1", 8080
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	p := 0
	fmt.Sscanf(port, "%d", &p)
	return host, p
}

func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// withDSNDefaults adds the MySQL driver settings the service relies on unless the DSN sets
// them: parsed times, interpolated parameters (one round trip per statement) and I/O
// timeouts well below the writer's lock TTL.
func withDSNDefaults(dsn string) string {
	for _, kv := range []string{"parseTime=true", "interpolateParams=true", "timeout=3s", "readTimeout=4s", "writeTimeout=4s"} {
		k := kv[:strings.IndexByte(kv, '=')+1]
		if strings.Contains(dsn, k) {
			continue
		}
		if strings.Contains(dsn, "?") {
			dsn += "&" + kv
		} else {
			dsn += "?" + kv
		}
	}
	return dsn
}
