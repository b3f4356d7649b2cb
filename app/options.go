package app

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/seckill/seckill/inventory"
)

// DefaultMaxConns is the default of Options.MaxConns.
const DefaultMaxConns = 4096

// Options configure the process. They are read once at start (flags, or the same-named
// SECKILL_* environment variables); everything hot lives in the YAML configuration instead.
// optionSpecs below lists every one with its variable, default and parser.
type Options struct {
	HTTPAddr string // SECKILL_HTTP_ADDR: storefront API and health
	// AdminAddr (SECKILL_ADMIN_ADDR) serves /admin/v1 and /metrics; "" (the value off)
	// serves neither.
	AdminAddr string
	// MaxConns (SECKILL_MAX_CONNS) caps the storefront's open connections; 0 = no cap.
	// One client address holds at most an eighth of them (see connLimiter).
	MaxConns  int
	RedisAddr string // SECKILL_REDIS_ADDR: "" embedded; a comma-separated list is a cluster (or the sentinels)
	// RedisSentinelMaster (SECKILL_REDIS_SENTINEL_MASTER) is the master name of a
	// Sentinel-managed Redis; RedisAddr then lists the sentinels. "" = no Sentinel.
	RedisSentinelMaster string
	// RedisUsername (SECKILL_REDIS_USERNAME) and RedisPassword (SECKILL_REDIS_PASSWORD,
	// environment only) authenticate to Redis (ACL user, or the requirepass password with no
	// user); RedisSentinelPassword (SECKILL_REDIS_SENTINEL_PASSWORD, environment only) to the
	// sentinels.
	RedisUsername, RedisPassword, RedisSentinelPassword string
	// RedisTLS (SECKILL_REDIS_TLS) dials Redis (and the sentinels) over TLS, verifying the
	// server against the system roots or RedisTLSCAFile (SECKILL_REDIS_TLS_CA_FILE, PEM).
	RedisTLS       bool
	RedisTLSCAFile string
	// RedisDurability (SECKILL_REDIS_DURABILITY) is what a reservation must reach in Redis
	// before its 202 (inventory.Durability; docs/DESIGN.md "Durability"). The zero value is
	// none; ParseOptions defaults to aof outside embedded mode. RedisWaitTimeout
	// (SECKILL_REDIS_WAIT_TIMEOUT) is WAIT's timeout in mode replicas:N.
	RedisDurability  inventory.Durability
	RedisWaitTimeout time.Duration
	MySQLDSN         string // SECKILL_MYSQL_DSN: "" embedded SQLite
	RocketMQNamesrv  string // SECKILL_ROCKETMQ_NAMESRV: "" in-process queue
	RocketMQTopic    string // SECKILL_ROCKETMQ_TOPIC
	NacosAddr        string // SECKILL_NACOS_ADDR: "" the watched YAML file
	NacosDataID      string // SECKILL_NACOS_DATA_ID
	NacosGroup       string // SECKILL_NACOS_GROUP
	NacosNamespace   string // SECKILL_NACOS_NAMESPACE: namespace id; "" public
	NacosUsername    string // SECKILL_NACOS_USERNAME: "" when the server runs without auth
	NacosPassword    string // SECKILL_NACOS_PASSWORD
	ConfigFile       string // SECKILL_CONFIG_FILE
	// ConfigFileSet is true when ConfigFile was given (flag or variable); a default path that
	// does not exist then falls back to the compiled-in configuration.
	ConfigFileSet bool
	AdminToken    string // SECKILL_ADMIN_TOKEN
	InstanceID    string // SECKILL_INSTANCE_ID
	DataDir       string // SECKILL_DATA_DIR: local config snapshot and SDK caches
	Roles         string // SECKILL_ROLES: any of api,relay,writer,reconciler
	MySQLPool     int    // SECKILL_MYSQL_POOL: the order writer's connection pool
	// WriterRate (SECKILL_WRITER_RATE) is the orders per second the writer may commit; 0 = no cap.
	WriterRate float64
	// ReserveBatch (SECKILL_RESERVE_BATCH) bounds the reservations of one activity (on a
	// cluster, of one stock shard) sent in one Redis call (group commit); 1 sends each alone;
	// 0: the inventory's default.
	ReserveBatch int
	Demo         bool   // SECKILL_DEMO: load the demo activity at start (default in embedded mode)
	Namespace    string // SECKILL_NAMESPACE: keeps deployments sharing one Redis apart
	// RelayClaimIdle (SECKILL_RELAY_CLAIM_IDLE) is how long a journal entry read by a relay that
	// died stays pending before another relay claims it (zero: the relay's default, 30 s).
	RelayClaimIdle time.Duration
	// JWTHS256Secret (SECKILL_JWT_HS256_SECRET, environment only: a flag would show in ps) and
	// JWTRS256PublicKeyFile (SECKILL_JWT_RS256_PUBLIC_KEY_FILE) are the key material of auth
	// mode jwt, fixed at start-up; at most one is set.
	JWTHS256Secret        string
	JWTRS256PublicKeyFile string
	// UserHashKey (SECKILL_USER_HASH_KEY, environment only, hex, at least 32 bytes) keys the
	// user hash; the same on every instance. Nil: the key kept in Redis (created on first start).
	UserHashKey []byte
	// StandIns (SECKILL_STAND_INS) names the embedded stand-ins (redis, mysql, rocketmq)
	// allowed beside a real backing service; ParseOptions refuses a partial set otherwise.
	StandIns string
	// LogLevel (SECKILL_LOG_LEVEL) is the least level logged: debug, info, warn or error.
	LogLevel slog.Level
	// AccessLog (SECKILL_ACCESS_LOG) logs one line per HTTP request on both listeners.
	AccessLog bool

	// durabilityCheckEvery is how often a running instance reads again what the Redis
	// masters provide for RedisDurability (runDurabilityCheck); zero: every 10 s. No flag:
	// tests shorten it.
	durabilityCheckEvery time.Duration
}

// minProductionAdminToken is the shortest admin token accepted outside embedded mode, in bytes.
const minProductionAdminToken = 32

// UsageError is a flag or environment value that does not parse or validate: the process
// should exit with status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// optionSpec is one start-up option: its flag, its environment variable, the default shown in
// --help and docs/configuration.md, and a strict parser that stores the value.
type optionSpec struct {
	flag, env string
	def       string // the value parsed when neither the flag nor the variable is set
	shown     string // the default as documented ("" = def)
	usage     string
	isBool    bool
	set       func(o *Options, v string) error
}

// optionSpecs lists every start-up option. getenv computes the defaults that depend on the
// environment (data dir, instance id).
func optionSpecs(getenv func(string) string) []optionSpec {
	host, _ := os.Hostname()
	str := func(p func(o *Options) *string) func(*Options, string) error {
		return func(o *Options, v string) error { *p(o) = v; return nil }
	}
	return []optionSpec{
		{flag: "http-addr", env: "SECKILL_HTTP_ADDR", def: ":8080", usage: "storefront listen address: the API, /healthz and /readyz",
			set: func(o *Options, v string) error { o.HTTPAddr = v; return checkAddr(v, false) }},
		{flag: "admin-addr", env: "SECKILL_ADMIN_ADDR", def: "127.0.0.1:9090", usage: "admin listen address: /admin/v1 and /metrics (off = neither is served)",
			set: func(o *Options, v string) error {
				// An empty variable counts as unset, so "off" is the value that disables it.
				if v == "off" {
					o.AdminAddr = ""
					return nil
				}
				o.AdminAddr = v
				return checkAddr(v, true)
			}},
		{flag: "max-conns", env: "SECKILL_MAX_CONNS", def: strconv.Itoa(DefaultMaxConns), usage: "most open storefront connections, an eighth of them per client address; past it idle ones are closed, then new ones get 503 (0 = no cap)",
			set: func(o *Options, v string) error { return parseInt(v, 0, &o.MaxConns) }},
		{flag: "redis-addr", env: "SECKILL_REDIS_ADDR", shown: "embedded", usage: "Redis host:port; a comma-separated list is a Redis Cluster; empty = embedded",
			set: func(o *Options, v string) error { o.RedisAddr = v; return checkAddrList(v, false) }},
		{flag: "redis-sentinel-master", env: "SECKILL_REDIS_SENTINEL_MASTER", usage: "master name of a Sentinel-managed Redis; --redis-addr then lists the sentinels (host:port,...)",
			set: str(func(o *Options) *string { return &o.RedisSentinelMaster })},
		{flag: "redis-username", env: "SECKILL_REDIS_USERNAME", usage: "Redis ACL user (its password comes from SECKILL_REDIS_PASSWORD, environment only; the sentinels' from SECKILL_REDIS_SENTINEL_PASSWORD)",
			set: str(func(o *Options) *string { return &o.RedisUsername })},
		{flag: "redis-tls", env: "SECKILL_REDIS_TLS", def: "false", isBool: true, usage: "dial Redis and the sentinels over TLS (true or false)",
			set: func(o *Options, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return errors.New("want true or false")
				}
				o.RedisTLS = b
				return nil
			}},
		{flag: "redis-tls-ca-file", env: "SECKILL_REDIS_TLS_CA_FILE", shown: "the system roots", usage: "PEM file of the CA that signed the Redis servers' certificates (with --redis-tls)",
			set: str(func(o *Options) *string { return &o.RedisTLSCAFile })},
		{flag: "redis-durability", env: "SECKILL_REDIS_DURABILITY", shown: "aof (none in embedded mode)", usage: "what a reservation must reach in Redis before its 202: none, aof (every master runs appendonly yes), replicas:N (WAIT for N replicas after every write), or aof+replicas:N; the start is refused when Redis does not provide it",
			set: func(o *Options, v string) error {
				if v == "" { // unset: decided after parsing (aof with a Redis, none embedded)
					o.RedisDurability = inventory.Durability{}
					return nil
				}
				d, err := inventory.ParseDurability(v)
				o.RedisDurability = d
				return err
			}},
		{flag: "redis-wait-timeout", env: "SECKILL_REDIS_WAIT_TIMEOUT", def: "250ms", usage: "in mode replicas:N, how long a write waits for its replicas before the answer is 503 OUTCOME_UNKNOWN (10ms..500ms)",
			set: func(o *Options, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d < 10*time.Millisecond || d > 500*time.Millisecond {
					return errors.New("want a duration in 10ms..500ms, e.g. 250ms")
				}
				o.RedisWaitTimeout = d
				return nil
			}},
		{flag: "mysql-dsn", env: "SECKILL_MYSQL_DSN", shown: "embedded SQLite", usage: "MySQL DSN, e.g. user:pass@tcp(127.0.0.1:3306)/seckill; empty = embedded SQLite",
			set: func(o *Options, v string) error {
				o.MySQLDSN = v
				if v == "" {
					return nil
				}
				if _, err := mysqldrv.ParseDSN(v); err != nil {
					return fmt.Errorf("want a MySQL DSN like user:pass@tcp(host:3306)/db (%v)", err)
				}
				return nil
			}},
		{flag: "rocketmq-namesrv", env: "SECKILL_ROCKETMQ_NAMESRV", shown: "in-process queue", usage: "RocketMQ name servers, ip:port[,ip:port] (IP addresses: the client takes no host names); empty = in-process queue",
			set: func(o *Options, v string) error { o.RocketMQNamesrv = v; return checkAddrList(v, true) }},
		{flag: "rocketmq-topic", env: "SECKILL_ROCKETMQ_TOPIC", def: "seckill-reservations", usage: "RocketMQ topic of reservations",
			set: func(o *Options, v string) error { o.RocketMQTopic = v; return nonEmpty(v) }},
		{flag: "nacos-addr", env: "SECKILL_NACOS_ADDR", shown: "the YAML file", usage: "Nacos host:port (gRPC on port+1000); empty = the YAML file",
			set: func(o *Options, v string) error { o.NacosAddr = v; return checkAddrList(v, false) }},
		{flag: "nacos-data-id", env: "SECKILL_NACOS_DATA_ID", def: "seckill.yaml", usage: "Nacos data id of the configuration",
			set: func(o *Options, v string) error { o.NacosDataID = v; return nonEmpty(v) }},
		{flag: "nacos-group", env: "SECKILL_NACOS_GROUP", def: "SECKILL", usage: "Nacos group of the configuration",
			set: func(o *Options, v string) error { o.NacosGroup = v; return nonEmpty(v) }},
		{flag: "nacos-namespace", env: "SECKILL_NACOS_NAMESPACE", shown: "public", usage: "Nacos namespace id of the configuration and the service registration; empty = public",
			set: str(func(o *Options) *string { return &o.NacosNamespace })},
		{flag: "nacos-username", env: "SECKILL_NACOS_USERNAME", usage: "Nacos user when the server runs with auth (its password comes from SECKILL_NACOS_PASSWORD, environment only); a refused login stops the start",
			set: str(func(o *Options) *string { return &o.NacosUsername })},
		{flag: "config-file", env: "SECKILL_CONFIG_FILE", def: "config/seckill.yaml", usage: "watched YAML configuration when Nacos is not used; if the default path is missing, the compiled-in default is copied to the data dir and watched there",
			set: func(o *Options, v string) error { o.ConfigFile = v; return nonEmpty(v) }},
		{flag: "admin-token", env: "SECKILL_ADMIN_TOKEN", shown: "generated in embedded mode", usage: "bearer token of /admin/v1; at least 32 bytes outside embedded mode; printed at start only when generated",
			set: str(func(o *Options) *string { return &o.AdminToken })},
		{flag: "instance-id", env: "SECKILL_INSTANCE_ID", def: fmt.Sprintf("%s-%d", host, os.Getpid()), shown: "host-pid", usage: "instance id (heartbeats, consumer names)",
			set: func(o *Options, v string) error { o.InstanceID = v; return nonEmpty(v) }},
		{flag: "data-dir", env: "SECKILL_DATA_DIR", def: DefaultDataDir(getenv), shown: "$XDG_STATE_HOME/seckill, else ~/.local/state/seckill", usage: "last good Nacos snapshot, SDK caches and the copied default config; keep it across restarts (not the test-server cache ~/.cache/seckill)",
			set: func(o *Options, v string) error { o.DataDir = v; return nonEmpty(v) }},
		{flag: "roles", env: "SECKILL_ROLES", def: "api,relay,writer,reconciler", usage: "parts to run in this process, comma-separated: api, relay, writer, reconciler",
			set: func(o *Options, v string) error { o.Roles = v; return checkRoles(v) }},
		{flag: "mysql-pool", env: "SECKILL_MYSQL_POOL", def: "8", usage: "most MySQL connections the process opens (writer, admin and reconciliation share them)",
			set: func(o *Options, v string) error { return parseInt(v, 1, &o.MySQLPool) }},
		{flag: "writer-rate", env: "SECKILL_WRITER_RATE", def: "5000", usage: "orders per second the writer may commit (0 = no cap)",
			set: func(o *Options, v string) error {
				var n int
				err := parseInt(v, 0, &n)
				o.WriterRate = float64(n)
				return err
			}},
		{flag: "reserve-batch", env: "SECKILL_RESERVE_BATCH", def: strconv.Itoa(inventory.DefaultReserveBatch), usage: "most reservations sent in one Redis call: those of one activity (on a cluster, of one stock shard) that arrive while its previous call is in flight (1 = each alone)",
			set: func(o *Options, v string) error {
				if err := parseInt(v, 1, &o.ReserveBatch); err != nil {
					return err
				}
				if o.ReserveBatch > 256 {
					return errors.New("want an integer in 1..256")
				}
				return nil
			}},
		{flag: "relay-claim-idle", env: "SECKILL_RELAY_CLAIM_IDLE", def: "30s", usage: "a journal entry left pending by a dead relay is claimed by another after this",
			set: func(o *Options, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d <= 0 {
					return errors.New("want a duration > 0, e.g. 30s")
				}
				o.RelayClaimIdle = d
				return nil
			}},
		{flag: "namespace", env: "SECKILL_NAMESPACE", usage: "suffix of the instance-wide Redis keys (work lists, heartbeats, events) when deployments share one Redis",
			set: func(o *Options, v string) error {
				o.Namespace = v
				if v != "" && sanitize(v) != v {
					return errors.New("want letters, digits, - and _ only")
				}
				return nil
			}},
		{flag: "jwt-rs256-public-key-file", env: "SECKILL_JWT_RS256_PUBLIC_KEY_FILE", usage: "PEM file of the RS256 public key verifying JWTs (auth mode jwt), read once at start; the HS256 secret comes from SECKILL_JWT_HS256_SECRET (environment only, at least 32 bytes)",
			set: str(func(o *Options) *string { return &o.JWTRS256PublicKeyFile })},
		{flag: "stand-ins", env: "SECKILL_STAND_INS", usage: "embedded stand-ins allowed beside a real service, comma-separated: redis, mysql, rocketmq; with any of Redis, MySQL, RocketMQ or Nacos set, an unset other one stops the start unless named here (their state is lost at exit)",
			set: func(o *Options, v string) error { o.StandIns = v; return checkStandIns(v) }},
		{flag: "log-level", env: "SECKILL_LOG_LEVEL", def: "info", usage: "least level logged (one JSON stream on stderr; the RocketMQ and Nacos clients' lines at warn and above only): debug, info, warn or error",
			set: func(o *Options, v string) error {
				switch strings.ToLower(v) {
				case "debug", "info", "warn", "error":
					return o.LogLevel.UnmarshalText([]byte(v))
				}
				return errors.New("want debug, info, warn or error")
			}},
		{flag: "access-log", env: "SECKILL_ACCESS_LOG", def: "false", isBool: true, usage: "log one line per HTTP request (method, route, status, duration, client) on both listeners (true or false)",
			set: func(o *Options, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return errors.New("want true or false")
				}
				o.AccessLog = b
				return nil
			}},
		{flag: "demo", env: "SECKILL_DEMO", shown: "on in embedded mode", isBool: true, usage: "load the demo activity at start (true or false)",
			set: func(o *Options, v string) error {
				b, err := strconv.ParseBool(v)
				if err != nil {
					return errors.New("want true or false")
				}
				o.Demo = b
				return nil
			}},
	}
}

// DefaultDataDir is the data dir used when none is given: $XDG_STATE_HOME/seckill, else
// ~/.local/state/seckill, else a folder under the system temp dir. It is kept apart from
// ~/.cache/seckill, where the test scripts cache their server builds.
func DefaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "seckill")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "seckill")
	}
	return filepath.Join(os.TempDir(), "seckill-state")
}

// ParseOptions reads flags from args, each defaulting to its environment variable, strictly:
// a value that does not parse is a *UsageError naming the flag or variable and the value.
// -h and --help print the usage to out and return flag.ErrHelp.
func ParseOptions(args []string, getenv func(string) string, out io.Writer) (Options, error) {
	specs := optionSpecs(getenv)
	var o Options
	fs := flag.NewFlagSet("seckill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	// Defaults first, then the environment, then the flags: later ones win.
	for _, s := range specs {
		if s.def != "" || !s.isBool {
			if err := s.set(&o, s.def); err != nil {
				return o, fmt.Errorf("default of --%s %q: %w", s.flag, s.def, err)
			}
		}
	}
	for _, s := range specs {
		if v, ok := lookup(getenv, s.env); ok {
			if err := s.set(&o, v); err != nil {
				return o, &UsageError{fmt.Errorf("%s=%q: %w", s.env, v, err)}
			}
		}
	}
	for _, s := range specs {
		s := s
		set := func(v string) error { return s.set(&o, v) }
		if s.isBool {
			fs.BoolFunc(s.flag, s.usage, set)
		} else {
			fs.Func(s.flag, s.usage, set)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(out, specs)
			return o, err
		}
		return o, &UsageError{err}
	}
	if fs.NArg() > 0 {
		return o, &UsageError{fmt.Errorf("unexpected arguments %q (every option is a --flag)", fs.Args())}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	_, demoEnv := lookup(getenv, "SECKILL_DEMO")
	if o.RedisAddr == "" && o.MySQLDSN == "" && !demoEnv && !given["demo"] {
		o.Demo = true
	}
	o.JWTHS256Secret = getenv("SECKILL_JWT_HS256_SECRET")
	o.RedisPassword = getenv("SECKILL_REDIS_PASSWORD")
	o.RedisSentinelPassword = getenv("SECKILL_REDIS_SENTINEL_PASSWORD")
	_, durEnv := lookup(getenv, "SECKILL_REDIS_DURABILITY")
	switch {
	case !durEnv && !given["redis-durability"] && o.RedisAddr != "":
		// The production default: see docs/durability.md.
		o.RedisDurability = inventory.Durability{AOF: true}
	case o.RedisAddr == "" && o.RedisDurability != (inventory.Durability{}):
		return o, &UsageError{fmt.Errorf("SECKILL_REDIS_DURABILITY (--redis-durability) %s needs a real Redis (SECKILL_REDIS_ADDR); the embedded one keeps nothing (mode none)", o.RedisDurability)}
	}
	o.RedisDurability.Timeout = o.RedisWaitTimeout
	if o.RedisSentinelMaster != "" && o.RedisAddr == "" {
		return o, &UsageError{errors.New("SECKILL_REDIS_SENTINEL_MASTER (--redis-sentinel-master) needs the sentinels in SECKILL_REDIS_ADDR")}
	}
	o.NacosPassword = getenv("SECKILL_NACOS_PASSWORD")
	if v, ok := lookup(getenv, "SECKILL_USER_HASH_KEY"); ok {
		k, err := hex.DecodeString(strings.TrimSpace(v))
		if err != nil || len(k) < inventory.MinUserHashKey {
			// The value is a secret: never echo it.
			return o, &UsageError{fmt.Errorf("SECKILL_USER_HASH_KEY: want at least %d bytes as hex (e.g. openssl rand -hex 32)", inventory.MinUserHashKey)}
		}
		o.UserHashKey = k
	}
	_, cfgEnv := lookup(getenv, "SECKILL_CONFIG_FILE")
	o.ConfigFileSet = cfgEnv || given["config-file"]
	if err := o.checkAdminToken(); err != nil {
		return o, &UsageError{err}
	}
	if err := o.checkStandIns(); err != nil {
		return o, &UsageError{err}
	}
	return o, nil
}

// standIns are the backing services that have an embedded stand-in whose state lives only as
// long as the process, with the variable that replaces each and what would be lost.
var standIns = []struct{ name, env, loses string }{
	{"redis", "SECKILL_REDIS_ADDR", "stock, reservations and journals would live in process memory"},
	{"mysql", "SECKILL_MYSQL_DSN", "orders would go to a temporary SQLite deleted at exit"},
	{"rocketmq", "SECKILL_ROCKETMQ_NAMESRV", "reservations would travel through an in-process queue"},
}

// checkStandIns refuses a process that talks to a real backing service while another one is
// left to its embedded stand-in, unless that stand-in is named in StandIns: a partial set is
// a forgotten variable far more often than a wish.
func (o Options) checkStandIns() error {
	set := map[string]bool{"redis": o.RedisAddr != "", "mysql": o.MySQLDSN != "", "rocketmq": o.RocketMQNamesrv != ""}
	var real []string
	for _, s := range standIns {
		if set[s.name] {
			real = append(real, s.env)
		}
	}
	if o.NacosAddr != "" {
		real = append(real, "SECKILL_NACOS_ADDR")
	}
	if len(real) == 0 {
		return nil
	}
	allowed := map[string]bool{}
	for _, n := range strings.Split(o.StandIns, ",") {
		allowed[strings.TrimSpace(n)] = true
	}
	verb := "is"
	if len(real) > 1 {
		verb = "are"
	}
	for _, s := range standIns {
		if !set[s.name] && !allowed[s.name] {
			return fmt.Errorf("%s is unset while %s %s set: %s; set it, or name the stand-in with SECKILL_STAND_INS=%s (--stand-ins)",
				s.env, strings.Join(real, " and "), verb, s.loses, s.name)
		}
	}
	return nil
}

func checkStandIns(v string) error {
	if v == "" {
		return nil
	}
	for _, n := range strings.Split(v, ",") {
		switch strings.TrimSpace(n) {
		case "redis", "mysql", "rocketmq":
		default:
			return fmt.Errorf("unknown stand-in %q: want a comma-separated subset of redis, mysql, rocketmq", n)
		}
	}
	return nil
}

// lookup reads an environment variable; an empty value counts as unset.
func lookup(getenv func(string) string, k string) (string, bool) {
	v := getenv(k)
	return v, v != ""
}

// embedded reports whether the process runs without real backing services for hot state
// and configuration: then a generated admin token and header identities are acceptable.
func (o Options) embedded() bool { return o.RedisAddr == "" && o.NacosAddr == "" }

// checkAdminToken refuses a short admin token outside embedded mode.
func (o Options) checkAdminToken() error {
	if o.embedded() || o.AdminToken == "" || len(o.AdminToken) >= minProductionAdminToken {
		return nil
	}
	return fmt.Errorf("SECKILL_ADMIN_TOKEN (--admin-token): %d bytes, want at least %d outside embedded mode (e.g. openssl rand -hex 32)",
		len(o.AdminToken), minProductionAdminToken)
}

// writeUsage prints every option with its variable and default.
func writeUsage(w io.Writer, specs []optionSpec) {
	fmt.Fprintf(w, "Usage: seckill [--flag=value ...]\n\n"+
		"Runs the flash-sale service. Every flag may also be set by its environment variable;\n"+
		"a flag wins over its variable. Without Redis, MySQL, RocketMQ or Nacos settings the\n"+
		"service starts in embedded mode (in-process stand-ins, demo activity).\n\n"+
		"  seckill --version             print the build and exit\n"+
		"  seckill config check FILE     validate a configuration as a live edit would (exit 1 if refused)\n"+
		"  seckill config publish [--force] FILE  check FILE, then publish it to the Nacos data id (an\n"+
		"                                existing different one only with --force; it shows the diff)\n"+
		"  seckill migrate [--mysql-dsn=DSN]  apply the MySQL schema files (table schema_migrations)\n\n")
	for _, s := range specs {
		fmt.Fprintf(w, "  --%s  (%s, default %s)\n        %s\n", s.flag, s.env, s.defaultText(), s.usage)
	}
	fmt.Fprintf(w, "\nEnvironment only (secrets never go in flags, which show in ps):\n"+
		"  SECKILL_USER_HASH_KEY      hex, at least 32 bytes (openssl rand -hex 32): keys the user hash in Redis keys;\n"+
		"                             the same on every instance; set it in production (unset: a key kept in Redis)\n"+
		"  SECKILL_NACOS_PASSWORD     password of --nacos-username\n"+
		"  SECKILL_JWT_HS256_SECRET   HS256 secret of auth mode jwt, at least 32 bytes\n")
}

func (s optionSpec) defaultText() string {
	switch {
	case s.shown != "":
		return s.shown
	case s.def != "":
		return s.def
	}
	return "empty"
}

// FlagTable is the table of flags of docs/configuration.md, built from the same list as --help.
func FlagTable() string {
	var b strings.Builder
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	for _, s := range optionSpecs(func(string) string { return "" }) {
		def := s.defaultText()
		if s.shown == "" && s.def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", s.flag, s.env, def, s.usage)
	}
	return b.String()
}

func parseInt(v string, min int, dst *int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < min || strings.TrimSpace(v) != v {
		return fmt.Errorf("want an integer >= %d", min)
	}
	*dst = n
	return nil
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("want a non-empty value")
	}
	return nil
}

// checkAddr accepts host:port or :port with a numeric port (0 = any free port); empty only
// when allowEmpty.
func checkAddr(v string, allowEmpty bool) error {
	if v == "" && allowEmpty {
		return nil
	}
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		var p int
		if p, err = strconv.Atoi(port); err == nil && (p < 0 || p > 65535) {
			err = errors.New("port out of range")
		}
	}
	if err != nil {
		return errors.New("want host:port or :port")
	}
	return nil
}

// checkAddrList accepts "" or a comma-separated list of host:port with a port in 1..65535;
// ipOnly wants IP addresses as hosts.
func checkAddrList(v string, ipOnly bool) error {
	if v == "" {
		return nil
	}
	want := "want host:port[,host:port]"
	if ipOnly {
		want = "want ip:port[,ip:port]"
	}
	for _, a := range strings.Split(v, ",") {
		host, port, err := net.SplitHostPort(a)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p < 1 || p > 65535 || host == "" {
			return errors.New(want)
		}
		if _, err := netip.ParseAddr(host); ipOnly && err != nil {
			return errors.New(want)
		}
	}
	return nil
}

func checkRoles(v string) error {
	for _, r := range strings.Split(v, ",") {
		switch strings.TrimSpace(r) {
		case "api", "relay", "writer", "reconciler":
		default:
			return fmt.Errorf("unknown role %q: want a comma-separated subset of api, relay, writer, reconciler", r)
		}
	}
	return nil
}

func (o Options) has(role string) bool {
	for _, r := range strings.Split(o.Roles, ",") {
		if strings.TrimSpace(r) == role {
			return true
		}
	}
	return false
}
