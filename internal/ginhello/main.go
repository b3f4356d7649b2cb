// Command ginhello serves the ceilings of docs/BENCHMARKS.md: the plainest Gin routes that do
// the irreducible work of each seckill path, so the service can be measured against them in
// one run of scripts/bench.sh.
//
//   - GET /hello: Gin in release mode answering a small JSON body, nothing else (no middleware,
//     no logging): the ceiling of the rejections (410, 429), which need no Redis call.
//   - POST /hello-body: the same answer after reading the request's body and decoding it with
//     encoding/json into the reservation's struct (quantity, token): the ceiling of a 410 or
//     429 answered to what clients send, a POST with Content-Type: application/json and a body.
//   - POST /one: one EVALSHA of min_reserve.lua (DECRBY a stock key, XADD a journal entry of
//     the service's size): the one-round-trip ceiling of an admitted reservation (202).
//   - POST /two: the usual two-call design: a Redis token bucket for the user
//     (lua/limiter_bucket.lua through limiter.RedisBucket), then min_reserve.lua.
//   - GET /debug/mallocs: the process's heap allocations so far (runtime.MemStats.Mallocs), read
//     by bench.sh before and after a run for allocations per request; never hit during one.
//
// /one and /two need --redis. Their keys are sk:{ginhello:<ns>}:stock and :journal (stock set
// to 10^15 at start, so it never runs out) and per-user buckets sk:{ginhello-tb:<ns>:<user>}
// (they expire by themselves); the stock and the journal are deleted on SIGINT or SIGTERM.
//
//	go run ./internal/ginhello --addr 127.0.0.1:18090 [--redis 127.0.0.1:6379 --ns run1]
//	wrk -t2 -c64 -d10s http://127.0.0.1:18090/hello
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/limiter"
)

//go:embed min_reserve.lua
var minReserveSrc string

func main() {
	if err := run(); err != nil {
		slog.Error("ginhello", "err", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address (loopback)")
	redisAddr := flag.String("redis", "", "Redis address for /one and /two (empty: /hello only)")
	ns := flag.String("ns", strconv.FormatInt(time.Now().UnixNano(), 36), "namespace of the Redis keys")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	baseRoutes(r)

	var rdb *redis.Client
	if *redisAddr != "" {
		rdb = redis.NewClient(&redis.Options{Addr: *redisAddr, DisableIdentity: true, PoolSize: 128,
			MinIdleConns: 16, MaxRetries: 1})
		defer rdb.Close()
		stock := keyspace.Prefix + "{ginhello:" + *ns + "}:stock"
		journal := keyspace.Prefix + "{ginhello:" + *ns + "}:journal"
		if err := rdb.Set(ctx, stock, int64(1e15), 0).Err(); err != nil {
			return fmt.Errorf("set %s: %w", stock, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := rdb.Unlink(cctx, stock, journal).Err(); err != nil {
				slog.Warn("ginhello: keys left behind", "err", err)
			}
		}()
		if err := redisRoutes(r, rdb, *ns, stock, journal); err != nil {
			return err
		}
	}

	srv := &http.Server{Addr: *addr, Handler: r, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	slog.Info("ginhello listening", "addr", *addr, "redis", *redisAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// baseRoutes adds the routes that need no Redis: /hello, /hello-body (which decodes a
// small JSON body first) and /debug/mallocs (the process's allocation count).
func baseRoutes(r *gin.Engine) {
	r.GET("/hello", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"message": "hello"})
	})
	r.POST("/hello-body", func(c *gin.Context) {
		var b struct {
			Quantity *int   `json:"quantity"`
			Token    string `json:"token"`
		}
		if err := json.NewDecoder(c.Request.Body).Decode(&b); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"code": "BAD_REQUEST", "message": "malformed JSON body"})
			return
		}
		c.JSON(http.StatusOK, gin.H{"message": "hello"})
	})
	r.GET("/debug/mallocs", func(c *gin.Context) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		c.String(http.StatusOK, "%d\n", ms.Mallocs)
	})
}

// redisRoutes adds /one (one reservation script call on stock and journal) and /two (a
// token bucket, then the same call); reservation ids are ns and a counter. It fails only
// when the bucket's script cannot be loaded.
func redisRoutes(r *gin.Engine, rdb *redis.Client, ns, stock, journal string) error {
	script := redis.NewScript(minReserveSrc)
	bucket, err := limiter.NewRedisBucket(rdb)
	if err != nil {
		return err
	}
	var seq atomic.Int64
	reserve := func(c *gin.Context, user string) {
		rid := ns + "-" + strconv.FormatInt(seq.Add(1), 10)
		res, err := script.Run(c.Request.Context(), rdb, []string{stock, journal}, rid, "ginhello",
			user, "0123456789abcdef", 1, 0, 1).Slice()
		if err != nil || len(res) != 3 {
			c.JSON(http.StatusServiceUnavailable, gin.H{"code": "UNAVAILABLE", "message": fmt.Sprint(err)})
			return
		}
		c.JSON(http.StatusAccepted, gin.H{"reservationId": rid, "activityId": "ginhello", "status": "PENDING"})
	}
	r.POST("/one", func(c *gin.Context) { reserve(c, c.GetHeader("X-User-Id")) })
	r.POST("/two", func(c *gin.Context) {
		user := c.GetHeader("X-User-Id")
		ok, _, err := bucket.Take(c.Request.Context(), keyspace.Prefix+"{ginhello-tb:"+ns+":"+user+"}",
			tokenbucket.Limit{Rate: 1000, Burst: 1000}, 1)
		if err != nil || !ok {
			c.JSON(http.StatusServiceUnavailable, gin.H{"code": "UNAVAILABLE", "message": fmt.Sprint(err)})
			return
		}
		reserve(c, user)
	})
	return nil
}
