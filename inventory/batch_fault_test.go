package inventory

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/tokenbucket"
)

// batchFault is a corruption planted on the faulty user's home shard before its reservation
// runs, alone or in a batch.
type batchFault struct {
	name string
	// plant corrupts shard k of the faulty user uh; it answers the user's state it wrote
	// ("" none).
	plant func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, uh string) (string, error)
	rate  tokenbucket.Limit // the requests' user bucket: its part of a user's state is read only when on
	shard bool              // every reservation on the shard fails, not only the faulty user's
	msg   string            // in the faulty reservation's error ("" any)
}

func plantState(v string) func(context.Context, redis.UniversalClient, ShardKeys, string) (string, error) {
	return func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, uh string) (string, error) {
		return v, rdb.HSet(ctx, k.Users(), uh, v).Err()
	}
}

var batchFaults = []batchFault{
	// The script's own error reply (a state without its four parts).
	{name: "malformed user state", plant: plantState("garbage"), msg: "malformed user state"},
	// A sequence that is not a number: held and the limits parse, the sequence is raised only
	// when the user buys.
	{name: "sequence not a number", plant: plantState("1|x||"), msg: "malformed user state"},
	// A user bucket time that is not a number: a Lua runtime error in the user bucket.
	{name: "user bucket not a number", plant: plantState("0|0||1|x|5|||"), rate: tokenbucket.Limit{Rate: 1, Burst: 5}},
	// A journal that is no stream: the XADD fails (WRONGTYPE) for each sale of the shard.
	{name: "journal of the wrong type", plant: func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, _ string) (string, error) {
		return "", rdb.Set(ctx, k.Journal(), "not a stream", 0).Err()
	}, shard: true},
	// A stock that DECRBY refuses: shard_close would fail after the shard's sales wrote.
	{name: "stock not an integer", plant: func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, _ string) (string, error) {
		return "", rdb.Set(ctx, k.Stock(), "9.5", 0).Err()
	}, shard: true, msg: "malformed stock"},
	// A counter of another type: MGET reads it as missing (a shard's first sale), INCRBY would
	// fail after the shard's sales wrote.
	{name: "counter of the wrong type", plant: func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, _ string) (string, error) {
		return "", rdb.HSet(ctx, k.Seq(), "n", "1").Err()
	}, shard: true, msg: "malformed stock or counter"},
	// A statistics key of another type, or a taken count that is not an integer: shard_close's
	// HINCRBY would fail after the shard's sales wrote, and a batch's later shards would not
	// close at all.
	{name: "stats of the wrong type", plant: func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, _ string) (string, error) {
		return "", rdb.Set(ctx, k.Stats(), "not a hash", 0).Err()
	}, shard: true, msg: "WRONGTYPE"},
	{name: "taken not an integer", plant: func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, _ string) (string, error) {
		return "", rdb.HSet(ctx, k.Stats(), "taken", "x").Err()
	}, shard: true, msg: "malformed statistics"},
	// A stock with a leading zero: a pattern of digits takes it, DECRBY does not.
	{name: "stock with a leading zero", plant: func(ctx context.Context, rdb redis.UniversalClient, k ShardKeys, _ string) (string, error) {
		return "", rdb.Set(ctx, k.Stock(), "010", 0).Err()
	}, shard: true, msg: "malformed stock"},
}

// shardTruth is what a shard holds: the ground truth a reservation's effects are checked on.
type shardTruth struct {
	stock, counter, taken int64
	journal, records      int64
	held                  int64  // units held by the users but the faulty one
	faulty                string // the faulty user's state ("" none)
	recs                  map[string]string
}

func readShardTruth(t *testing.T, ctx context.Context, rdb redis.UniversalClient, k ShardKeys, faulty string) shardTruth {
	t.Helper()
	var st shardTruth
	st.stock, _ = rdb.Get(ctx, k.Stock()).Int64()
	st.counter, _ = rdb.Get(ctx, k.Seq()).Int64()
	st.taken, _ = rdb.HGet(ctx, k.Stats(), "taken").Int64()
	if typ := rdb.Type(ctx, k.Journal()).Val(); typ == "stream" {
		st.journal = rdb.XLen(ctx, k.Journal()).Val()
	}
	all, err := rdb.HGetAll(ctx, k.Users()).Result()
	if err != nil {
		t.Fatal(err)
	}
	st.recs = map[string]string{}
	for f, v := range all {
		switch {
		case f == faulty:
			st.faulty = v
		case strings.HasPrefix(f, "r:"):
			st.records++
			st.recs[f] = v
		case !strings.Contains(f, ":"):
			u, ok := ParseUserState(v)
			if !ok {
				t.Fatalf("user %s of %s: %q", f, k.Users(), v)
			}
			st.held += int64(u.Held)
		}
	}
	return st
}

// checkSold fails unless shard k went from before to now by exactly sold units, one sale each:
// the stock, the counter, the taken statistic, the journal, the records and the units held
// all moved together, the faulty user's state stayed as planted and no record was rewritten.
func checkSold(t *testing.T, name string, before, now shardTruth, sold int64, planted string) {
	t.Helper()
	got := []struct {
		what string
		n    int64
	}{
		{"stock taken", before.stock - now.stock}, {"counter", now.counter - before.counter},
		{"taken statistic", now.taken - before.taken}, {"journal entries", now.journal - before.journal},
		{"records", now.records - before.records}, {"units held", now.held - before.held},
	}
	for _, g := range got {
		if g.n != sold {
			t.Errorf("%s: %s went up by %d, want %d (sold)", name, g.what, g.n, sold)
		}
	}
	if now.faulty != planted {
		t.Errorf("%s: the faulty user's state is %q, want %q as planted", name, now.faulty, planted)
	}
	for f, v := range before.recs {
		if now.recs[f] != v {
			t.Errorf("%s: record %s was %q, is %q", name, f, v, now.recs[f])
		}
	}
}

// userOnShard is the first user prefix<i> whose home is shard h of n.
func userOnShard(s *Store, prefix string, h, n int) string {
	for i := 0; ; i++ {
		if u := fmt.Sprintf("%s%d", prefix, i); HomeShard(s.UserHash(u), n) == h {
			return u
		}
	}
}

// faultItem is user u's reservation of one unit as reserveBatched queues it; ipKey "" without
// the IP bucket.
func faultItem(s *Store, e *entry, l *layout, u, ipKey string, rate tokenbucket.Limit) *batchItem {
	uh := s.UserHash(u)
	r := &ReserveRequest{ActivityID: e.def.ID, UserID: u, Quantity: 1, UserRate: rate}
	if ipKey != "" {
		r.IPKey, r.IPRate = ipKey, tokenbucket.Limit{Rate: 100, Burst: 10}
	}
	return &batchItem{r: r, home: HomeShard(uh, l.shards), uh: uh, idf: s.attemptField(uh), withIP: ipKey != "",
		ul: e.userLimitArgs(r), done: make(chan struct{}, 1)}
}

// TestBatchFaultFailsAlone: a reservation that fails in the script (an error reply, a Lua
// runtime error, a command refused), alone or in a batch, fails alone and leaves nothing: its
// caller gets an error carrying the script's message, the others of the batch (on its shard
// and on others) are answered and sold as if it had not been there, and every shard's stock,
// counter, statistic, journal, records and users agree; the next sale gets a number of its
// own. With the IP bucket, the failed reservation takes no IP token.
func TestBatchFaultFailsAlone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		_, cluster := rdb.(*redis.ClusterClient)
		for _, f := range batchFaults {
			for _, mode := range []struct {
				name  string
				batch bool // the faulty reservation between two others, else alone
				ip    bool
			}{{"alone", false, false}, {"batch", true, false}, {"alone/ip", false, true}, {"batch/ip", true, true}} {
				if mode.ip && cluster {
					continue // no IP bucket in the script on a cluster
				}
				t.Run(f.name+"/"+mode.name, func(t *testing.T) {
					runBatchFault(t, rdb, f, mode.batch, mode.ip, cluster)
				})
			}
		}
	})
}

func runBatchFault(t *testing.T, rdb redis.UniversalClient, f batchFault, batch, ip, cluster bool) {
	ctx := ctxT(t)
	s := newStore(t, rdb, Options{ReserveBatch: 8})
	a := mustCreate(t, s, openActivity(t, 20, 2, 2))
	e, err := s.entryFor(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	l := e.layout.Load()
	// The faulty user's shard: the other's on a single node (a batch spans shards there),
	// the same on a cluster (a batch is one shard's).
	bad := 1
	if cluster {
		bad = 0
	}
	users := []string{userOnShard(s, "fa", 0, 2), userOnShard(s, "fb", bad, 2), userOnShard(s, "fc", bad, 2)}
	faulty := 1
	if !batch {
		users, faulty = users[1:2], 0
	}
	fuh := s.UserHash(users[faulty])
	planted, err := f.plant(ctx, rdb, l.keys[bad], fuh)
	if err != nil {
		t.Fatal(err)
	}
	before := []shardTruth{readShardTruth(t, ctx, rdb, l.keys[0], fuh), readShardTruth(t, ctx, rdb, l.keys[1], fuh)}
	items := make([]*batchItem, len(users))
	ipKeys := make([]string, len(users))
	for i, u := range users {
		if ip {
			ipKeys[i] = "sk:{ip:" + uniqueID(t) + "}:tb"
			k := ipKeys[i]
			t.Cleanup(func() { rdb.Del(context.Background(), k) })
		}
		items[i] = faultItem(s, e, l, u, ipKeys[i], f.rate)
	}
	s.runBatch(ctx, e, l, items)

	sold := make([]int64, 2)
	for i, it := range items {
		fails := i == faulty || f.shard && it.home == bad
		t.Logf("%s (shard %d): %v %v", users[i], it.home, it.res, it.err)
		switch {
		case fails && it.err == nil:
			t.Errorf("%s: answered %v, want an error", users[i], it.res)
		case fails && (strings.Contains(it.err.Error(), "RedisError") || !strings.Contains(it.err.Error(), f.msg)):
			t.Errorf("%s: error %q, want the script's message (%q)", users[i], it.err, f.msg)
		case !fails && it.err != nil:
			t.Errorf("%s: %v, want its own answer", users[i], it.err)
		case !fails:
			if c, err := reserveCode(it.res); c != Reserved {
				t.Errorf("%s: %v %v, want RESERVED", users[i], it.res, err)
			}
			sold[it.home]++
		}
		if ip {
			n, err := rdb.Exists(ctx, ipKeys[i]).Result()
			if err != nil {
				t.Fatal(err)
			}
			if fails && n != 0 {
				t.Errorf("%s: failed, yet took an IP token", users[i])
			} else if !fails && n != 1 {
				t.Errorf("%s: sold without taking an IP token", users[i])
			}
		}
	}
	plantedOn := func(h int) string { // the faulty user's state on shard h
		if h == bad {
			return planted
		}
		return ""
	}
	after := make([]shardTruth, 2)
	for h := range after {
		after[h] = readShardTruth(t, ctx, rdb, l.keys[h], fuh)
		checkSold(t, fmt.Sprintf("shard %d", h), before[h], after[h], sold[h], plantedOn(h))
	}
	// The next sale of each shard the fault leaves selling: a number of its own, no record
	// of before rewritten.
	for h := range after {
		if f.shard && h == bad {
			continue
		}
		it := faultItem(s, e, l, userOnShard(s, "fn", h, 2), "", f.rate)
		s.runBatch(ctx, e, l, []*batchItem{it})
		if c, err := reserveCode(it.res); it.err != nil || c != Reserved {
			t.Fatalf("next sale on shard %d: %v %v %v", h, it.res, it.err, err)
		}
		checkSold(t, fmt.Sprintf("shard %d, next sale", h), after[h], readShardTruth(t, ctx, rdb, l.keys[h], fuh), 1, plantedOn(h))
	}
}
