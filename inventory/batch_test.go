package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// holdHook holds the first single reservation script sent with a context carrying holdFirst
// until release is closed, so the reservations sent meanwhile queue behind it (batch.go);
// it counts the batch script's calls, and with lose set answers each batch call with an
// error after Redis ran it (a reply lost on the way back).
type holdHook struct {
	single, batch, batchSrc string
	held                    chan struct{} // closed once the first call is held
	release                 chan struct{}
	lose                    bool // the batch script runs, its reply is lost
	failBefore              bool // the batch script fails before it reaches Redis
	disabled                bool // off: a hook cannot be removed from a client

	mu      sync.Mutex
	holding bool
	batches int
}

type holdFirst struct{}

// hook is the go-redis hook of h.
func (h *holdHook) hook() redishook.Hook {
	return redishook.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
		h.mu.Lock()
		off := h.disabled
		h.mu.Unlock()
		if off || len(cmd.Args()) < 2 {
			return next(ctx, cmd)
		}
		switch fmt.Sprint(cmd.Args()[1]) {
		case h.single:
			h.mu.Lock()
			first := !h.holding && ctx.Value(holdFirst{}) != nil
			h.holding = h.holding || first
			h.mu.Unlock()
			if first {
				close(h.held)
				<-h.release
			}
		case h.batch, h.batchSrc: // EVALSHA, or EVAL after NOSCRIPT
			if h.failBefore {
				cmd.SetErr(errors.New("connection refused (test: the batch never reached Redis)"))
				return cmd.Err()
			}
			if err := next(ctx, cmd); err != nil {
				return err // not run (NOSCRIPT: sent again with EVAL)
			}
			h.mu.Lock()
			h.batches++
			h.mu.Unlock()
			if h.lose {
				cmd.SetErr(errors.New("i/o timeout (test: the reply was lost)"))
			}
			return cmd.Err()
		}
		return next(ctx, cmd)
	}}
}

// off makes h pass every command through from now on.
func (h *holdHook) off() {
	h.mu.Lock()
	h.disabled = true
	h.mu.Unlock()
}

// queued is how many reservations wait in the queue of shard 0 of activity id.
func queued(t *testing.T, s *Store, id string) int {
	t.Helper()
	e, err := s.entryFor(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	b := &e.layout.Load().batchers[0]
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

type batchReq struct {
	user, key string
	qty       int
	ip        string             // the IP bucket's key ("" none)
	ipRate    *tokenbucket.Limit // its limit (nil: batchIPRate)
	limits    bool               // the user bucket and window of batchUserLimits
	ctx       context.Context
	cancel    func() // called once every request queued, before the hold is released
	res       ReserveResult
	err       error
}

// runHeld sends first (held in flight by h), then reqs, each once queued behind it in
// order, releases the hold and waits for every answer.
func runHeld(t *testing.T, s *Store, h *holdHook, id string, first *batchReq, reqs []*batchReq) {
	t.Helper()
	ctx := ctxT(t)
	var wg sync.WaitGroup
	send := func(r *batchReq, c context.Context) {
		defer wg.Done()
		req := ReserveRequest{ActivityID: id, UserID: r.user, IdempotencyKey: r.key, Quantity: r.qty}
		if r.limits {
			req.UserRate, req.Window, req.WindowMax = batchUserRate, time.Hour, 10
		}
		if r.ip != "" {
			req.IPKey, req.IPRate = r.ip, batchIPRate
			if r.ipRate != nil {
				req.IPRate = *r.ipRate
			}
		}
		r.res, r.err = s.Reserve(c, req)
	}
	wg.Add(1)
	go send(first, context.WithValue(ctx, holdFirst{}, true))
	<-h.held
	for i, r := range reqs {
		c := ctx
		if r.ctx != nil {
			c = r.ctx
		}
		wg.Add(1)
		go send(r, c)
		deadline := time.Now().Add(10 * time.Second)
		for queued(t, s, id) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("request %d never queued behind the held call", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	left := len(reqs)
	for _, r := range reqs {
		if r.cancel != nil {
			r.cancel()
			left--
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for queued(t, s, id) != left {
		if time.Now().After(deadline) {
			t.Fatalf("%d queued after the cancels, want %d", queued(t, s, id), left)
		}
		time.Sleep(time.Millisecond)
	}
	close(h.release)
	wg.Wait()
}

// runOneBatch is runHeld, and the reservations queued behind the held one went as one batch.
func runOneBatch(t *testing.T, s *Store, h *holdHook, id string, first *batchReq, reqs []*batchReq) {
	t.Helper()
	runHeld(t, s, h, id, first, reqs)
	if h.batches != 1 {
		t.Fatalf("%d batch calls for the %d reservations queued behind the held one, want 1 (the held one: %v)", h.batches, len(reqs), first.err)
	}
}

// wantCodes checks that each of reqs was answered want[i], without an error.
func wantCodes(t *testing.T, reqs []*batchReq, want []Code) {
	t.Helper()
	for i, r := range reqs {
		if r.err != nil || r.res.Code != want[i] {
			t.Errorf("request %d (%s, ip %q): %+v %v, want %s", i, r.user, r.ip, r.res, r.err, want[i])
		}
	}
}

// newHoldHook adds a holdHook of the scripts of s to rdb's hooks.
func newHoldHook(rdb redis.UniversalClient, s *Store) *holdHook {
	h := &holdHook{single: s.reserve.s.Hash(), batch: s.reserveBatch.s.Hash(), batchSrc: s.reserveBatch.s.Source(), held: make(chan struct{}), release: make(chan struct{})}
	rdb.AddHook(h.hook())
	return h
}

// TestBatchRunsEachAsIfAlone: reservations queued behind a call in flight go as one batch,
// and each gets the answer it would have got sent alone, in arrival order: a user's third
// request over the limit of 2 is refused, requests with one idempotency key make one
// reservation (the others replay it), a quantity of 2 then 1 over a limit of 2 is refused.
// Counted from Redis: the journal holds one entry per reservation, the stock is down by
// the units.
func TestBatchRunsEachAsIfAlone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, _ := storeWith(t, rdb, Options{}, openActivity(t, 100, 2, 1))
		h := newHoldHook(rdb, s)
		first := &batchReq{user: "first", qty: 1}
		reqs := []*batchReq{
			{user: "a", qty: 1}, {user: "b", key: "kb", qty: 1}, {user: "a", qty: 1},
			{user: "b", key: "kb", qty: 1}, {user: "c", qty: 2}, {user: "a", qty: 1},
			{user: "c", qty: 1}, {user: "b", key: "kb", qty: 1},
		}
		runOneBatch(t, s, h, a.ID, first, reqs)
		want := []Code{Reserved, Reserved, Reserved, Replayed, Reserved, AlreadyPurchased, AlreadyPurchased, Replayed}
		var bRid string
		units := int64(first.qty)
		if first.err != nil || first.res.Code != Reserved {
			t.Fatalf("the held reservation: %+v %v", first.res, first.err)
		}
		for i, r := range reqs {
			if r.err != nil || r.res.Code != want[i] {
				t.Errorf("request %d (%s, key %q, qty %d): %+v %v, want %s", i, r.user, r.key, r.qty, r.res, r.err, want[i])
				continue
			}
			if r.user == "b" {
				if bRid == "" {
					bRid = r.res.ReservationID
				} else if r.res.ReservationID != bRid {
					t.Errorf("key kb answered %s and %s", bRid, r.res.ReservationID)
				}
			}
			if r.res.Code == Reserved {
				units += int64(r.qty)
			}
		}
		st := readState(t, rdb, a.ID)
		if st.journal != 5 || st.remaining != 100-units || units != 6 {
			t.Errorf("journal %d entries, stock %d: want 5 reservations of 6 units (stock %d)", st.journal, st.remaining, 100-6)
		}
	})
}

// batchUserRate is the user bucket of a batchReq with limits (and a window of 10 an hour):
// two tokens, next to no refill.
var batchUserRate = tokenbucket.Limit{Rate: 0.0001, Burst: 2}

// TestBatchNewUsersShareOneLimitsState: the bucket and window a new user leaves are the same
// for every new user of a call (a full bucket and an empty window at the call's one Redis
// time), so the batch forms them once (lib_reserve.lua cx.fresh), yet a user met again in
// the same call takes from the state its first attempt wrote: read from Redis, every new
// user holds one token and one event of the window, and a user's third attempt is refused
// for its bucket. One shard: on a cluster a batch is one shard's.
func TestBatchNewUsersShareOneLimitsState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 5, 1))
		h := newHoldHook(rdb, s)
		first := &batchReq{user: "first", qty: 1}
		reqs := []*batchReq{
			{user: "n0", qty: 1, limits: true}, {user: "again", qty: 1, limits: true}, {user: "n1", qty: 1, limits: true},
			{user: "again", qty: 1, limits: true}, {user: "n2", qty: 1, limits: true}, {user: "again", qty: 1, limits: true},
			{user: "n3", qty: 1, limits: true},
		}
		runOneBatch(t, s, h, a.ID, first, reqs)
		want := []Code{Reserved, Reserved, Reserved, Reserved, Reserved, UserRateLimited, Reserved}
		wantCodes(t, reqs, want)
		limits := map[int64][]string{} // units held -> the limits parts of the users holding them
		all, err := rdb.HGetAll(ctx, Shard(a.ID, 0, 0).Users()).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range all {
			if !ValidUserHash(f) {
				continue
			}
			u, ok := ParseUserState(v)
			if !ok {
				t.Fatalf("user %s: malformed state %q", f, v)
			}
			if u.Limits != noLimits {
				limits[u.Held] = append(limits[u.Held], u.Limits)
			}
		}
		if len(limits[1]) != 4 || len(limits[2]) != 1 {
			t.Fatalf("users with limits by units held: %v, want 4 new users holding 1 and one holding 2", limits)
		}
		p := strings.Split(limits[1][0], "|")
		if len(p) != 6 || p[0] != "1" || p[4] != "0" || p[5] != "1" {
			t.Errorf("a new user's limits %q: want one token left and one event in the window", limits[1][0])
		}
		for _, l := range limits[1][1:] {
			if l != limits[1][0] {
				t.Errorf("new users of one call hold %q and %q: want one state", limits[1][0], l)
			}
		}
		if q := strings.Split(limits[2][0], "|"); len(q) != 6 || q[0] != "0" || q[5] != "2" {
			t.Errorf("the user met three times holds %q: want no token left and two events in the window (a refused attempt counts none)", limits[2][0])
		}
	})
}

// batchIPRate is the IP bucket of a batchReq with an ip: four tokens, next to no refill.
var batchIPRate = tokenbucket.Limit{Rate: 0.001, Burst: 4}

// TestBatchIPBucketsOncePerCall: a batch reads each IP bucket once and writes it once at the
// call's end (lib_reserve.lua call_close), yet every reservation meets its IP's bucket as the
// ones before it in the batch left it, whatever the other IPs and shards between them: an
// attempt refused for the per-user limit still takes its IP token, one refused for its IP
// takes nothing. Counted from Redis: the journal, the stored buckets, and the next call.
func TestBatchIPBucketsOncePerCall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, 2))
		if !s.ChecksIP() {
			return // a cluster: the IP bucket is in another slot, the limiter takes it (TestIPBucketInTheReservationScript)
		}
		h := newHoldHook(rdb, s)
		ipA, ipB := "sk:{ip:"+uniqueID(t)+"a}:tb", "sk:{ip:"+uniqueID(t)+"b}:tb"
		t.Cleanup(func() { rdb.Del(context.Background(), ipA, ipB) })
		first := &batchReq{user: "first", qty: 1, ip: ipA} // A: 3 tokens left
		reqs := []*batchReq{
			{user: "u0", qty: 1, ip: ipA}, {user: "u1", qty: 1, ip: ipB}, {user: "first", qty: 1, ip: ipA},
			{user: "u3", qty: 1, ip: ipA}, {user: "u4", qty: 1, ip: ipB}, {user: "u5", qty: 1, ip: ipA},
			{user: "u6", qty: 1, ip: ipB}, {user: "u7", qty: 1, ip: ipB}, {user: "u8", qty: 1, ip: ipB},
			{user: "u9", qty: 1, ip: ipA},
		}
		runOneBatch(t, s, h, a.ID, first, reqs)
		if first.err != nil || first.res.Code != Reserved {
			t.Fatalf("the held reservation: %+v %v", first.res, first.err)
		}
		want := []Code{Reserved, Reserved, AlreadyPurchased, Reserved, Reserved, IPRateLimited,
			Reserved, Reserved, IPRateLimited, IPRateLimited}
		wantCodes(t, reqs, want)
		if st := readState(t, rdb, a.ID); st.journal != 7 || st.remaining != 93 {
			t.Errorf("journal %d entries, stock %d: want 7 reservations (stock 93)", st.journal, st.remaining)
		}
		for _, k := range []string{ipA, ipB} {
			v, err := rdb.Get(ctx, k).Result()
			if err != nil {
				t.Fatalf("IP bucket %s: %v", k, err)
			}
			tok, _, _ := strings.Cut(v, "|")
			if f, err := strconv.ParseFloat(tok, 64); err != nil || f >= 1 {
				t.Errorf("IP bucket %s holds %q: want under one token", k, v)
			}
		}
		h.off()
		for ip, want := range map[string]Code{ipA: IPRateLimited, ipB: IPRateLimited, "sk:{ip:" + uniqueID(t) + "c}:tb": Reserved} {
			r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "next-" + ip, Quantity: 1, IPKey: ip, IPRate: batchIPRate})
			if err != nil || r.Code != want {
				t.Errorf("a later reservation from %s: %+v %v, want %s", ip, r, err, want)
			}
			rdb.Del(context.Background(), ip)
		}
	})
}

// TestBatchWaiterCancelledWhileQueued: a request whose context ends while it waits in the
// queue leaves it and is never sent (its user holds nothing, its answer is the context's
// error); the others of the batch are answered as usual.
func TestBatchWaiterCancelledWhileQueued(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, _ := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, 1))
		h := newHoldHook(rdb, s)
		cctx, cancel := context.WithCancel(ctxT(t))
		gone := &batchReq{user: "gone", qty: 1, ctx: cctx, cancel: cancel}
		reqs := []*batchReq{{user: "x", qty: 1}, gone, {user: "y", qty: 1}}
		runHeld(t, s, h, a.ID, &batchReq{user: "first", qty: 1}, reqs)
		for _, r := range []*batchReq{reqs[0], reqs[2]} {
			if r.err != nil || r.res.Code != Reserved {
				t.Errorf("%s: %+v %v", r.user, r.res, r.err)
			}
		}
		if !errors.Is(gone.err, context.Canceled) {
			t.Errorf("the request cancelled in the queue: %+v %v, want context.Canceled", gone.res, gone.err)
		}
		u, _, err := ReadUserState(ctxT(t), rdb, Shard(a.ID, 0, 0), s.UserHash("gone"))
		held := u.Held
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if held != 0 {
			t.Errorf("the request cancelled in the queue was sent: its user holds %d", held)
		}
		if st := readState(t, rdb, a.ID); st.journal != 3 {
			t.Errorf("journal %d entries, want 3 (first, x, y)", st.journal)
		}
	})
}

// TestBatchReplyLost: the batch script ran but its reply was lost: every reservation of the
// batch gets the error (the API's OUTCOME_UNKNOWN), none is taken twice: each retried with
// its key answers the one reservation the batch made, a keyless retry of a user at the limit
// is refused. Counted from Redis: one journal entry per user.
func TestBatchReplyLost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, _ := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, 1))
		h := newHoldHook(rdb, s)
		h.lose = true
		reqs := []*batchReq{{user: "k1", key: "key1", qty: 1}, {user: "n1", qty: 1}, {user: "k2", key: "key2", qty: 1}}
		runHeld(t, s, h, a.ID, &batchReq{user: "first", qty: 1}, reqs)
		for _, r := range reqs {
			if r.err == nil {
				t.Errorf("%s: %+v with the batch's reply lost", r.user, r.res)
			}
		}
		h.lose = false
		for _, r := range reqs {
			res, err := s.Reserve(ctxT(t), ReserveRequest{ActivityID: a.ID, UserID: r.user, IdempotencyKey: r.key, Quantity: 1})
			want := Replayed
			if r.key == "" {
				want = AlreadyPurchased
			}
			if err != nil || res.Code != want {
				t.Errorf("%s retried: %+v %v, want %s", r.user, res, err, want)
			}
		}
		if st := readState(t, rdb, a.ID); st.journal != 4 || st.remaining != 96 {
			t.Errorf("journal %d, stock %d: want 4 reservations (the held one and the batch's 3)", st.journal, st.remaining)
		}
	})
}

// TestIPBucketWriteRefusedLeavesTheSales: the IP bucket is written last, once per call
// (call_close); a SET that Redis refuses there (here a PX out of range: a rate of 1e-15/s
// makes a refill take 1e18 ms) comes after the sales wrote, so it must not turn them into
// errors: each is answered as sold, the stock and journal hold them, and the bucket stays
// unwritten (Redis logs a warning). Alone and in a batch.
func TestIPBucketWriteRefusedLeavesTheSales(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, 2))
		if !s.ChecksIP() {
			return // a cluster: no IP key in the reservation (TestIPBucketInTheReservationScript)
		}
		ip := "sk:{ip:" + uniqueID(t) + "}:tb"
		t.Cleanup(func() { rdb.Del(context.Background(), ip) })
		rate := tokenbucket.Limit{Rate: 1e-15, Burst: 100}
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "alone", Quantity: 1, IPKey: ip, IPRate: rate})
		if err != nil || r.Code != Reserved {
			t.Fatalf("alone: %+v %v, want RESERVED", r, err)
		}
		h := newHoldHook(rdb, s)
		first := &batchReq{user: "first", qty: 1}
		reqs := make([]*batchReq, 5)
		for i := range reqs {
			reqs[i] = &batchReq{user: fmt.Sprintf("u%d", i), qty: 1, ip: ip, ipRate: &rate}
		}
		runHeld(t, s, h, a.ID, first, reqs)
		for i, r := range reqs {
			if r.err != nil || r.res.Code != Reserved {
				t.Errorf("request %d in the batch: %+v %v, want RESERVED", i, r.res, r.err)
			}
		}
		if st := readState(t, rdb, a.ID); st.journal != 7 || st.remaining != 93 {
			t.Errorf("journal %d entries, stock %d: want 7 reservations (stock 93)", st.journal, st.remaining)
		}
		if n, err := rdb.Exists(ctx, ip).Result(); err != nil || n != 0 {
			t.Errorf("the IP bucket exists (%d, %v): its SET was refused, it must stay unwritten", n, err)
		}
	})
}

// TestRefusedWriteTakesNoIPToken: an attempt whose own write Redis refuses took nothing, its
// IP token included. Here an ACL refuses the HSET command (Redis checks a script's declared
// keys before it runs, but a command inside it only when it is called), so an attempt over
// the per-user limit (ALREADY, which writes the user's bucket and window) fails at its HSET;
// in a batch each such attempt gets its error answer, and the IP bucket, written at the call's
// end, must not count it (it did while the token was kept before the HSET).
func TestRefusedWriteTakesNoIPToken(t *testing.T) {
	rdb := testsvc.Redis(t)
	ctx := ctxT(t)
	s, a, _ := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, 1))
	for _, u := range []string{"a", "b"} {
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("%s: %+v %v", u, r, err)
		}
	}
	user := "no-hset-" + uniqueID(t)
	if err := rdb.Do(ctx, "ACL", "SETUSER", user, "on", ">"+user, "~*", "+@all", "-hset").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Do(context.Background(), "ACL", "DELUSER", user) })
	ro := redis.NewClient(&redis.Options{Addr: testsvc.RedisAddr, Username: user, Password: user, DisableIdentity: true})
	t.Cleanup(func() { ro.Close() })
	rs := newStore(t, ro, Options{})
	h := newHoldHook(ro, rs)
	ip := "sk:{ip:" + uniqueID(t) + "}:tb"
	t.Cleanup(func() { rdb.Del(context.Background(), ip) })
	first := &batchReq{user: "a", qty: 1} // ALREADY without limits: writes nothing
	reqs := []*batchReq{{user: "a", qty: 1, limits: true, ip: ip}, {user: "b", qty: 1, limits: true, ip: ip}}
	runOneBatch(t, rs, h, a.ID, first, reqs)
	if first.err != nil || first.res.Code != AlreadyPurchased {
		t.Errorf("the held request: %+v %v, want ALREADY_PURCHASED", first.res, first.err)
	}
	for i, r := range reqs {
		if r.err == nil || !strings.Contains(r.err.Error(), "can't run this command") {
			t.Errorf("request %d (%s): %+v %v, want the ACL's refusal", i, r.user, r.res, r.err)
		}
	}
	if n, err := rdb.Exists(ctx, ip).Result(); err != nil || n != 0 {
		v, _ := rdb.Get(ctx, ip).Result()
		t.Errorf("the IP bucket was written (%q, %v): the attempts that failed took a token", v, err)
	}
	if st := readState(t, rdb, a.ID); st.journal != 2 || st.remaining != 98 {
		t.Errorf("journal %d entries, stock %d: want the 2 sales before (stock 98)", st.journal, st.remaining)
	}
}
