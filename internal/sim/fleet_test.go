//go:build integration

package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
)

// The fleet simulation (issue 19): several instances, each a Store with its own Redis client,
// cache and layouts, on one Redis (standalone and Cluster), doing what a deployment does to
// one activity: reservations (one at a time and in bursts, refills moving units between
// shards), reshards from any instance (overlapping, and runs that stall part way and wake
// after others moved on), restarts under the same instance id (fresh process: fresh
// counters), two instances running the background jobs (settle transit, retire old layouts)
// at once, and time passing past the retire age. After every step it checks from the ground
// truth (stock keys, drained markers, transit entries, reservation records found by SCAN):
//   - stock keys + drained units of a reshard in progress + transit entries + units of the
//     reservation records = the stock loaded;
//   - each record is an accepted reservation (id and user), and each accepted one has its record;
//   - a drained shard holds no stock;
//   - a user's sequence on the current layout never goes down;
//   - the reconciliation's counts (Ledger.Counts) agree: remaining = stock keys + transit,
//     taken = the units of the records.
// Seeds: SECKILL_FLEET_SEEDS (default 3 per backend, run in parallel), steps SECKILL_FLEET_STEPS (default 60);
// SECKILL_FLEET_SOAK=1 runs 100 seeds of 200 steps. SECKILL_FLEET_SEED runs one seed;
// SECKILL_FLEET_BACKEND (standalone or cluster) runs on one backend only.

// stall parks the Redis calls of one request at call parkAt until released.
type stall struct {
	parkAt, calls int
	parked        chan struct{}
	release       chan struct{}
	done          chan error
}

type stallKey struct{}

// stallHook parks the calls, single or pipelined, of the request whose context carries a stall.
var stallHook = redishook.Hook{
	Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		park(ctx)
		return next(ctx, cmd)
	},
	Pipeline: func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
		park(ctx)
		return next(ctx, cmds)
	},
}

func park(ctx context.Context) {
	st, _ := ctx.Value(stallKey{}).(*stall)
	if st == nil {
		return
	}
	st.calls++
	if st.calls == st.parkAt {
		close(st.parked)
		<-st.release
	}
}

type member struct {
	id string
	s  *inventory.Store
}

type fleet struct {
	t        *testing.T
	seed     int64
	rng      *rand.Rand
	ctx      context.Context
	rdb      redis.UniversalClient // the checker's
	dial     func() redis.UniversalClient
	opts     inventory.Options
	ledger   *inventory.Ledger
	aid      string
	stock    int64
	limit    int
	members  []*member
	users    []string
	accepted map[string]string // reservation id -> user
	seqs     map[string]int64  // user -> highest sequence seen on the current layout
	stalled  []*stall
	step     int
	last     string
}

func (f *fleet) newStore(id string) *inventory.Store {
	s, err := inventory.New(f.dial(), inventory.Options{InstanceID: id, Namespace: f.opts.Namespace,
		ReshardWorkers: 1, RetireAfter: f.opts.RetireAfter, ReshardRunLimit: f.opts.ReshardRunLimit}, nil, quietLog())
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fleet) fatalf(format string, args ...any) {
	f.t.Helper()
	f.t.Fatalf("seed %d step %d (%s): %s (rerun: SECKILL_FLEET_SEED=%d)", f.seed, f.step, f.last, fmt.Sprintf(format, args...), f.seed)
}

// reserve runs one reservation on member m and records what it accepted.
func (f *fleet) reserve(m *member, user string, qty int, mu *sync.Mutex) {
	r, err := m.s.Reserve(f.ctx, inventory.ReserveRequest{ActivityID: f.aid, UserID: user, Quantity: qty})
	if err != nil && !errors.Is(err, inventory.ErrBusy) {
		f.t.Errorf("seed %d step %d: reserve on %s: %v", f.seed, f.step, m.id, err)
		return
	}
	if err == nil && r.Code == inventory.Reserved {
		mu.Lock()
		f.accepted[r.ReservationID] = user
		mu.Unlock()
	}
}

// reshard runs a reshard on m with ctx; a run that finds the layout moving under it is fine.
func (f *fleet) reshard(ctx context.Context, m *member, n int) error {
	err := m.s.Reshard(ctx, f.aid, n)
	if err != nil && !errors.Is(err, inventory.ErrBusy) {
		return err
	}
	return nil
}

func (f *fleet) pick() *member { return f.members[f.rng.Intn(len(f.members))] }

func (f *fleet) run(steps int) {
	var mu sync.Mutex
	for f.step = 1; f.step <= steps; f.step++ {
		x := f.rng.Intn(100)
		switch {
		case x < 40:
			m, u, q := f.pick(), f.users[f.rng.Intn(len(f.users))], 1+f.rng.Intn(f.limit)
			f.last = fmt.Sprintf("reserve %s %d on %s", u, q, m.id)
			f.reserve(m, u, q, &mu)
		case x < 50:
			f.last = "burst of 4 reservations"
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				m, u := f.pick(), f.users[f.rng.Intn(len(f.users))]
				wg.Add(1)
				go func() { defer wg.Done(); f.reserve(m, u, 1, &mu) }()
			}
			wg.Wait()
		case x < 62:
			m, n := f.pick(), 1+f.rng.Intn(5)
			f.last = fmt.Sprintf("reshard to %d on %s", n, m.id)
			if err := f.reshard(f.ctx, m, n); err != nil {
				f.fatalf("reshard: %v", err)
			}
		case x < 70:
			a, b := f.pick(), f.pick()
			na, nb := 1+f.rng.Intn(5), 1+f.rng.Intn(5)
			f.last = fmt.Sprintf("overlapping reshards to %d on %s and %d on %s", na, a.id, nb, b.id)
			errs := make(chan error, 2)
			go func() { errs <- f.reshard(f.ctx, a, na) }()
			go func() { errs <- f.reshard(f.ctx, b, nb) }()
			for i := 0; i < 2; i++ {
				if err := <-errs; err != nil {
					f.fatalf("reshard: %v", err)
				}
			}
		case x < 76:
			if len(f.stalled) >= 2 {
				continue
			}
			m, n := f.pick(), 1+f.rng.Intn(5)
			st := &stall{parkAt: 1 + f.rng.Intn(14), parked: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
			f.last = fmt.Sprintf("reshard to %d on %s stalls at call %d", n, m.id, st.parkAt)
			ctx := context.WithValue(f.ctx, stallKey{}, st)
			go func() { st.done <- f.reshard(ctx, m, n) }()
			select {
			case <-st.parked:
				f.stalled = append(f.stalled, st)
			case err := <-st.done: // finished before the call it was to stall at
				if err != nil {
					f.fatalf("reshard: %v", err)
				}
			}
		case x < 82:
			if len(f.stalled) == 0 {
				continue
			}
			st := f.stalled[0]
			f.stalled = f.stalled[1:]
			f.last = fmt.Sprintf("a stalled reshard run wakes (parked at call %d)", st.parkAt)
			close(st.release)
			if err := <-st.done; err != nil {
				f.fatalf("woken reshard: %v", err)
			}
		case x < 89:
			i := f.rng.Intn(len(f.members))
			f.last = fmt.Sprintf("%s restarts under the same id", f.members[i].id)
			f.members[i] = &member{id: f.members[i].id, s: f.newStore(f.members[i].id)}
		case x < 97:
			a, b := f.pick(), f.pick()
			f.last = fmt.Sprintf("%s and %s run the background jobs at once", a.id, b.id)
			f.background(a, b)
		default:
			f.last = "the retire age passes"
			time.Sleep(f.opts.RetireAfter + 100*time.Millisecond)
			f.background(f.pick(), f.pick())
		}
		f.check()
	}
	for _, st := range f.stalled {
		close(st.release)
		if err := <-st.done; err != nil {
			f.fatalf("woken reshard: %v", err)
		}
	}
	f.stalled = nil
	f.last = "every stalled run woke"
	f.check()
}

// background runs Recover and Retire on a and b at the same time.
func (f *fleet) background(a, b *member) {
	var wg sync.WaitGroup
	for _, m := range []*member{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.s.Recover(f.ctx, f.aid, 0); err != nil && !errors.Is(err, inventory.ErrBusy) {
				f.t.Errorf("seed %d step %d: recover on %s: %v", f.seed, f.step, m.id, err)
			}
			if _, err := m.s.Retire(f.ctx, f.aid); err != nil {
				f.t.Errorf("seed %d step %d: retire on %s: %v", f.seed, f.step, m.id, err)
			}
		}()
	}
	wg.Wait()
}

// scan lists the keys matching pattern on every master, each once (SCAN may return a key
// twice).
func (f *fleet) scan(pattern string) []string {
	var mu sync.Mutex
	seen := map[string]bool{}
	var out []string
	one := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	switch c := f.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(f.ctx, one)
	case *redis.Client:
		err = one(f.ctx, c)
	}
	if err != nil {
		f.fatalf("scan %s: %v", pattern, err)
	}
	return out
}

// activityKeys is every key of the activity (sk:{<aid>:...), found by one SCAN pass, sorted
// into the kinds the check reads: what the patterns sk:{<aid>:*}:stock, ...:drained, ...:xout
// and sk:{<aid>:*}:users (whose r:<n> fields are the reservation records) match. One pass instead of one per kind: a pass visits every key of
// the server (156,000 on a shared test Redis, where SCAN was the costliest command). COUNT
// stays 1000, so one call holds the single-threaded server for about as long as before.
type activityKeys struct{ stock, drained, xout, users []string }

func (f *fleet) activityKeys() activityKeys {
	prefix := "sk:{" + f.aid + ":"
	var ks activityKeys
	for _, k := range f.scan(prefix + "*") {
		rest := strings.TrimPrefix(k, prefix)
		switch {
		case strings.HasSuffix(rest, "}:stock"):
			ks.stock = append(ks.stock, k)
		case strings.HasSuffix(rest, "}:drained"):
			ks.drained = append(ks.drained, k)
		case strings.HasSuffix(rest, "}:xout"):
			ks.xout = append(ks.xout, k)
		case strings.HasSuffix(rest, "}:users"):
			ks.users = append(ks.users, k)
		}
	}
	return ks
}

// check verifies the invariants from the ground truth (see the top of the file).
func (f *fleet) check() {
	f.t.Helper()
	ctx := f.ctx
	meta := f.rdb.HGetAll(ctx, inventory.Meta(f.aid)).Val()
	cur, _ := strconv.Atoi(meta["epoch"])
	shards, _ := strconv.Atoi(meta["shards"])
	moving := meta["reshard"] != ""
	keys := f.activityKeys()
	var units int64 // stock keys + drained units of the reshard in progress + transit
	tagOf := func(key string) (epoch int, ok bool) {
		inner := strings.TrimPrefix(key, "sk:{"+f.aid+":")
		parts := strings.SplitN(inner, ":", 2)
		e, err := strconv.Atoi(parts[0])
		return e, err == nil
	}
	for _, k := range keys.stock {
		e, ok := tagOf(k)
		if !ok || moving && e == cur+1 { // the layout being built: its units are the drained ones
			continue
		}
		v, _ := f.rdb.Get(ctx, k).Int64()
		units += v
		if e < cur {
			// An older layout than the current one has no stock: it was drained.
			f.fatalf("stock key %s of an old layout holds %d", k, v)
		}
	}
	for _, k := range keys.drained {
		if f.rdb.Exists(ctx, strings.TrimSuffix(k, "drained")+"stock").Val() == 1 {
			f.fatalf("drained shard %s holds stock", k)
		}
		if e, ok := tagOf(k); ok && moving && e == cur {
			v, _ := f.rdb.Get(ctx, k).Int64()
			units += v
		}
	}
	for _, k := range keys.xout {
		for id, v := range f.rdb.HGetAll(ctx, k).Val() {
			u, _, _ := strings.Cut(v, "|")
			n, err := strconv.ParseInt(u, 10, 64)
			if err != nil {
				f.fatalf("transit entry %s of %s: %q", id, k, v)
			}
			units += n
		}
	}
	var held int64
	records := 0
	for _, k := range keys.users {
		for field, v := range f.rdb.HGetAll(ctx, k).Val() {
			if !strings.HasPrefix(field, "r:") || strings.HasSuffix(field, ":c") {
				continue
			}
			rec, ok := inventory.ParseRecord(v)
			if !ok {
				f.fatalf("record %s %s: %q", k, field, v)
			}
			records++
			if rec.Status != "FAILED" {
				held += int64(rec.Quantity)
			}
			if u, ok := f.accepted[rec.ReservationID]; !ok || u != rec.UserID {
				f.fatalf("record %s %s (%s of %s) is no accepted reservation (accepted for %q)", k, field, rec.ReservationID, rec.UserID, u)
			}
		}
	}
	if records != len(f.accepted) {
		f.fatalf("%d records for %d accepted reservations", records, len(f.accepted))
	}
	if units+held != f.stock {
		f.fatalf("stock keys, drained units and transit %d + reserved %d = %d, want %d (meta %v)", units, held, units+held, f.stock, meta)
	}
	c, err := f.ledger.Counts(ctx, f.aid)
	if err != nil {
		f.fatalf("counts: %v", err)
	}
	if c.Remaining != units || c.Taken-c.Failed != held {
		f.fatalf("reconciliation counts remaining %d, taken %d, failed %d; the ground truth %d remaining, %d reserved",
			c.Remaining, c.Taken, c.Failed, units, held)
	}
	if moving {
		return
	}
	for _, u := range f.users {
		uh := f.members[0].s.UserHash(u)
		k := inventory.Shard(f.aid, cur, inventory.HomeShard(uh, shards))
		st, _, err := inventory.ReadUserState(ctx, f.rdb, k, uh)
		if err != nil {
			f.fatalf("user %s: %v", u, err)
		}
		seq := st.Seq
		if seq < f.seqs[u] {
			f.fatalf("user %s: sequence %d on %s, %d seen before", u, seq, k.Users(), f.seqs[u])
		}
		f.seqs[u] = seq
	}
}

func TestFleetSimulation(t *testing.T) {
	seeds, steps := 3, 60
	if os.Getenv("SECKILL_FLEET_SOAK") != "" {
		seeds, steps = 100, 200
	}
	if v, err := strconv.Atoi(os.Getenv("SECKILL_FLEET_SEEDS")); err == nil {
		seeds = v
	}
	if v, err := strconv.Atoi(os.Getenv("SECKILL_FLEET_STEPS")); err == nil {
		steps = v
	}
	list := make([]int64, 0, seeds)
	if v, err := strconv.ParseInt(os.Getenv("SECKILL_FLEET_SEED"), 10, 64); err == nil {
		list = append(list, v)
	} else {
		for i := 1; i <= seeds; i++ {
			list = append(list, int64(i))
		}
	}
	// The standalone seeds each get a redis-server of their own: the ground-truth check scans
	// the whole keyspace after every step, and the shared server holds every other test's keys
	// (hundreds of thousands by the time this runs), which made a seed take two minutes.
	private := func(t testing.TB) func(testing.TB) redis.UniversalClient {
		addr := testsvc.PrivateRedis(t)
		return func(tb testing.TB) redis.UniversalClient {
			c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, PoolSize: 64})
			tb.Cleanup(func() { c.Close() })
			return c
		}
	}
	shared := func(dial func(testing.TB) redis.UniversalClient) func(testing.TB) func(testing.TB) redis.UniversalClient {
		return func(testing.TB) func(testing.TB) redis.UniversalClient { return dial }
	}
	for _, bk := range []struct {
		name    string
		backend func(testing.TB) func(testing.TB) redis.UniversalClient
	}{{"standalone", private}, {"cluster", shared(testsvc.RedisCluster)}} {
		if b := os.Getenv("SECKILL_FLEET_BACKEND"); b != "" && b != bk.name {
			continue
		}
		t.Run(bk.name, func(t *testing.T) {
			for _, seed := range list {
				t.Run("seed="+strconv.FormatInt(seed, 10), func(t *testing.T) {
					t.Parallel() // the seeds mostly wait (stalled runs, the retire age)
					t.Logf("seed %d, %d steps", seed, steps)
					runFleet(t, bk.backend(t), seed, steps)
				})
			}
		})
	}
}

func runFleet(t *testing.T, dial func(testing.TB) redis.UniversalClient, seed int64, steps int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewSource(seed))
	run := strconv.FormatInt(seed, 10) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	rdb := dial(t)
	dialHooked := func() redis.UniversalClient {
		c := dial(t)
		c.AddHook(stallHook)
		return c
	}
	ledger, err := inventory.NewLedger(rdb)
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, seed: seed, rng: rng, ctx: ctx, rdb: rdb, dial: dialHooked, ledger: ledger,
		opts:  inventory.Options{Namespace: "fleet-" + run, RetireAfter: 1500 * time.Millisecond, ReshardRunLimit: 500 * time.Millisecond},
		aid:   "fleet-" + run,
		stock: int64(20 + rng.Intn(60)), limit: 1 + rng.Intn(3),
		accepted: map[string]string{}, seqs: map[string]int64{}}
	for i := 0; i < 3; i++ {
		id := "host-" + strconv.Itoa(i+1)
		f.members = append(f.members, &member{id: id, s: f.newStore(id)})
	}
	for i := 0; i < 12; i++ {
		f.users = append(f.users, "u"+strconv.Itoa(i))
	}
	if _, _, err := f.members[0].s.Create(ctx, inventory.Activity{ID: f.aid, Stock: f.stock, PerUserLimit: f.limit,
		Shards: 1 + rng.Intn(4)}); err != nil {
		t.Fatal(err)
	}
	f.run(steps)
}
