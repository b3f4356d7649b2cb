package app

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/inventory"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestParseOptions covers every option with a good and a bad value, through the environment
// and through the flag.
func TestParseOptions(t *testing.T) {
	longToken := strings.Repeat("t", 32)
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string // substring of the error; "" = no error
		check   func(o Options) bool
	}{
		{name: "defaults", check: func(o Options) bool {
			return o.HTTPAddr == ":8080" && o.AdminAddr == "127.0.0.1:9090" && o.MaxConns == 4096 && o.RocketMQTopic == "seckill-reservations" &&
				o.NacosDataID == "seckill.yaml" && o.NacosGroup == "SECKILL" && o.ConfigFile == "config/seckill.yaml" && !o.ConfigFileSet &&
				o.Roles == "api,relay,writer,reconciler" && o.MySQLPool == 8 && o.WriterRate == 5000 && o.RelayClaimIdle == 30*time.Second &&
				o.Demo && o.DataDir == "/home/u/.local/state/seckill" && o.InstanceID != ""
		}},
		{name: "http-addr env", env: map[string]string{"SECKILL_HTTP_ADDR": "127.0.0.1:81"}, check: func(o Options) bool { return o.HTTPAddr == "127.0.0.1:81" }},
		{name: "http-addr bad", env: map[string]string{"SECKILL_HTTP_ADDR": "8080"}, wantErr: `SECKILL_HTTP_ADDR="8080": want host:port or :port`},
		{name: "http-addr bad port", args: []string{"--http-addr=:99999"}, wantErr: `invalid value ":99999" for flag -http-addr: want host:port or :port`},
		{name: "admin-addr flag", args: []string{"--admin-addr", "127.0.0.1:0"}, check: func(o Options) bool { return o.AdminAddr == "127.0.0.1:0" }},
		{name: "admin-addr off", args: []string{"--admin-addr="}, check: func(o Options) bool { return o.AdminAddr == "" }},
		{name: "admin-addr off env", env: map[string]string{"SECKILL_ADMIN_ADDR": "off"}, check: func(o Options) bool { return o.AdminAddr == "" }},
		{name: "admin-addr off flag", args: []string{"--admin-addr", "off"}, check: func(o Options) bool { return o.AdminAddr == "" }},
		{name: "admin-addr bad", env: map[string]string{"SECKILL_ADMIN_ADDR": "localhost"}, wantErr: `SECKILL_ADMIN_ADDR="localhost": want host:port`},
		{name: "max-conns", env: map[string]string{"SECKILL_MAX_CONNS": "0"}, check: func(o Options) bool { return o.MaxConns == 0 }},
		{name: "max-conns bad", env: map[string]string{"SECKILL_MAX_CONNS": "-1"}, wantErr: `SECKILL_MAX_CONNS="-1": want an integer >= 0`},
		{name: "redis-addr", env: map[string]string{"SECKILL_REDIS_ADDR": "a:1,b:2", "SECKILL_STAND_INS": "mysql,rocketmq"}, check: func(o Options) bool { return o.RedisAddr == "a:1,b:2" && !o.Demo }},
		{name: "durability embedded default", check: func(o Options) bool { return o.RedisDurability.String() == "none" }},
		{name: "durability production default", env: map[string]string{"SECKILL_REDIS_ADDR": "a:1", "SECKILL_STAND_INS": "mysql,rocketmq"}, check: func(o Options) bool {
			return o.RedisDurability.String() == "aof" && o.RedisDurability.Timeout == 250*time.Millisecond
		}},
		{name: "durability none", env: map[string]string{"SECKILL_STAND_INS": "mysql,rocketmq", "SECKILL_REDIS_ADDR": "a:1", "SECKILL_REDIS_DURABILITY": "none"}, check: func(o Options) bool { return o.RedisDurability.String() == "none" }},
		{name: "durability replicas", args: []string{"--stand-ins=mysql,rocketmq", "--redis-addr=a:1", "--redis-durability=aof+replicas:2", "--redis-wait-timeout=100ms"}, check: func(o Options) bool {
			d := o.RedisDurability
			return d.AOF && d.Replicas == 2 && d.Timeout == 100*time.Millisecond
		}},
		{name: "durability bad", env: map[string]string{"SECKILL_STAND_INS": "mysql,rocketmq", "SECKILL_REDIS_ADDR": "a:1", "SECKILL_REDIS_DURABILITY": "replicas:0"}, wantErr: `SECKILL_REDIS_DURABILITY="replicas:0": durability "replicas:0": replicas:N wants N in 1..16`},
		{name: "durability unknown", env: map[string]string{"SECKILL_STAND_INS": "mysql,rocketmq", "SECKILL_REDIS_ADDR": "a:1", "SECKILL_REDIS_DURABILITY": "fsync"}, wantErr: `want none, aof, replicas:N or aof+replicas:N`},
		{name: "durability embedded refused", env: map[string]string{"SECKILL_REDIS_DURABILITY": "aof"}, wantErr: `SECKILL_REDIS_DURABILITY (--redis-durability) aof needs a real Redis`},
		{name: "wait timeout bad", env: map[string]string{"SECKILL_REDIS_WAIT_TIMEOUT": "2s"}, wantErr: `SECKILL_REDIS_WAIT_TIMEOUT="2s": want a duration in 10ms..500ms`},
		{name: "redis-sentinel-master", env: map[string]string{"SECKILL_REDIS_ADDR": "s1:26379,s2:26379", "SECKILL_STAND_INS": "mysql,rocketmq", "SECKILL_REDIS_SENTINEL_MASTER": "mymaster", "SECKILL_REDIS_PASSWORD": "pw", "SECKILL_REDIS_SENTINEL_PASSWORD": "spw"}, check: func(o Options) bool {
			return o.RedisSentinelMaster == "mymaster" && o.RedisPassword == "pw" && o.RedisSentinelPassword == "spw"
		}},
		{name: "sentinel without addrs", env: map[string]string{"SECKILL_REDIS_SENTINEL_MASTER": "mymaster"}, wantErr: `SECKILL_REDIS_SENTINEL_MASTER (--redis-sentinel-master) needs the sentinels`},
		{name: "redis-username", args: []string{"--redis-username=svc"}, env: map[string]string{"SECKILL_REDIS_PASSWORD": "pw"}, check: func(o Options) bool { return o.RedisUsername == "svc" && o.RedisPassword == "pw" }},
		{name: "redis tls", args: []string{"--redis-tls", "--redis-tls-ca-file=/x.pem"}, check: func(o Options) bool { return o.RedisTLS && o.RedisTLSCAFile == "/x.pem" }},
		{name: "redis-addr bad", env: map[string]string{"SECKILL_REDIS_ADDR": "localhost"}, wantErr: `SECKILL_REDIS_ADDR="localhost": want host:port[,host:port]`},
		{name: "redis-addr bad in list", env: map[string]string{"SECKILL_REDIS_ADDR": "a:1,b"}, wantErr: `want host:port`},
		{name: "mysql-dsn bad", env: map[string]string{"SECKILL_MYSQL_DSN": "mysql://u@h/db"}, wantErr: `SECKILL_MYSQL_DSN="mysql://u@h/db": want a MySQL DSN`},
		{name: "mysql-dsn", args: []string{"--mysql-dsn", "u:p@tcp(h:3306)/d", "--stand-ins=redis,rocketmq"}, check: func(o Options) bool { return o.MySQLDSN == "u:p@tcp(h:3306)/d" && !o.Demo }},
		{name: "rocketmq-namesrv", env: map[string]string{"SECKILL_ROCKETMQ_NAMESRV": "127.0.0.1:9876", "SECKILL_STAND_INS": "redis,mysql"}, check: func(o Options) bool { return o.RocketMQNamesrv == "127.0.0.1:9876" }},
		{name: "rocketmq-namesrv host name", env: map[string]string{"SECKILL_ROCKETMQ_NAMESRV": "namesrv:9876"}, wantErr: `SECKILL_ROCKETMQ_NAMESRV="namesrv:9876": want ip:port`},
		{name: "jwt-rs256-public-key-file", env: map[string]string{"SECKILL_JWT_RS256_PUBLIC_KEY_FILE": "/k.pem", "SECKILL_JWT_HS256_SECRET": "s"}, check: func(o Options) bool {
			return o.JWTRS256PublicKeyFile == "/k.pem" && o.JWTHS256Secret == "s"
		}},
		{name: "user hash key", env: map[string]string{"SECKILL_USER_HASH_KEY": " " + strings.Repeat("0f", 32) + "\n"}, check: func(o Options) bool {
			return bytes.Equal(o.UserHashKey, bytes.Repeat([]byte{0x0f}, 32))
		}},
		{name: "user hash key unset", check: func(o Options) bool { return o.UserHashKey == nil }},
		{name: "user hash key short", env: map[string]string{"SECKILL_USER_HASH_KEY": strings.Repeat("0f", 31)}, wantErr: `SECKILL_USER_HASH_KEY: want at least 32 bytes as hex`},
		{name: "user hash key not hex", env: map[string]string{"SECKILL_USER_HASH_KEY": strings.Repeat("zz", 32)}, wantErr: `SECKILL_USER_HASH_KEY: want at least 32 bytes as hex`},
		{name: "nacos auth", args: []string{"--nacos-namespace", "ns1", "--nacos-username", "ops"}, env: map[string]string{"SECKILL_NACOS_PASSWORD": "pw"}, check: func(o Options) bool {
			return o.NacosNamespace == "ns1" && o.NacosUsername == "ops" && o.NacosPassword == "pw"
		}},
		{name: "rocketmq-topic", args: []string{"--rocketmq-topic=t1"}, check: func(o Options) bool { return o.RocketMQTopic == "t1" }},
		{name: "rocketmq-topic empty", args: []string{"--rocketmq-topic", " "}, wantErr: `want a non-empty value`},
		{name: "nacos-addr", env: map[string]string{"SECKILL_NACOS_ADDR": "127.0.0.1:8848", "SECKILL_STAND_INS": "redis,mysql,rocketmq"}, check: func(o Options) bool { return o.NacosAddr == "127.0.0.1:8848" }},
		{name: "nacos-addr bad", args: []string{"--nacos-addr=nacos"}, wantErr: `invalid value "nacos" for flag -nacos-addr: want host:port`},
		{name: "nacos-data-id", env: map[string]string{"SECKILL_NACOS_DATA_ID": "x.yaml"}, check: func(o Options) bool { return o.NacosDataID == "x.yaml" }},
		{name: "nacos-data-id empty", args: []string{"--nacos-data-id="}, wantErr: `flag -nacos-data-id: want a non-empty value`},
		{name: "nacos-group", args: []string{"--nacos-group=G"}, check: func(o Options) bool { return o.NacosGroup == "G" }},
		{name: "nacos-group empty", args: []string{"--nacos-group="}, wantErr: `want a non-empty value`},
		{name: "config-file", env: map[string]string{"SECKILL_CONFIG_FILE": "/etc/s.yaml"}, check: func(o Options) bool { return o.ConfigFile == "/etc/s.yaml" && o.ConfigFileSet }},
		{name: "config-file flag", args: []string{"--config-file=a.yaml"}, check: func(o Options) bool { return o.ConfigFile == "a.yaml" && o.ConfigFileSet }},
		{name: "config-file empty", args: []string{"--config-file="}, wantErr: `want a non-empty value`},
		{name: "admin-token embedded short ok", env: map[string]string{"SECKILL_ADMIN_TOKEN": "short"}, check: func(o Options) bool { return o.AdminToken == "short" }},
		{name: "admin-token production long", env: map[string]string{"SECKILL_REDIS_ADDR": "r:6379", "SECKILL_ADMIN_TOKEN": longToken, "SECKILL_STAND_INS": "mysql,rocketmq"}, check: func(o Options) bool { return o.AdminToken == longToken }},
		{name: "admin-token production short", env: map[string]string{"SECKILL_REDIS_ADDR": "r:6379", "SECKILL_ADMIN_TOKEN": "change-me"}, wantErr: `9 bytes, want at least 32`},
		{name: "admin-token nacos short", env: map[string]string{"SECKILL_NACOS_ADDR": "n:8848"}, args: []string{"--admin-token=" + longToken[:31]}, wantErr: `31 bytes, want at least 32`},
		{name: "instance-id", env: map[string]string{"SECKILL_INSTANCE_ID": "i-1"}, check: func(o Options) bool { return o.InstanceID == "i-1" }},
		{name: "instance-id empty", args: []string{"--instance-id="}, wantErr: `want a non-empty value`},
		{name: "data-dir", env: map[string]string{"SECKILL_DATA_DIR": "/var/lib/seckill"}, check: func(o Options) bool { return o.DataDir == "/var/lib/seckill" }},
		{name: "data-dir xdg", env: map[string]string{"XDG_STATE_HOME": "/x/state"}, check: func(o Options) bool { return o.DataDir == "/x/state/seckill" }},
		{name: "data-dir empty", args: []string{"--data-dir="}, wantErr: `want a non-empty value`},
		{name: "roles", env: map[string]string{"SECKILL_ROLES": "relay,writer"}, check: func(o Options) bool { return o.Roles == "relay,writer" && !o.has("api") }},
		{name: "roles bad", env: map[string]string{"SECKILL_ROLES": "api,cook"}, wantErr: `SECKILL_ROLES="api,cook": unknown role "cook"`},
		{name: "mysql-pool", args: []string{"--mysql-pool=3"}, check: func(o Options) bool { return o.MySQLPool == 3 }},
		{name: "mysql-pool bad", env: map[string]string{"SECKILL_MYSQL_POOL": "abc"}, wantErr: `SECKILL_MYSQL_POOL="abc": want an integer >= 1`},
		{name: "mysql-pool zero", env: map[string]string{"SECKILL_MYSQL_POOL": "0"}, wantErr: `SECKILL_MYSQL_POOL="0": want an integer >= 1`},
		{name: "writer-rate", env: map[string]string{"SECKILL_WRITER_RATE": "0"}, check: func(o Options) bool { return o.WriterRate == 0 }},
		{name: "writer-rate bad", env: map[string]string{"SECKILL_WRITER_RATE": "fast"}, wantErr: `SECKILL_WRITER_RATE="fast": want an integer >= 0`},
		{name: "writer-rate flag bad", args: []string{"--writer-rate=-5"}, wantErr: `invalid value "-5" for flag -writer-rate: want an integer >= 0`},
		{name: "reserve-batch", env: map[string]string{"SECKILL_RESERVE_BATCH": "8"}, check: func(o Options) bool { return o.ReserveBatch == 8 }},
		{name: "reserve-batch default", check: func(o Options) bool { return o.ReserveBatch == inventory.DefaultReserveBatch }},
		{name: "reserve-batch one", args: []string{"--reserve-batch=1"}, check: func(o Options) bool { return o.ReserveBatch == 1 }},
		{name: "reserve-batch zero", env: map[string]string{"SECKILL_RESERVE_BATCH": "0"}, wantErr: `SECKILL_RESERVE_BATCH="0": want an integer >= 1`},
		{name: "reserve-batch flag too big", args: []string{"--reserve-batch=300"}, wantErr: `invalid value "300" for flag -reserve-batch: want an integer in 1..256`},
		{name: "relay-claim-idle", env: map[string]string{"SECKILL_RELAY_CLAIM_IDLE": "5s"}, check: func(o Options) bool { return o.RelayClaimIdle == 5*time.Second }},
		{name: "relay-claim-idle bad", env: map[string]string{"SECKILL_RELAY_CLAIM_IDLE": "soon"}, wantErr: `SECKILL_RELAY_CLAIM_IDLE="soon": want a duration > 0`},
		{name: "relay-claim-idle zero", args: []string{"--relay-claim-idle=0s"}, wantErr: `want a duration > 0`},
		{name: "namespace", env: map[string]string{"SECKILL_NAMESPACE": "blue_1"}, check: func(o Options) bool { return o.Namespace == "blue_1" }},
		{name: "namespace bad", env: map[string]string{"SECKILL_NAMESPACE": "a:b"}, wantErr: `SECKILL_NAMESPACE="a:b": want letters`},
		{name: "stand-ins refused: redis alone", env: map[string]string{"SECKILL_REDIS_ADDR": "r:1"}, wantErr: `SECKILL_MYSQL_DSN is unset while SECKILL_REDIS_ADDR is set: orders would go to a temporary SQLite deleted at exit; set it, or name the stand-in with SECKILL_STAND_INS=mysql`},
		{name: "stand-ins refused: one left", env: map[string]string{"SECKILL_REDIS_ADDR": "r:1", "SECKILL_MYSQL_DSN": "u:p@tcp(h:3306)/d"}, wantErr: `SECKILL_ROCKETMQ_NAMESRV is unset while SECKILL_REDIS_ADDR and SECKILL_MYSQL_DSN are set`},
		{name: "stand-ins refused: nacos alone", env: map[string]string{"SECKILL_NACOS_ADDR": "n:8848"}, wantErr: `SECKILL_REDIS_ADDR is unset while SECKILL_NACOS_ADDR is set`},
		{name: "stand-ins refused: only some named", env: map[string]string{"SECKILL_REDIS_ADDR": "r:1", "SECKILL_STAND_INS": "rocketmq"}, wantErr: `SECKILL_STAND_INS=mysql`},
		{name: "stand-ins named", env: map[string]string{"SECKILL_REDIS_ADDR": "r:1", "SECKILL_STAND_INS": "mysql, rocketmq"}, check: func(o Options) bool { return o.StandIns == "mysql, rocketmq" }},
		{name: "stand-ins flag", env: map[string]string{"SECKILL_NACOS_ADDR": "n:8848"}, args: []string{"--stand-ins=redis,mysql,rocketmq"}, check: func(o Options) bool { return o.StandIns == "redis,mysql,rocketmq" }},
		{name: "stand-ins all real", env: map[string]string{"SECKILL_REDIS_ADDR": "r:1", "SECKILL_MYSQL_DSN": "u:p@tcp(h:3306)/d", "SECKILL_ROCKETMQ_NAMESRV": "127.0.0.1:9876"}, check: func(o Options) bool { return o.StandIns == "" }},
		{name: "stand-ins bad", env: map[string]string{"SECKILL_STAND_INS": "nacos"}, wantErr: `SECKILL_STAND_INS="nacos": unknown stand-in "nacos"`},
		{name: "log-level", env: map[string]string{"SECKILL_LOG_LEVEL": "warn"}, check: func(o Options) bool { return o.LogLevel == slog.LevelWarn }},
		{name: "log-level flag", args: []string{"--log-level=DEBUG"}, check: func(o Options) bool { return o.LogLevel == slog.LevelDebug }},
		{name: "log-level default", check: func(o Options) bool { return o.LogLevel == slog.LevelInfo }},
		{name: "log-level bad", env: map[string]string{"SECKILL_LOG_LEVEL": "loud"}, wantErr: `SECKILL_LOG_LEVEL="loud": want debug, info, warn or error`},
		{name: "log-level offset refused", args: []string{"--log-level=info+2"}, wantErr: `want debug, info, warn or error`},
		{name: "access-log", env: map[string]string{"SECKILL_ACCESS_LOG": "true"}, check: func(o Options) bool { return o.AccessLog }},
		{name: "access-log flag", args: []string{"--access-log"}, check: func(o Options) bool { return o.AccessLog }},
		{name: "access-log bad", env: map[string]string{"SECKILL_ACCESS_LOG": "yes please"}, wantErr: `want true or false`},
		{name: "demo off", env: map[string]string{"SECKILL_DEMO": "false"}, check: func(o Options) bool { return !o.Demo }},
		{name: "demo flag", env: map[string]string{"SECKILL_REDIS_ADDR": "r:1", "SECKILL_STAND_INS": "mysql,rocketmq"}, args: []string{"--demo"}, check: func(o Options) bool { return o.Demo }},
		{name: "demo flag false", args: []string{"--demo=false"}, check: func(o Options) bool { return !o.Demo }},
		{name: "demo bad", env: map[string]string{"SECKILL_DEMO": "maybe"}, wantErr: `SECKILL_DEMO="maybe": want true or false`},
		{name: "bad env refused even with the flag", env: map[string]string{"SECKILL_MYSQL_POOL": "abc"}, args: []string{"--mysql-pool=2"}, wantErr: `SECKILL_MYSQL_POOL="abc"`},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: `flag provided but not defined: -nope`},
		{name: "stray argument", args: []string{"serve"}, wantErr: `unexpected arguments`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": "/home/u"}
			for k, v := range tt.env {
				env[k] = v
			}
			var out bytes.Buffer
			o, err := ParseOptions(tt.args, envOf(env), &out)
			if tt.wantErr != "" {
				var ue *UsageError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ue) {
					t.Fatalf("got error %v, want a UsageError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !tt.check(o) {
				t.Fatalf("options not as expected: %+v", o)
			}
		})
	}
}

// TestEveryOptionIsTested keeps TestParseOptions in step with the option list: each flag
// appears in it with a good and a bad value (bools and free strings: good only).
func TestEveryOptionIsTested(t *testing.T) {
	src, err := os.ReadFile("options_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range optionSpecs(func(string) string { return "" }) {
		if !bytes.Contains(src, []byte(`"`+s.flag)) && !bytes.Contains(src, []byte(`"--`+s.flag)) {
			t.Errorf("option --%s has no case in TestParseOptions", s.flag)
		}
	}
}

func TestHelpListsEveryFlagWithVariableAndDefault(t *testing.T) {
	var out bytes.Buffer
	_, err := ParseOptions([]string{"--help"}, envOf(map[string]string{"HOME": "/home/u"}), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("got %v, want flag.ErrHelp", err)
	}
	for _, s := range optionSpecs(func(string) string { return "" }) {
		want := "--" + s.flag + "  (" + s.env + ", default " + s.defaultText() + ")"
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "~/.local/state/seckill") {
		t.Errorf("help does not name the data dir default:\n%s", out.String())
	}
}

// TestReadmeFlagTable keeps the flag table of docs/configuration.md (once the README's)
// identical to the option list.
func TestReadmeFlagTable(t *testing.T) {
	raw, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- flags:begin -->\n", "<!-- flags:end -->"
	s := string(raw)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/configuration.md has no %q ... %q section", begin, end)
	}
	if got, want := s[i+len(begin):j], FlagTable(); got != want {
		t.Fatalf("the flag table of docs/configuration.md is stale; replace it with:\n%s", want)
	}
}

func TestDefaultDataDirIsNotTheTestCache(t *testing.T) {
	tests := []struct {
		give map[string]string
		want string
	}{
		{map[string]string{"HOME": "/h"}, "/h/.local/state/seckill"},
		{map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/s"}, "/s/seckill"},
		{map[string]string{"HOME": "/h", "XDG_STATE_HOME": "relative"}, "/h/.local/state/seckill"},
		{map[string]string{}, filepath.Join(os.TempDir(), "seckill-state")},
	}
	for _, tt := range tests {
		got := DefaultDataDir(envOf(tt.give))
		if got != tt.want {
			t.Errorf("DefaultDataDir(%v) = %q, want %q", tt.give, got, tt.want)
		}
		if strings.Contains(got, ".cache") {
			t.Errorf("%q shares the test-server cache", got)
		}
	}
}

// TestUserHashKeyNotEchoed: a refused key (a secret) does not appear in the error.
func TestUserHashKeyNotEchoed(t *testing.T) {
	secret := strings.Repeat("ab", 20) + "zz"
	_, err := ParseOptions(nil, envOf(map[string]string{"HOME": "/home/u", "SECKILL_USER_HASH_KEY": secret}), &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "abab") {
		t.Fatalf("error %v, want one without the value", err)
	}
}
