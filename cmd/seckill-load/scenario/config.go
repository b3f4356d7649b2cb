// Package scenario is what one run of the seckill load tool plays: the crowd (users, bots,
// attempts, connections), its bounds (duration, request count, ramp), the client behaviour
// (retries, Retry-After cap, timeouts), the activity and where the independent checks read
// (MySQL, Redis). ParseFlags builds it from the command line; Defaults and Validate hold the
// defaults and the rules in one place.
package scenario

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is one run of the load tool. The zero value is not valid: Targets and Activity are
// required; Defaults fills in the rest.
type Config struct {
	// Targets are the base URLs of the seckill instances ("http://127.0.0.1:8080"). Requests go
	// round-robin over them. Only loopback hosts are allowed unless AllowRemote.
	Targets     []string
	AllowRemote bool
	// Activity is the activity id to rush.
	Activity string
	// RunID names this run in user ids (u-<RunID>-<i>) and idempotency keys. Random if empty.
	RunID string

	// Users is the number of distinct users; Bots the fraction of them (0..1) that ignore
	// Retry-After, retry at once and try again after a success until refused.
	Users int
	Bots  float64
	// Attempts is how many purchases each real (non-bot) user tries, one after another; each
	// attempt has its own Idempotency-Key. Default 1.
	Attempts int
	// Connections is the number of concurrent workers and the HTTP connections per target.
	Connections int
	// Duration and MaxRequests bound the run; it stops at whichever comes first (0 = no bound,
	// but one of them must be set), or sooner when every user made its attempts: a crowd of
	// Users, not a rate held for Duration. Requests in flight when it stops are completed.
	Duration    time.Duration
	MaxRequests int64
	// Ramp is the time over which workers start, linearly, to reach full concurrency.
	Ramp time.Duration

	// Retry makes users retry after 429 and 503, honouring Retry-After up to MaxRetryWait, and
	// after transport errors and other 5xx with a backoff, always with the same
	// Idempotency-Key. Without it a user gives up on the first such answer.
	Retry        bool
	MaxRetryWait time.Duration
	// MaxRetries bounds the requests of one attempt after the first (0 = no bound).
	MaxRetries int
	// Timeout bounds one HTTP request.
	Timeout time.Duration

	Quantity int
	Channel  string
	// JWTSecret, when set, makes every request carry Authorization: Bearer <HS256 JWT> with
	// sub = the user id, for services in auth.mode jwt. X-User-Id is sent either way.
	JWTSecret string

	// Stock and PerUserLimit are what the invariant checks compare with (0 = unknown: taken
	// from MySQL's activities row or Redis meta when those are given, else the check is skipped).
	Stock        int64
	PerUserLimit int

	// Create posts the activity before the rush with AdminToken, Stock, PerUserLimit, Shards,
	// opening at now + OpensIn and closing at now + ClosesIn (0 = no close).
	Create     bool
	AdminToken string
	// AdminURL is the base URL of the admin listener that --create posts to ("" = the first
	// target, for a server that serves both on one port).
	AdminURL string
	Shards   int
	OpensIn  time.Duration
	// OpensInSet says --opens-in was given: only then is opensAt sent, so a second run
	// against the same activity re-posts it unchanged (200) instead of a new opening (409).
	OpensInSet bool
	ClosesIn   time.Duration

	// MySQLDSN (or an open OrdersDB) enables the order checks on table orders; RedisAddr (or
	// Redis) the stock shard checks. A comma-separated RedisAddr means a cluster.
	MySQLDSN  string
	OrdersDB  *sql.DB
	RedisAddr string
	Redis     redis.UniversalClient
	// DrainTimeout is how long to wait for the orders in MySQL to reach the accepted count.
	DrainTimeout time.Duration
	// PollEvery is the period of the background GET /api/v1/activities/{id} poller
	// (0 = default 100 ms, negative = no poller).
	PollEvery time.Duration

	// Progress is the period of the progress line (0 = none); it is written to Log.
	Progress time.Duration
	Log      io.Writer
	// JSONPath, when set, is where the command writes the JSON report.
	JSONPath string

	// Transport, when set, replaces the tuned HTTP transport (tests).
	Transport http.RoundTripper
}

// Defaults fills the zero fields that have a default.
func (c *Config) Defaults() {
	if c.Connections == 0 {
		c.Connections = 64
	}
	if c.Users == 0 {
		c.Users = 1000
	}
	if c.Attempts == 0 {
		c.Attempts = 1
	}
	if c.Quantity == 0 {
		c.Quantity = 1
	}
	if c.MaxRetryWait == 0 {
		c.MaxRetryWait = 5 * time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 60 * time.Second
	}
	if c.PollEvery == 0 {
		c.PollEvery = 100 * time.Millisecond
	}
	if c.Shards == 0 {
		c.Shards = 16
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Validate reports the first problem of c, after Defaults.
func (c *Config) Validate() error {
	if len(c.Targets) == 0 {
		return errors.New("no target: give --target")
	}
	for _, t := range c.Targets {
		if err := checkTarget(t, c.AllowRemote); err != nil {
			return err
		}
	}
	if c.Create && c.AdminURL != "" {
		if err := checkTarget(c.AdminURL, c.AllowRemote); err != nil {
			return fmt.Errorf("admin: %w", err)
		}
	}
	if !validActivity(c.Activity) {
		return fmt.Errorf("activity %q: want 1 to 64 of [A-Za-z0-9_-]", c.Activity)
	}
	switch {
	case c.Users < 1:
		return fmt.Errorf("users %d: want >= 1", c.Users)
	case c.Connections < 1:
		return fmt.Errorf("connections %d: want >= 1", c.Connections)
	case c.Bots < 0 || c.Bots > 1:
		return fmt.Errorf("bots %v: want a fraction in [0, 1]", c.Bots)
	case c.Attempts < 1:
		return fmt.Errorf("attempts %d: want >= 1", c.Attempts)
	case c.Duration < 0 || c.MaxRequests < 0 || c.Ramp < 0 || c.MaxRetryWait < 0 || c.MaxRetries < 0:
		return errors.New("durations and counts must not be negative")
	case c.Duration == 0 && c.MaxRequests == 0:
		return errors.New("unbounded run: give --duration or --max-requests")
	case c.Quantity < 1:
		return fmt.Errorf("quantity %d: want >= 1", c.Quantity)
	case c.Stock < 0 || c.PerUserLimit < 0:
		return errors.New("stock and per-user-limit must not be negative")
	case c.Create && (c.Stock < 1 || c.PerUserLimit < 1):
		return errors.New("--create needs --stock and --per-user-limit")
	case c.Create && c.AdminToken == "":
		return errors.New("--create needs --admin-token (or SECKILL_ADMIN_TOKEN)")
	}
	return nil
}

func validActivity(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// checkTarget accepts an http(s) base URL whose host is localhost or a loopback IP, or any host
// when allowRemote. No name is resolved: a name other than localhost is remote.
func checkTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("target %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("target %q: want http://host:port", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("target %q: want a base URL without path or query", raw)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("target %q is not a loopback address; pass --allow-remote to load it", raw)
}

// stringList is a repeatable flag whose values may also be comma-separated.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, strings.TrimRight(p, "/"))
		}
	}
	return nil
}

// ParseFlags builds a Config from command-line arguments (without the program name) and the
// environment (SECKILL_ADMIN_TOKEN, SECKILL_JWT_SECRET). It returns flag.ErrHelp for -h.
func ParseFlags(args []string, stderr io.Writer) (Config, error) {
	var c Config
	var targets stringList
	fs := flag.NewFlagSet("seckill-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&targets, "target", "base URL of a seckill instance; repeatable or comma-separated (loopback only unless --allow-remote)")
	fs.BoolVar(&c.AllowRemote, "allow-remote", false, "allow targets that are not loopback addresses")
	fs.StringVar(&c.Activity, "activity", "", "activity id to rush (required)")
	fs.StringVar(&c.RunID, "run", "", "run id used in user ids u-<run>-<i> and idempotency keys (default random)")
	fs.IntVar(&c.Users, "users", 1000, "distinct users")
	fs.Float64Var(&c.Bots, "bots", 0, "fraction of users that ignore Retry-After and hammer")
	fs.IntVar(&c.Attempts, "attempts", 1, "purchases each real user tries, each with its own Idempotency-Key")
	fs.IntVar(&c.Connections, "connections", 64, "concurrent workers = HTTP connections per target")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "stop after this long at most; the run ends sooner when every user made its attempts (0 = no time bound)")
	fs.Int64Var(&c.MaxRequests, "max-requests", 0, "stop after this many reservation requests (0 = no bound)")
	fs.DurationVar(&c.Ramp, "ramp", 0, "time to reach full concurrency")
	fs.BoolVar(&c.Retry, "retry", true, "retry after 429/503 (honouring Retry-After) and after errors, with the same Idempotency-Key")
	fs.DurationVar(&c.MaxRetryWait, "max-retry-wait", 5*time.Second, "cap on one wait before a retry")
	fs.IntVar(&c.MaxRetries, "max-retries", 100, "retries of one attempt (0 = no bound)")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "timeout of one HTTP request")
	fs.IntVar(&c.Quantity, "quantity", 1, "units per reservation")
	fs.StringVar(&c.Channel, "channel", "", "X-Channel header (web, app, ...)")
	fs.Int64Var(&c.Stock, "stock", 0, "the activity's stock, for the checks (0 = read from MySQL/Redis if given)")
	fs.IntVar(&c.PerUserLimit, "per-user-limit", 0, "the per-user limit, for the checks (0 = read from MySQL/Redis if given)")
	fs.BoolVar(&c.Create, "create", false, "create the activity first through the admin API")
	fs.StringVar(&c.AdminToken, "admin-token", "", "admin bearer token for --create (default $SECKILL_ADMIN_TOKEN)")
	fs.StringVar(&c.AdminURL, "admin", "http://127.0.0.1:9090", "base URL of the service's admin listener (SECKILL_ADMIN_ADDR), for --create")
	fs.IntVar(&c.Shards, "shards", 16, "stock shards of a created activity")
	fs.DurationVar(&c.OpensIn, "opens-in", 0, "a created activity opens this long after now (may be negative)")
	fs.DurationVar(&c.ClosesIn, "closes-in", 0, "a created activity closes this long after now (0 = never)")
	fs.StringVar(&c.MySQLDSN, "mysql-dsn", "", "MySQL DSN for the order checks (user:pass@tcp(host:3306)/db)")
	fs.StringVar(&c.RedisAddr, "redis-addr", "", "Redis address for the stock shard checks (comma-separated = cluster)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 60*time.Second, "wait this long for the orders to reach the accepted count")
	fs.DurationVar(&c.PollEvery, "poll", 100*time.Millisecond, "period of the remaining-stock poller (negative = off)")
	fs.DurationVar(&c.Progress, "progress", time.Second, "period of the progress line (0 = none)")
	fs.StringVar(&c.JSONPath, "json", "", "write the JSON report to this file")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { c.OpensInSet = c.OpensInSet || f.Name == "opens-in" })
	c.Targets = targets
	c.AdminURL = strings.TrimRight(c.AdminURL, "/")
	if c.AdminToken == "" {
		c.AdminToken = os.Getenv("SECKILL_ADMIN_TOKEN")
	}
	c.JWTSecret = os.Getenv("SECKILL_JWT_SECRET")
	c.Log = stderr
	c.Defaults()
	return c, c.Validate()
}
