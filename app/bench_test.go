package app

// HTTP benchmarks of docs/BENCHMARKS.md: the reservation path of a whole instance, served over
// loopback by its own http.Server and driven by RunParallel clients, next to the same harness
// serving Gin hello-world (the ceiling of the HTTP stack on this machine).
//
//	go test -run XXX -bench HTTP -benchtime 3s ./app/
//
// Every client goroutine keeps one HTTP/1.1 connection alive; with the default parallelism of
// 32 goroutines per GOMAXPROCS there are 64 connections on a 2-core machine, as in the load
// tests. The "redis" variants use the real Redis and MariaDB of scripts/services.sh (api role
// only, so no relay or writer runs during the measurement) and delete the keys they made.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/internal/tokenbucket"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
	"github.com/seckill/seckill/lua"
)

const benchParallelism = 32

var benchSeq atomic.Int64

// benchClient is an HTTP client with a connection per goroutine of RunParallel.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     time.Minute,
	}, Timeout: 10 * time.Second}
}

func benchDo(c *http.Client, req *http.Request) (int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	var buf [512]byte
	for {
		if _, err := resp.Body.Read(buf[:]); err != nil {
			break
		}
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// BenchmarkHTTPGinHello is the ceiling: Gin in release mode answering GET /hello with a small
// JSON, served and measured exactly like the reservation benchmarks below.
func BenchmarkHTTPGinHello(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/hello", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"message": "hello"}) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: r}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/hello"
	client := benchClient()
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if code, err := benchDo(client, req); err != nil || code != http.StatusOK {
				b.Errorf("hello: %d %v", code, err)
				return
			}
		}
	})
}

// benchApp starts an instance for a benchmark: embedded (in-process Redis, SQLite, queue) or
// against the real Redis and MariaDB with the api role only.
func benchApp(b *testing.B, real bool) (*App, string) {
	b.Helper()
	return benchAppConfig(b, real, "")
}

// benchAppConfig is benchApp with extra lines appended to the test configuration.
func benchAppConfig(b *testing.B, real bool, extra string) (*App, string) {
	b.Helper()
	dir := b.TempDir()
	cfg := filepath.Join(dir, "seckill.yaml")
	if err := os.WriteFile(cfg, []byte(testConfig+extra), 0o644); err != nil {
		b.Fatal(err)
	}
	ns := fmt.Sprintf("bench%d", time.Now().UnixNano())
	opts := Options{
		HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ConfigFile: cfg, InstanceID: ns, Namespace: ns,
		DataDir: filepath.Join(dir, "data"), Roles: "api,relay,writer,reconciler",
		MySQLPool: 8, WriterRate: 20000, AdminToken: testAdminToken,
	}
	if real {
		testsvc.Need(b, "redis", testsvc.RedisAddr)
		testsvc.MySQL(b)
		opts.RedisAddr, opts.MySQLDSN, opts.Roles = testsvc.RedisAddr, testsvc.MySQLDSN, "api"
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, opts, discardLog())
	if err != nil {
		cancel()
		b.Fatalf("new app: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Errorf("app did not stop within 30 s")
		}
		a.Close()
	})
	base := "http://" + a.Addr()
	testwait.Eventually(b, 30*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "instance ready")
	return a, base
}

func benchCreate(b *testing.B, c *http.Client, a *App, id string, stock, shards int) {
	b.Helper()
	base := "http://" + a.AdminAddr()
	body := fmt.Sprintf(`{"activityId":%q,"stock":%d,"perUserLimit":1,"shards":%d,"opensAt":%q}`,
		id, stock, shards, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano))
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/v1/activities", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	req.Header.Set("Content-Type", "application/json")
	if code, err := benchDo(c, req); err != nil || code != http.StatusCreated {
		b.Fatalf("create %s: %d %v", id, code, err)
	}
}

// benchCleanup deletes by name the keys an activity made in the shared Redis (no SCAN):
// meta, and per shard its keys and reservation records 1..seq. Bucket and window keys of
// users expire by themselves.
func benchCleanup(a *App, id string, shards int) {
	ctx := context.Background()
	rdb := a.rdb
	for i := 0; i < shards; i++ {
		k := inventory.Shard(id, 0, i)
		rdb.Unlink(ctx, k.Stock(), k.Users(), k.Seq(), k.Journal(), k.Stats(), k.Drained(), k.Credits(), k.Gen())
	}
	rdb.Unlink(ctx, inventory.Meta(id))
	ns := a.opts.Namespace
	rdb.Del(ctx, keyspace.Namespaced(ns, keyspace.Journals), keyspace.Namespaced(ns, keyspace.Activities))
}

// redisCalls sums seckill_redis_script_calls_total and seckill_rate_limiter_redis_calls_total of the instance.
func redisCalls(b *testing.B, a *App) float64 {
	mfs, err := a.reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var s float64
	for _, mf := range mfs {
		if n := mf.GetName(); n == "seckill_redis_script_calls_total" || n == "seckill_rate_limiter_redis_calls_total" {
			for _, m := range mf.GetMetric() {
				s += m.GetCounter().GetValue()
			}
		}
	}
	return s
}

func benchVariants(b *testing.B, f func(b *testing.B, real bool)) {
	b.Run("embedded", func(b *testing.B) { f(b, false) })
	b.Run("redis", func(b *testing.B) { f(b, true) })
}

// BenchmarkHTTPReserve: every request a new user who gets 202 (the stock never runs out):
// HTTP + admission layers + one reserve script per request.
func BenchmarkHTTPReserve(b *testing.B) {
	benchVariants(b, func(b *testing.B, real bool) {
		a, base := benchApp(b, real)
		client := benchClient()
		const shards = 16
		id := fmt.Sprintf("bench-res-%d", time.Now().UnixNano()%1_000_000_000_000)
		benchCreate(b, client, a, id, 10_000_000, shards)
		if real {
			b.Cleanup(func() { benchCleanup(a, id, shards) })
		}
		url := base + "/api/v1/activities/" + id + "/reservations"
		calls0 := redisCalls(b, a)
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("X-User-Id", "bu-"+strconv.FormatInt(benchSeq.Add(1), 10))
				if code, err := benchDo(client, req); err != nil || code != http.StatusAccepted {
					b.Errorf("reserve: %d %v", code, err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric((redisCalls(b, a)-calls0)/float64(b.N), "redis-calls/op")
	})
}

// BenchmarkHTTPSoldOut: the activity is sold out and the instance knows it: every request a
// new user who gets 410 SOLD_OUT from the local snapshot, with no Redis call.
func BenchmarkHTTPSoldOut(b *testing.B) {
	benchVariants(b, func(b *testing.B, real bool) {
		a, base := benchApp(b, real)
		client := benchClient()
		const shards = 1
		id := fmt.Sprintf("bench-so-%d", time.Now().UnixNano()%1_000_000_000_000)
		benchCreate(b, client, a, id, 1, shards)
		if real {
			b.Cleanup(func() { benchCleanup(a, id, shards) })
		}
		url := base + "/api/v1/activities/" + id + "/reservations"
		// sell the unit, then wait until the instance answers 410 without asking Redis
		deadline := time.Now().Add(5 * time.Second)
		for i := 0; ; i++ {
			req, _ := http.NewRequest(http.MethodPost, url, nil)
			req.Header.Set("X-User-Id", "bs-warm-"+strconv.Itoa(i))
			code, err := benchDo(client, req)
			if err != nil {
				b.Fatal(err)
			}
			if code == http.StatusGone {
				c0 := redisCalls(b, a)
				req, _ = http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("X-User-Id", "bs-warm-x"+strconv.Itoa(i))
				benchDo(client, req)
				if redisCalls(b, a) == c0 {
					break
				}
			}
			if time.Now().After(deadline) {
				b.Fatal("sell-out not known locally within 5 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		calls0 := redisCalls(b, a)
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("X-User-Id", "bs-"+strconv.FormatInt(benchSeq.Add(1), 10))
				if code, err := benchDo(client, req); err != nil || code != http.StatusGone {
					b.Errorf("sold out: %d %v", code, err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric((redisCalls(b, a)-calls0)/float64(b.N), "redis-calls/op")
	})
}

// BenchmarkHTTPRateLimited: the activity's own budget (activities.<id>.limits, rate 1/s
// burst 1) is exhausted, so every request, a new user each time, gets 429 RATE_LIMITED from
// the leased budget of the limiter, with no Redis call (the 429 row of scripts/bench.sh
// ratios). The budget still admits one request a second (202, counted in admitted/op).
func BenchmarkHTTPRateLimited(b *testing.B) {
	benchVariants(b, func(b *testing.B, real bool) {
		id := fmt.Sprintf("bench-rl-%d", time.Now().UnixNano()%1_000_000_000_000)
		a, base := benchAppConfig(b, real, "activities: {"+id+": {limits: {rate: 1, burst: 1}}}\n")
		client := benchClient()
		const shards = 1
		benchCreate(b, client, a, id, 1_000_000, shards)
		if real {
			b.Cleanup(func() { benchCleanup(a, id, shards) })
		}
		url := base + "/api/v1/activities/" + id + "/reservations"
		// spend the burst, then wait until the answer is 429
		deadline := time.Now().Add(5 * time.Second)
		for i := 0; ; i++ {
			req, _ := http.NewRequest(http.MethodPost, url, nil)
			req.Header.Set("X-User-Id", "br-warm-"+strconv.Itoa(i))
			code, err := benchDo(client, req)
			if err != nil {
				b.Fatal(err)
			}
			if code == http.StatusTooManyRequests {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no 429 within 5 s (last %d)", code)
			}
		}
		calls0 := redisCalls(b, a)
		var admitted atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("X-User-Id", "br-"+strconv.FormatInt(benchSeq.Add(1), 10))
				code, err := benchDo(client, req)
				if code == http.StatusAccepted {
					admitted.Add(1) // the budget's one token per second
					continue
				}
				if err != nil || code != http.StatusTooManyRequests {
					b.Errorf("rate limited: %d %v", code, err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(admitted.Load())/float64(b.N), "admitted/op")
		b.ReportMetric((redisCalls(b, a)-calls0)/float64(b.N), "redis-calls/op")
	})
}

// TestBenchScriptSHA prints the SHA1 the service runs for the reservation and IP bucket
// scripts (lua.Source, includes expanded), to compare with what scripts/bench.sh loads for
// redis-benchmark: go test -run TestBenchScriptSHA -v ./app/
func TestBenchScriptSHA(t *testing.T) {
	for _, name := range []string{"inventory_reserve.lua", "limiter_bucket.lua"} {
		s, err := lua.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s sha1 %s", name, s.Hash())
	}
}

// BenchmarkHTTPBareTwoScripts is the usual design the service is compared with: a bare Gin
// route that runs one limiter script (a Redis token bucket) and then the reservation script,
// two Redis round trips per request.
func BenchmarkHTTPBareTwoScripts(b *testing.B) {
	benchBare(b, true)
}

// BenchmarkHTTPBareReserveScript is the reservation path's ceiling: a bare Gin route that runs
// the same reservation script once per request (through the inventory, with go-redis) and
// nothing else: no identity, config snapshot, kill switch, blacklist, canary or limiter.
// BenchmarkHTTPReserve over this ratio is what the service's own layers cost.
func BenchmarkHTTPBareReserveScript(b *testing.B) {
	benchBare(b, false)
}

func benchBare(b *testing.B, withLimiter bool) {
	benchVariants(b, func(b *testing.B, real bool) {
		a, _ := benchApp(b, real)
		client := benchClient()
		const shards = 16
		id := fmt.Sprintf("bench-bare-%d", time.Now().UnixNano()%1_000_000_000_000)
		benchCreate(b, client, a, id, 10_000_000, shards)
		if real {
			b.Cleanup(func() { benchCleanup(a, id, shards) })
		}
		gin.SetMode(gin.ReleaseMode)
		r := gin.New()
		bucket, err := limiter.NewRedisBucket(a.rdb)
		if err != nil {
			b.Fatal(err)
		}
		r.POST("/reserve/:id", func(c *gin.Context) {
			if withLimiter {
				ok, _, err := bucket.Take(c.Request.Context(), "sk:{bench-ip:"+c.GetHeader("X-User-Id")+"}:tb",
					tokenbucket.Limit{Rate: 1000, Burst: 1000}, 1)
				if err != nil || !ok {
					c.JSON(http.StatusServiceUnavailable, gin.H{"code": "UNAVAILABLE"})
					return
				}
			}
			res, err := a.inv.Reserve(c.Request.Context(), inventory.ReserveRequest{
				ActivityID: c.Param("id"), UserID: c.GetHeader("X-User-Id"), Quantity: 1,
				UserRate: tokenbucket.Limit{Rate: 1000, Burst: 1000}, Window: time.Minute, WindowMax: 1000,
			})
			if err != nil || res.Code != inventory.Reserved {
				c.JSON(http.StatusServiceUnavailable, gin.H{"code": "UNAVAILABLE"})
				return
			}
			c.JSON(http.StatusAccepted, gin.H{"reservationId": res.ReservationID, "activityId": c.Param("id"), "status": "PENDING"})
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: r}
		go srv.Serve(ln)
		defer srv.Close()
		url := "http://" + ln.Addr().String() + "/reserve/" + id
		b.ReportAllocs()
		b.SetParallelism(benchParallelism)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest(http.MethodPost, url, nil)
				req.Header.Set("X-User-Id", "bb-"+strconv.FormatInt(benchSeq.Add(1), 10))
				if code, err := benchDo(client, req); err != nil || code != http.StatusAccepted {
					b.Errorf("bare reserve: %d %v", code, err)
					return
				}
			}
		})
	})
}
