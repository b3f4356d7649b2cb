// Package testsvc gives tests the addresses of, and connections to, the real servers that
// scripts/services.sh starts: Redis (standalone and a 3-master cluster), MariaDB, RocketMQ and
// Nacos. A test that needs a server calls Need and fails loudly when the server is missing;
// it skips only when the developer opted out with -short. Such a test lives in a file with the
// build constraint //go:build integration (make test passes -tags integration); Need fails a
// test built without the tag, so that a server test in an untagged file shows up at once, even
// on a machine where the servers are running.
package testsvc

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Addresses of the test servers, overridable by environment.
var (
	RedisAddr        = env("SECKILL_TEST_REDIS", "127.0.0.1:6379")
	RedisClusterAddr = env("SECKILL_TEST_REDIS_CLUSTER", "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003")
	MySQLDSN         = env("SECKILL_TEST_MYSQL_DSN", "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=UTC&multiStatements=true")
	RocketMQNamesrv  = env("SECKILL_TEST_ROCKETMQ", "127.0.0.1:9876")
	RocketMQBroker   = env("SECKILL_TEST_ROCKETMQ_BROKER", "127.0.0.1:10911")
	NacosAddr        = env("SECKILL_TEST_NACOS", "127.0.0.1:8848")
)

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Need fails the test when it was built without -tags integration, skips it under -short, and
// otherwise fails it unless addr accepts TCP connections.
func Need(t testing.TB, what, addr string) {
	t.Helper()
	needIntegration(t, what)
	if testing.Short() {
		t.Skipf("-short: %s not used", what)
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("%s at %s is not reachable (start it with scripts/services.sh up): %v", what, addr, err)
	}
	c.Close()
}

// needIntegration fails t unless the test binary was built with -tags integration.
func needIntegration(t testing.TB, what string) {
	t.Helper()
	if !Integration {
		t.Fatalf("%s is used by a test built without -tags integration: move the test to a file "+
			"with //go:build integration (run it with make test or go test -tags integration)", what)
	}
}

// Redis returns a client of the standalone test Redis, closed when the test ends.
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	Need(t, "redis", RedisAddr)
	c := redis.NewClient(&redis.Options{Addr: RedisAddr, DisableIdentity: true, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return c
}

// RedisCluster returns a client of the 3-master test cluster, closed when the test ends.
func RedisCluster(t testing.TB) redis.UniversalClient {
	t.Helper()
	addrs := strings.Split(RedisClusterAddr, ",")
	Need(t, "redis cluster", addrs[0])
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DisableIdentity: true, PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
		t.Fatalf("redis cluster: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// RedisServers returns both Redis servers a script runs against, by name: "standalone" (Redis)
// and "cluster" (RedisCluster), for a test that runs the same checks on each.
func RedisServers(t testing.TB) map[string]redis.UniversalClient {
	t.Helper()
	return map[string]redis.UniversalClient{"standalone": Redis(t), "cluster": RedisCluster(t)}
}

// PrivateRedis starts a redis-server of the test's own on a free loopback port, with its own
// directory and no persistence (args come last, so they override), waits until it answers PING
// and kills it when the test ends. It returns the address. A test uses it when it needs a server
// configured otherwise than the shared one (a replica, appendonly, cluster-enabled), or when it
// scans the whole keyspace after every step: the shared server holds every other test's keys.
func PrivateRedis(t testing.TB, args ...string) string {
	t.Helper()
	needIntegration(t, "a private redis-server")
	if testing.Short() {
		t.Skip("-short: redis-server not started")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log")}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server on %d does not answer PING after 20s: %v; its log:\n%s", port, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PrivateReplica starts a PrivateRedis (args as there) that replicates the one at master, an
// address PrivateRedis returned, and returns its address once master counts it online: synced
// and acknowledging, so a WAIT on master can count it.
func PrivateReplica(t testing.TB, master string, args ...string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(master)
	if err != nil {
		t.Fatal(err)
	}
	addr := PrivateRedis(t, append([]string{"--replicaof", host, port}, args...)...)
	_, self, _ := net.SplitHostPort(addr)
	c := redis.NewClient(&redis.Options{Addr: master, DisableIdentity: true})
	defer c.Close()
	online := "port=" + self + ",state=online,"
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, online) {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not online at %s after 30s: %v\n%s", addr, master, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MySQL returns a GORM handle on the test MariaDB database.
func MySQL(t testing.TB) *gorm.DB {
	t.Helper()
	cfg, err := gomysql.ParseDSN(MySQLDSN)
	if err != nil {
		t.Fatalf("SECKILL_TEST_MYSQL_DSN: %v", err)
	}
	Need(t, "mariadb", cfg.Addr)
	db, err := gorm.Open(mysql.Open(MySQLDSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatalf("mariadb: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatalf("mariadb: %v", err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// RocketMQ returns the name server address after checking it is reachable.
func RocketMQ(t testing.TB) string {
	t.Helper()
	Need(t, "rocketmq name server", RocketMQNamesrv)
	return RocketMQNamesrv
}

// Nacos returns the Nacos HTTP address after checking it is reachable.
func Nacos(t testing.TB) string {
	t.Helper()
	Need(t, "nacos", NacosAddr)
	return NacosAddr
}

// SplitHostPort splits a "host:port" address into the host and the numeric port, the form the
// Nacos client's ServerConfig wants.
func SplitHostPort(addr string) (string, uint64, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}
