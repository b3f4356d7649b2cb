package app

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Options configure the process. They are read once at start (flags, or the same-named
// SECKILL_* environment variables); everything hot lives in the YAML configuration instead.
type Options struct {
	HTTPAddr        string // SECKILL_HTTP_ADDR
	RedisAddr       string // SECKILL_REDIS_ADDR: "" embedded; a comma-separated list is a cluster
	MySQLDSN        string // SECKILL_MYSQL_DSN: "" embedded SQLite
	RocketMQNamesrv string // SECKILL_ROCKETMQ_NAMESRV: "" in-process queue
	RocketMQTopic   string // SECKILL_ROCKETMQ_TOPIC
	NacosAddr       string // SECKILL_NACOS_ADDR: "" the watched YAML file
	NacosDataID     string // SECKILL_NACOS_DATA_ID
	NacosGroup      string // SECKILL_NACOS_GROUP
	NacosNamespace  string // SECKILL_NACOS_NAMESPACE: namespace id; "" public
	NacosUsername   string // SECKILL_NACOS_USERNAME: "" when the server runs without auth
	NacosPassword   string // SECKILL_NACOS_PASSWORD
	ConfigFile      string // SECKILL_CONFIG_FILE
	AdminToken      string // SECKILL_ADMIN_TOKEN
	InstanceID      string // SECKILL_INSTANCE_ID
	DataDir         string // SECKILL_DATA_DIR: local config snapshot and SDK caches
	Roles           string // SECKILL_ROLES: any of api,relay,writer,reconciler
	MySQLPool       int    // SECKILL_MYSQL_POOL: the order writer's connection pool
	WriterRate      float64
	Demo            bool   // SECKILL_DEMO: load the demo activity at start (default in embedded mode)
	Namespace       string // SECKILL_NAMESPACE: keeps deployments sharing one Redis apart
	// RelayClaimIdle (SECKILL_RELAY_CLAIM_IDLE) is how long a journal entry read by a relay that
	// died stays pending before another relay claims it (zero: the relay's default, 30 s).
	RelayClaimIdle time.Duration
}

// ParseOptions reads flags from args, each defaulting to its environment variable.
func ParseOptions(args []string, getenv func(string) string) (Options, error) {
	fs := flag.NewFlagSet("seckill", flag.ContinueOnError)
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	host, _ := os.Hostname()
	var o Options
	fs.StringVar(&o.HTTPAddr, "http-addr", env("SECKILL_HTTP_ADDR", ":8080"), "HTTP listen address")
	fs.StringVar(&o.RedisAddr, "redis-addr", env("SECKILL_REDIS_ADDR", ""), "Redis address; a comma-separated list means a cluster; empty = embedded")
	fs.StringVar(&o.MySQLDSN, "mysql-dsn", env("SECKILL_MYSQL_DSN", ""), "MySQL DSN; empty = embedded SQLite")
	fs.StringVar(&o.RocketMQNamesrv, "rocketmq-namesrv", env("SECKILL_ROCKETMQ_NAMESRV", ""), "RocketMQ name servers (ip:port, comma-separated); empty = in-process queue")
	fs.StringVar(&o.RocketMQTopic, "rocketmq-topic", env("SECKILL_ROCKETMQ_TOPIC", "seckill-reservations"), "RocketMQ topic of reservations")
	fs.StringVar(&o.NacosAddr, "nacos-addr", env("SECKILL_NACOS_ADDR", ""), "Nacos server host:port; empty = the YAML file")
	fs.StringVar(&o.NacosDataID, "nacos-data-id", env("SECKILL_NACOS_DATA_ID", "seckill.yaml"), "Nacos data id")
	fs.StringVar(&o.NacosGroup, "nacos-group", env("SECKILL_NACOS_GROUP", "SECKILL"), "Nacos group")
	fs.StringVar(&o.NacosNamespace, "nacos-namespace", env("SECKILL_NACOS_NAMESPACE", ""), "Nacos namespace id; empty = public")
	fs.StringVar(&o.NacosUsername, "nacos-username", env("SECKILL_NACOS_USERNAME", ""), "Nacos user when the server runs with auth")
	fs.StringVar(&o.NacosPassword, "nacos-password", env("SECKILL_NACOS_PASSWORD", ""), "password of the Nacos user (prefer the environment variable)")
	fs.StringVar(&o.ConfigFile, "config-file", env("SECKILL_CONFIG_FILE", "config/seckill.yaml"), "YAML configuration file (when Nacos is not used)")
	fs.StringVar(&o.AdminToken, "admin-token", env("SECKILL_ADMIN_TOKEN", ""), "bearer token of the admin API (embedded mode: generated when empty)")
	fs.StringVar(&o.InstanceID, "instance-id", env("SECKILL_INSTANCE_ID", fmt.Sprintf("%s-%d", host, os.Getpid())), "instance id")
	fs.StringVar(&o.DataDir, "data-dir", env("SECKILL_DATA_DIR", ""), "directory for the local config snapshot and client caches (default: a folder under the system temp dir)")
	fs.StringVar(&o.Roles, "roles", env("SECKILL_ROLES", "api,relay,writer,reconciler"), "parts to run in this process")
	fs.IntVar(&o.MySQLPool, "mysql-pool", envInt(env("SECKILL_MYSQL_POOL", "8")), "maximum MySQL connections of the order writer")
	fs.Float64Var(&o.WriterRate, "writer-rate", envFloat(env("SECKILL_WRITER_RATE", "5000")), "orders per second the writer may commit")
	fs.StringVar(&o.Namespace, "namespace", env("SECKILL_NAMESPACE", ""), "namespace of the instance-wide Redis keys (journal and activity lists, events) when deployments share one Redis")
	fs.DurationVar(&o.RelayClaimIdle, "relay-claim-idle", envDuration(env("SECKILL_RELAY_CLAIM_IDLE", "0s")), "how long a journal entry left pending by a dead relay waits before another relay claims it (0 = 30s)")
	demo := env("SECKILL_DEMO", "")
	fs.BoolVar(&o.Demo, "demo", demo == "1" || demo == "true", "load the demo activity at start")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.RedisAddr == "" && o.MySQLDSN == "" && demo == "" {
		o.Demo = true
	}
	if o.RelayClaimIdle < 0 {
		return o, fmt.Errorf("relay-claim-idle must be a duration of at least 0")
	}
	if o.MySQLPool < 1 {
		return o, fmt.Errorf("mysql-pool must be at least 1")
	}
	for _, r := range strings.Split(o.Roles, ",") {
		switch strings.TrimSpace(r) {
		case "api", "relay", "writer", "reconciler":
		default:
			return o, fmt.Errorf("unknown role %q (want api, relay, writer, reconciler)", r)
		}
	}
	return o, nil
}

func (o Options) has(role string) bool {
	for _, r := range strings.Split(o.Roles, ",") {
		if strings.TrimSpace(r) == role {
			return true
		}
	}
	return false
}

func envInt(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return v
}

func envFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return v
}

func envDuration(s string) time.Duration {
	v, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return v
}
