package order

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/sql"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	os.Exit(m.Run())
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func testMetrics() *Metrics { return must(NewMetrics(prometheus.NewRegistry())) }

// uniq returns a name unique to this run, usable as an activity id, topic or group.
func uniq(prefix string) string {
	return prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// testActivity is an activity written straight into Redis in the DESIGN.md layout, with
// its own journals and activities sets so parallel tests (and other packages' relays) never
// see each other's streams.
type testActivity struct {
	t          testing.TB
	rdb        redis.UniversalClient
	id         string
	shards     int
	stock      int64
	journals   string
	activities string
	mu         sync.Mutex
	users      map[string]int // user id -> units held (seq)
}

func newTestActivity(t testing.TB, rdb redis.UniversalClient, db *gorm.DB, shards int, stock int64) *testActivity {
	t.Helper()
	ctx := context.Background()
	a := &testActivity{t: t, rdb: rdb, id: uniq("ot"), shards: shards, stock: stock, users: map[string]int{}}
	a.journals = "test:journals:" + a.id
	a.activities = "test:activities:" + a.id
	pipe := rdb.Pipeline()
	pipe.HSet(ctx, inventory.Meta(a.id), "stock", stock, "epoch", 0, "shards", shards,
		"layouts", fmt.Sprintf("0:%d", shards), "perUserLimit", 100)
	pipe.SAdd(ctx, a.activities, a.id)
	for i := 0; i < shards; i++ {
		k := inventory.Shard(a.id, 0, i)
		per := stock / int64(shards)
		if i == 0 {
			per += stock % int64(shards)
		}
		pipe.Set(ctx, k.Stock(), per, time.Hour)
		pipe.SAdd(ctx, a.journals, k.Journal())
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if db != nil {
		// MySQL's row: the writer's guard (insert.go) counts the orders against it.
		row := sql.Activity{ID: a.id, Stock: stock, PerUserLimit: 100, OpensAt: time.Now().UTC(), Shards: shards, Generation: "g0"}
		if err := db.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		var keys []string
		keys = append(keys, inventory.Meta(a.id), a.journals, a.activities)
		for i := 0; i < shards; i++ {
			k := inventory.Shard(a.id, 0, i)
			keys = append(keys, k.Stock(), k.Stats(), k.Journal(), k.Seq(), k.Users())
		}
		rdb.Del(ctx, keys...)
		if db != nil {
			db.Exec("DELETE FROM orders WHERE activity_id = ?", a.id)
			db.Exec("DELETE FROM compensations WHERE activity_id = ?", a.id)
			db.Exec("DELETE FROM activities WHERE id = ?", a.id)
		}
	})
	return a
}

// reserve writes n reservations of one unit each, for n distinct new users, as the
// inventory's reserve script would: stock taken on the user's home shard, record, stats,
// journal entry. It returns the messages the relay should produce.
func (a *testActivity) reserve(n int) []Message {
	a.t.Helper()
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("user-%s-%d", a.id, i)
	}
	return a.reserveFor(users, 1)
}

// reserveFor writes one reservation of qty units per listed user (a user may repeat).
func (a *testActivity) reserveFor(users []string, qty int) []Message {
	a.t.Helper()
	ctx := context.Background()
	out := make([]Message, 0, len(users))
	const chunk = 500
	for len(users) > 0 {
		part := users[:min(chunk, len(users))]
		users = users[len(part):]
		// Take the record numbers first.
		pipe := a.rdb.Pipeline()
		incr := make([]*redis.IntCmd, len(part))
		homes := make([]int, len(part))
		for i, u := range part {
			homes[i] = inventory.HomeShard(testHasher.UserHash(u), a.shards)
			incr[i] = pipe.Incr(ctx, inventory.Shard(a.id, 0, homes[i]).Seq())
		}
		if _, err := pipe.Exec(ctx); err != nil {
			a.t.Fatal(err)
		}
		now := time.Now().UnixMilli()
		pipe = a.rdb.Pipeline()
		for i, u := range part {
			k := inventory.Shard(a.id, 0, homes[i])
			nrec := incr[i].Val()
			a.mu.Lock()
			a.users[u] += qty
			seq := a.users[u]
			a.mu.Unlock()
			m := Message{ReservationID: inventory.ReservationID(a.id, 0, homes[i], nrec, testIssuer, nrec), ActivityID: a.id,
				UserID: u, UserHash: testHasher.UserHash(u), Quantity: qty, Seq: seq,
				Shard: homes[i], Epoch: 0, TS: now}
			out = append(out, m)
			pipe.DecrBy(ctx, k.Stock(), int64(qty))
			pipe.HSet(ctx, k.Users(), m.UserHash, inventory.UserState{Held: int64(seq), Seq: int64(seq), Last: m.ReservationID}.String())
			pipe.HSet(ctx, k.Users(), inventory.RecordField(nrec), inventory.Record{Status: "PENDING", Quantity: qty, TS: now,
				UserHash: m.UserHash, ReservationID: m.ReservationID, UserID: u}.String())
			pipe.HIncrBy(ctx, k.Stats(), "taken", int64(qty))
			vals := []any{"rid", m.ReservationID, "aid", a.id, "uid", u, "uh", m.UserHash, "qty", qty, "seq", seq,
				"shard", m.Shard, "epoch", 0, "ts", now}
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: k.Journal(), Values: vals})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			a.t.Fatal(err)
		}
	}
	return out
}

// statuses counts the reservation records of the activity by status.
func (a *testActivity) statuses() map[string]int {
	a.t.Helper()
	ctx := context.Background()
	out := map[string]int{}
	for i := 0; i < a.shards; i++ {
		k := inventory.Shard(a.id, 0, i)
		top, _ := a.rdb.Get(ctx, k.Seq()).Int64()
		for n := int64(1); n <= top; n++ {
			r, _, _ := inventory.ReadRecord(ctx, a.rdb, k, n)
			out[r.Status]++
		}
	}
	return out
}

type orderCounts struct{ rows, distinct, units int64 }

func countOrders(t testing.TB, db *gorm.DB, activity string) orderCounts {
	t.Helper()
	var c struct{ Rows, Distinct, Units int64 }
	if err := db.Model(&sql.Order{}).Where("activity_id = ?", activity).
		Select("COUNT(*) AS `rows`, COUNT(DISTINCT reservation_id) AS `distinct`, COALESCE(SUM(quantity),0) AS `units`").
		Scan(&c).Error; err != nil {
		t.Fatal(err)
	}
	return orderCounts{c.Rows, c.Distinct, c.Units}
}

// waitOrders waits until the activity has want order rows and every record is settled.
func waitOrders(t testing.TB, db *gorm.DB, a *testActivity, want int64, timeout time.Duration) {
	t.Helper()
	var last string
	testwait.Eventually(t, timeout, func() bool {
		c := countOrders(t, db, a.id)
		if c.rows < want {
			last = fmt.Sprintf("%d orders", c.rows)
			return false
		}
		st := a.statuses()
		last = fmt.Sprintf("%d orders, statuses %v", c.rows, st)
		return st["PENDING"] == 0
	}, "%d orders, none PENDING (last: %v)", want, testwait.Lazy(func() string { return last }))
}

// writerDB opens the writer's own pool on dsn.
func writerDB(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db := testsvc.MySQL(t) // checks the server and gives a handle we discard
	_ = db
	return openDB(t, dsn)
}

func mysqlDB(t testing.TB) *gorm.DB {
	t.Helper()
	db := testsvc.MySQL(t)
	if err := sql.Migrate(db); err != nil {
		t.Fatal(err)
	}
	return db
}

func rmqOptions(t testing.TB, a *testActivity) RocketMQOptions {
	return RocketMQOptions{NameServer: []string{testsvc.RocketMQ(t)}, Topic: "ot-" + a.id,
		ProducerGroup: "otp-" + a.id, ConsumerGroup: "otc-" + a.id, InstanceName: uniq("oti"),
		QueueNums: 4, ConsumeBatch: 64}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// testHasher makes the user hashes of these tests. The order pipeline never hashes a user
// id: it uses the hash the journal entry carries.
// testIssuer is the issuer part of the reservation ids the tests journal themselves.
const testIssuer = "00000000000000aa"

var testHasher = mustHasher(bytes.Repeat([]byte{7}, inventory.MinUserHashKey))

func mustHasher(key []byte) *inventory.Hasher {
	h, err := inventory.NewHasher(key)
	if err != nil {
		panic(err)
	}
	return h
}

// compensated fails m's reservation for good with a fresh Compensator on db, failing the
// test when the compensation does not finish.
func compensated(t testing.TB, db *gorm.DB, rdb redis.UniversalClient, m Message) {
	t.Helper()
	if err := must(NewCompensator(db, rdb, testMetrics(), testLogger(t))).Compensate(context.Background(), m, "test"); err != nil {
		t.Fatalf("compensate: %v", err)
	}
}

// metricValue is the value of a counter or gauge.
func metricValue(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// keysOf returns the shard keys and record number of a valid message's reservation, for
// tests that arrange or inspect inventory's Redis state directly.
func keysOf(m Message) (inventory.ShardKeys, int64) {
	k, n, _ := inventory.ParseReservationID(m.ReservationID)
	return k, n
}

// recordOf reads the reservation record of a valid message (the zero Record when there is none).
func recordOf(t testing.TB, rdb redis.Cmdable, m Message) inventory.Record {
	t.Helper()
	k, n := keysOf(m)
	r, _, err := inventory.ReadRecord(context.Background(), rdb, k, n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// must returns v, or stops the test binary when a constructor failed (an embedded script
// that does not load, a metric registered twice): a defect no test can go on from.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
