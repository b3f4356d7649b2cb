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
	base, stop := benchServe(b, r)
	defer stop()
	url := base + "/hello"
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

// benchServe serves h on a loopback port of its own until stop, and returns its base URL.
func benchServe(b *testing.B, h http.Handler) (base string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }
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

// benchActivity creates activity id (stock units on shards) on a, deleted at the end of b when
// a runs on the real Redis, and returns the URL of its reservations.
func benchActivity(b *testing.B, c *http.Client, a *App, real bool, id string, stock, shards int) (url string) {
	b.Helper()
	benchCreate(b, c, a, id, stock, shards)
	if real {
		b.Cleanup(func() { benchCleanup(a, id, shards) })
	}
	return "http://" + a.Addr() + "/api/v1/activities/" + id + "/reservations"
}

// benchPost sends a reservation's POST to url as user and returns the answer's status.
func benchPost(c *http.Client, url, user string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	req.Header.Set("X-User-Id", user)
	return benchDo(c, req)
}

// benchWarm posts to url as new users (prefix and a number) until ready reports true of the
// try (its number and status), pausing between tries, and fails b when what was not reached
// within 5 s: it brings the activity to the state a benchmark measures.
func benchWarm(b *testing.B, c *http.Client, url, prefix string, pause time.Duration, what string, ready func(i, code int) bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		code, err := benchPost(c, url, prefix+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		if ready(i, code) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not reached within 5 s (last %d)", what, code)
		}
		time.Sleep(pause)
	}
}

// benchParallel is the measured loop: POSTs to url from benchParallelism goroutines per CPU,
// each by a new user (prefix and a sequence number), which must answer want or a status
// other reports true for (other may be nil); what names the request in an error. With a, it
// reports the instance's Redis calls per request (redis-calls/op).
func benchParallel(b *testing.B, a *App, c *http.Client, url, prefix, what string, want int, other func(code int) bool) {
	var calls0 float64
	if a != nil {
		calls0 = redisCalls(b, a)
	}
	b.ReportAllocs()
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			code, err := benchPost(c, url, prefix+strconv.FormatInt(benchSeq.Add(1), 10))
			if other != nil && other(code) {
				continue
			}
			if err != nil || code != want {
				b.Errorf("%s: %d %v", what, code, err)
				return
			}
		}
	})
	if a != nil {
		b.StopTimer()
		b.ReportMetric((redisCalls(b, a)-calls0)/float64(b.N), "redis-calls/op")
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
func redisCalls(b testing.TB, a *App) float64 {
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
		a, _ := benchApp(b, real)
		client := benchClient()
		id := fmt.Sprintf("bench-res-%d", time.Now().UnixNano()%1_000_000_000_000)
		url := benchActivity(b, client, a, real, id, 10_000_000, 16)
		benchParallel(b, a, client, url, "bu-", "reserve", http.StatusAccepted, nil)
	})
}

// BenchmarkHTTPSoldOut: the activity is sold out and the instance knows it: every request a
// new user who gets 410 SOLD_OUT from the local snapshot, with no Redis call.
func BenchmarkHTTPSoldOut(b *testing.B) {
	benchVariants(b, func(b *testing.B, real bool) {
		a, _ := benchApp(b, real)
		client := benchClient()
		id := fmt.Sprintf("bench-so-%d", time.Now().UnixNano()%1_000_000_000_000)
		url := benchActivity(b, client, a, real, id, 1, 1)
		// sell the unit, then wait until the instance answers 410 without asking Redis
		benchWarm(b, client, url, "bs-warm-", 20*time.Millisecond, "sell-out known locally", func(i, code int) bool {
			if code != http.StatusGone {
				return false
			}
			c0 := redisCalls(b, a)
			benchPost(client, url, "bs-warm-x"+strconv.Itoa(i))
			return redisCalls(b, a) == c0
		})
		benchParallel(b, a, client, url, "bs-", "sold out", http.StatusGone, nil)
	})
}

// BenchmarkHTTPRateLimited: the activity's own budget (activities.<id>.limits, rate 1/s
// burst 1) is exhausted, so every request, a new user each time, gets 429 RATE_LIMITED from
// the leased budget of the limiter, with no Redis call (the 429 row of scripts/bench.sh
// ratios). The budget still admits one request a second (202, counted in admitted/op).
func BenchmarkHTTPRateLimited(b *testing.B) {
	benchVariants(b, func(b *testing.B, real bool) {
		id := fmt.Sprintf("bench-rl-%d", time.Now().UnixNano()%1_000_000_000_000)
		a, _ := benchAppConfig(b, real, "activities: {"+id+": {limits: {rate: 1, burst: 1}}}\n")
		client := benchClient()
		url := benchActivity(b, client, a, real, id, 1_000_000, 1)
		// spend the burst, then wait until the answer is 429
		benchWarm(b, client, url, "br-warm-", 0, "429", func(_, code int) bool { return code == http.StatusTooManyRequests })
		var admitted atomic.Int64
		benchParallel(b, a, client, url, "br-", "rate limited", http.StatusTooManyRequests, func(code int) bool {
			if code != http.StatusAccepted {
				return false
			}
			admitted.Add(1) // the budget's one token per second
			return true
		})
		b.ReportMetric(float64(admitted.Load())/float64(b.N), "admitted/op")
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
		id := fmt.Sprintf("bench-bare-%d", time.Now().UnixNano()%1_000_000_000_000)
		benchActivity(b, client, a, real, id, 10_000_000, 16)
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
		base, stop := benchServe(b, r)
		defer stop()
		url := base + "/reserve/" + id
		benchParallel(b, nil, client, url, "bb-", "bare reserve", http.StatusAccepted, nil)
	})
}
