package inventory

import (
	"reflect"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/tokenbucket"
)

// deref replaces the pointers a reserveCall passes (to its strings and quantity) by their
// values, which is how go-redis writes them.
func deref(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case *string:
			out[i] = *v
		case *int:
			out[i] = *v
		case *int64:
			out[i] = *v
		default:
			out[i] = a
		}
	}
	return out
}

// TestReserveCallMatchesScriptRun checks that the reservation command built from boxed-once
// values is, value for value and type for type (so byte for byte on the wire), the command
// Script.Run built from the keys and arguments reserveOn passed it before: EVALSHA, the sha,
// numkeys, KEYS, ARGV. Then that building it allocates nothing once the per-entry and
// per-limit values exist, and that a changed limit is picked up.
func TestReserveCallMatchesScriptRun(t *testing.T) {
	s := newStore(t, miniRedis(t), Options{})
	a := openActivity(t, 100, 3, 4)
	a.ClosesAt = time.Now().Add(time.Hour).Truncate(time.Millisecond)
	a = mustCreate(t, s, a)
	e, err := s.entryFor(ctxT(t), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	l := e.layout.Load()
	// The construction reserveOn used before (reserve.go at 68b34cd) through Script.Run, with
	// the shard's generation key, the caller's generation and the highest number it handed out
	// on the shard added (issue 18), then the issuer and the call's number (the id's last
	// part, keys.go ReservationID).
	old := func(r *ReserveRequest, uh, idf string, home int, withIP bool, call int64) []any {
		k := l.keys[home]
		keys := []string{k.Stock(), k.Users(), k.Seq(), k.Journal(), k.Stats(), k.Gen()}
		args := []any{r.ActivityID, r.UserID, uh, r.Quantity, e.def.PerUserLimit, unixMs(e.def.OpensAt), unixMs(e.def.ClosesAt),
			r.UserRate.Rate, max(r.UserRate.Burst, 1), r.Window.Milliseconds(), r.WindowMax, idf,
			l.epoch, home, e.generation(), l.floorOf(home), s.issuer, call}
		if withIP {
			keys = append(keys, r.IPKey)
			args = append(args, r.IPRate.Rate, max(r.IPRate.Burst, 1))
		}
		cmd := []any{"evalsha", s.reserve.s.Hash(), len(keys)}
		for _, k := range keys {
			cmd = append(cmd, k)
		}
		return append(cmd, args...)
	}
	reqs := []ReserveRequest{
		{ActivityID: a.ID, UserID: "u1", Quantity: 1},
		{ActivityID: a.ID, UserID: "u2", Quantity: 3, IdempotencyKey: "k-1",
			UserRate: tokenbucket.Limit{Rate: 2.5, Burst: 4}, Window: time.Minute, WindowMax: 10,
			IPKey: "{ip}:tb:127.0.0.1", IPRate: tokenbucket.Limit{Rate: 100, Burst: 0}},
		{ActivityID: a.ID, UserID: "u3", Quantity: 2,
			UserRate: tokenbucket.Limit{Rate: 0.25, Burst: 0}, Window: 1500 * time.Millisecond, WindowMax: 1,
			IPKey: "{ip}:tb:10.0.0.1", IPRate: tokenbucket.Limit{Rate: 7, Burst: 9}},
		{ActivityID: a.ID, UserID: "u4", Quantity: 1}, // back to no limits
	}
	for _, r := range reqs {
		uh := s.UserHash(r.UserID)
		idf := ""
		if r.IdempotencyKey != "" {
			idf = idemField(uh, r.IdempotencyKey)
		}
		for _, withIP := range []bool{false, true} {
			if withIP && r.IPKey == "" {
				continue
			}
			for home := range l.shards {
				c := s.reserveCallFor(e, l, home, &r, uh, idf, withIP)
				got, call := deref(c.args), c.call
				c.release()
				if call != s.calls.Load() {
					t.Fatalf("call number %d, the Store's last %d", call, s.calls.Load())
				}
				if want := old(&r, uh, idf, home, withIP, call); !reflect.DeepEqual(got, want) {
					t.Fatalf("%+v ip %v shard %d:\n got %#v\nwant %#v", r, withIP, home, got, want)
				}
			}
		}
	}
	r := reqs[1]
	uh, idf := s.UserHash(r.UserID), idemField(s.UserHash(r.UserID), r.IdempotencyKey)
	if n := testing.AllocsPerRun(200, func() {
		s.reserveCallFor(e, l, 1, &r, uh, idf, true).release()
	}); n != 0 {
		t.Errorf("building a reservation command: %v allocations, want 0", n)
	}
}

// TestReserveAfterScriptCacheLoss checks the EVAL fallback of runCall: a Redis that has not
// cached the reservation script (a fresh miniredis; a flushed or restarted server) still
// takes the reservation, and caches the script for the next call.
func TestReserveAfterScriptCacheLoss(t *testing.T) {
	rdb := miniRedis(t)
	s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 1, 1))
	if ok, err := rdb.ScriptExists(ctx, s.reserve.s.Hash()).Result(); err != nil || ok[0] {
		t.Fatalf("script cached before the first reservation: %v %v", ok, err)
	}
	for _, u := range []string{"a", "b"} {
		res, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1})
		if err != nil || res.Code != Reserved || res.ReservationID == "" {
			t.Fatalf("reserve %s = %+v, %v", u, res, err)
		}
		if ok, err := rdb.ScriptExists(ctx, s.reserve.s.Hash()).Result(); err != nil || !ok[0] {
			t.Fatalf("script not cached after a reservation: %v %v", ok, err)
		}
	}
}
