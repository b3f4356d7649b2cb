package inventory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// backend is one Redis the same suite runs against.
type backend struct {
	name string
	dial func(testing.TB) redis.UniversalClient
}

// backends lists the real servers (with the integration build tag, see serverBackends) and
// miniredis, on which the embedded mode runs the same scripts.
func backends() []backend {
	return append(serverBackends(), backend{"miniredis", miniRedis})
}

// forEachBackend runs f as a subtest per backend.
func forEachBackend(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient)) {
	forBackends(t, true, f)
}

// forBackends runs f per backend, on miniredis only when mini is true (it is slow under
// heavy concurrency with -race).
func forBackends(t *testing.T, mini bool, f func(t *testing.T, rdb redis.UniversalClient)) {
	for _, b := range backends() {
		if b.name == "miniredis" && !mini {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			f(t, b.dial(t))
		})
	}
}

func miniRedis(t testing.TB) redis.UniversalClient {
	mr := miniredis.RunT(t)
	// miniredis expires keys only when told time passed (the embedded mode must do the same).
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				mr.FastForward(10 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	// miniredis runs one command at a time: a rush of hundreds of goroutines queues for the
	// client's pool, and on a loaded machine longer than the default PoolTimeout (4 s), which
	// made a reserve fail with "connection pool timeout". The wait for a connection is bounded
	// by the test's context (ctxT) instead.
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true, PoolTimeout: time.Minute})
	t.Cleanup(func() { c.Close() })
	return c
}

// uniqueID is an activity id of the test plus random hex.
func uniqueID(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 48 {
		name = name[len(name)-48:]
	}
	return name + "-" + hex.EncodeToString(b[:])
}

// workers runs n goroutines that each call step until stop is closed or step returns false;
// wait waits for them all.
func workers(n int, stop <-chan struct{}, step func() bool) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !step() {
					return
				}
			}
		}()
	}
	return wg.Wait
}

// rush runs f(0) ... f(n-1) on n goroutines released together, so they meet in Redis at
// once, and returns when every one has.
func rush(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}

// reserveRush sends n reservations on s at once (rush), req(i) the i-th, and returns their
// answers by i.
func reserveRush(ctx context.Context, s *Store, n int, req func(i int) ReserveRequest) ([]ReserveResult, []error) {
	results, errs := make([]ReserveResult, n), make([]error, n)
	rush(n, func(i int) { results[i], errs[i] = s.Reserve(ctx, req(i)) })
	return results, errs
}

// testIssuer is the issuer part of the reservation ids the tests make themselves.
const testIssuer = "00000000000000aa"

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newStore(t testing.TB, rdb redis.UniversalClient, opts Options) *Store {
	t.Helper()
	s, err := New(rdb, opts, nil, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeWith is the start of most tests: a store (opts) on rdb with the activity def created,
// and the test's context.
func storeWith(t testing.TB, rdb redis.UniversalClient, opts Options, def Activity) (*Store, Activity, context.Context) {
	t.Helper()
	s := newStore(t, rdb, opts)
	return s, mustCreate(t, s, def), ctxT(t)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustRefresh runs one refresh pass of s (Store.Refresh) and fails the test on its error.
func mustRefresh(ctx context.Context, t testing.TB, s *Store) {
	t.Helper()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
}

// refreshed is what s knows of activity id after one refresh pass.
func refreshed(ctx context.Context, t testing.TB, s *Store, id string) (ActivityView, bool) {
	t.Helper()
	mustRefresh(ctx, t, s)
	return s.Activity(id)
}

func mustCreate(t testing.TB, s *Store, a Activity) Activity {
	t.Helper()
	got, created, err := s.Create(ctxT(t), a)
	if err != nil || !created {
		t.Fatalf("create %s: created=%v err=%v", a.ID, created, err)
	}
	return got
}

// openActivity is an open activity with the given stock, limit and shards.
func openActivity(t testing.TB, stock int64, limit, shards int) Activity {
	return Activity{ID: uniqueID(t), Stock: stock, PerUserLimit: limit, Shards: shards,
		OpensAt: time.Now().Add(-time.Minute)}
}

// shardState sums what the shards of every epoch of an activity hold.
type shardState struct {
	remaining int64 // current layout
	minStock  int64
	buyers    int64 // users with a count in the users hashes of the current layout
	journal   int64 // XLEN over every epoch
	taken     int64 // stats.taken over every epoch
}

func readState(t testing.TB, rdb redis.UniversalClient, id string) shardState {
	t.Helper()
	ctx := ctxT(t)
	st := shardState{minStock: 1 << 62}
	forShards(t, rdb, id, func(m map[string]string, lay string, e, i int, k ShardKeys) {
		st.journal += rdb.XLen(ctx, k.Journal()).Val()
		tk, _ := rdb.HGet(ctx, k.Stats(), "taken").Int64()
		st.taken += tk
		if v, err := rdb.Get(ctx, k.Stock()).Int64(); err == nil {
			st.minStock = min(st.minStock, v)
		}
		if strings.Split(lay, ":")[0] == m["epoch"] {
			v, err := rdb.Get(ctx, k.Stock()).Int64()
			if err != nil {
				t.Fatalf("current shard %d stock: %v", i, err)
			}
			st.remaining += v
			st.buyers += buyers(t, rdb, k)
		}
	})
	return st
}

// forShards reads activity id's meta m and calls f with every shard of every layout it names
// (lay the layout as meta writes it, e its epoch, i the shard's index, k its keys).
func forShards(t testing.TB, rdb redis.UniversalClient, id string, f func(m map[string]string, lay string, e, i int, k ShardKeys)) {
	t.Helper()
	m, err := rdb.HGetAll(ctxT(t), Meta(id)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, lay := range strings.Split(m["layouts"], ",") {
		e, n, ok := parseTarget(lay)
		if !ok {
			t.Fatalf("bad layouts %q", m["layouts"])
		}
		for i := 0; i < n; i++ {
			f(m, lay, e, i, Shard(id, e, i))
		}
	}
}

// buyers counts the users with units held in the users hash of shard k (fields "<uh>",
// user.go; the other fields carry a ':').
func buyers(t testing.TB, rdb redis.UniversalClient, k ShardKeys) int64 {
	t.Helper()
	all, err := rdb.HGetAll(ctxT(t), k.Users()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for f, v := range all {
		if strings.Contains(f, ":") {
			continue
		}
		if u, ok := ParseUserState(v); !ok {
			t.Fatalf("user %s of %s: %q", f, k.Users(), v)
		} else if u.Held > 0 {
			n++
		}
	}
	return n
}

// keysOfActivity lists the keys of activity id's tags, {id} (meta) and {id:<epoch>:<shard>},
// found by SCAN on every master of a Cluster.
func keysOfActivity(t testing.TB, rdb redis.UniversalClient, id string) []string {
	t.Helper()
	ctx := ctxT(t)
	var mu sync.Mutex // ForEachMaster calls the masters at once
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, "sk:{"+id+"[}:]*", 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		t.Fatalf("unexpected client %T", rdb)
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// heldOn is the units the user with hash uh holds on shard k (0 without a state).
func heldOn(t testing.TB, rdb redis.UniversalClient, k ShardKeys, uh string) int64 {
	t.Helper()
	u, _, err := ReadUserState(ctxT(t), rdb, k, uh)
	if err != nil {
		t.Fatal(err)
	}
	return u.Held
}
