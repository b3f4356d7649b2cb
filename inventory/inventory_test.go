package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/tokenbucket"
)

func TestCreateIsIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, Options{})
		ctx := ctxT(t)
		a := openActivity(t, 101, 1, 4)
		// Ten instances post the same activity at once: one creates it, stock loads once.
		creates := make([]bool, 10)
		rush(len(creates), func(i int) {
			var err error
			if _, creates[i], err = newStore(t, rdb, Options{}).Create(ctx, a); err != nil {
				t.Error(err)
			}
		})
		created := 0
		for _, c := range creates {
			if c {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("created %d times, want 1", created)
		}
		got, c, err := s.Create(ctx, a)
		if err != nil || c || got.Stock != 101 || got.ID != a.ID {
			t.Fatalf("re-create = %+v, %v, %v", got, c, err)
		}
		if st := readState(t, rdb, a.ID); st.remaining != 101 {
			t.Fatalf("remaining %d, want 101", st.remaining)
		}
		for i := 0; i < 4; i++ { // 101 over 4 shards: 26 25 25 25
			want := []int64{26, 25, 25, 25}[i]
			if v, _ := rdb.Get(ctx, Shard(a.ID, 0, i).Stock()).Int64(); v != want {
				t.Errorf("shard %d = %d, want %d", i, v, want)
			}
		}
		for _, change := range []func(*Activity){
			func(b *Activity) { b.Stock++ },
			func(b *Activity) { b.PerUserLimit = 2 },
			func(b *Activity) { b.Shards = 3 },
			func(b *Activity) { b.ClosesAt = time.Now().Add(time.Hour) },
			func(b *Activity) { b.RequireToken = true },
		} {
			b := a
			change(&b)
			if _, _, err := s.Create(ctx, b); !errors.Is(err, ErrConflict) {
				t.Errorf("different definition: err = %v, want ErrConflict", err)
			}
		}
		if st := readState(t, rdb, a.ID); st.remaining != 101 {
			t.Fatalf("remaining after conflicts %d, want 101", st.remaining)
		}
	})
}

func TestCreateRejectsInvalid(t *testing.T) {
	s := newStore(t, miniRedis(t), Options{})
	now := time.Now()
	tests := []struct {
		name string
		give Activity
	}{
		{"bad id", Activity{ID: "a b", Stock: 1, PerUserLimit: 1, Shards: 1}},
		{"no shards", Activity{ID: "a", Stock: 1, PerUserLimit: 1}},
		{"too many shards", Activity{ID: "a", Stock: 1, PerUserLimit: 1, Shards: keyspace.MaxShards + 1}},
		{"no limit", Activity{ID: "a", Stock: 1, Shards: 1}},
		{"negative stock", Activity{ID: "a", Stock: -1, PerUserLimit: 1, Shards: 1}},
		{"closes before opens", Activity{ID: "a", Stock: 1, PerUserLimit: 1, Shards: 1, OpensAt: now, ClosesAt: now.Add(-time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := s.Create(ctxT(t), tt.give); !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestRushExactStock: 1,000 distinct users against stock 100.
func TestRushExactStock(t *testing.T) {
	for _, shards := range []int{1, 4, 16} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			forBackends(t, shards == 4, func(t *testing.T, rdb redis.UniversalClient) {
				s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, shards))
				results, errs := reserveRush(ctx, s, 1000, func(i int) ReserveRequest {
					return ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprintf("user-%d", i), Quantity: 1}
				})
				rids := map[string]bool{}
				for i, r := range results {
					if errs[i] != nil {
						t.Fatalf("reserve %d: %v", i, errs[i])
					}
					switch r.Code {
					case Reserved:
						if rids[r.ReservationID] {
							t.Fatalf("duplicate rid %s", r.ReservationID)
						}
						rids[r.ReservationID] = true
					case SoldOut:
					default:
						t.Fatalf("unexpected %v", r.Code)
					}
				}
				if len(rids) != 100 {
					t.Fatalf("reserved %d, want 100", len(rids))
				}
				st := readState(t, rdb, a.ID)
				if st.remaining != 0 || st.minStock != 0 || st.buyers != 100 || st.journal != 100 || st.taken != 100 {
					t.Fatalf("state %+v, want remaining 0, min 0, 100 buyers/journal/taken", st)
				}
				for i := 0; i < shards; i++ {
					if v, _ := rdb.Get(ctx, Shard(a.ID, 0, i).Stock()).Int64(); v != 0 {
						t.Errorf("shard %d ends at %d", i, v)
					}
				}
				if v, _ := s.Activity(a.ID); !v.SoldOut {
					t.Error("not marked sold out locally")
				}
			})
		})
	}
}

// TestSameUserManyGoroutines: one user, 200 goroutines, limit 2.
func TestSameUserManyGoroutines(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 50, 2, 4))
		results, errs := reserveRush(ctx, s, 200, func(int) ReserveRequest {
			return ReserveRequest{ActivityID: a.ID, UserID: "the-one", Quantity: 1}
		})
		reserved := map[string]bool{}
		var already []string
		for i, r := range results {
			switch {
			case errs[i] != nil:
				t.Error(errs[i])
			case r.Code == Reserved:
				reserved[r.ReservationID] = true
			case r.Code == AlreadyPurchased:
				already = append(already, r.ReservationID)
			default:
				t.Errorf("unexpected %v", r.Code)
			}
		}
		if len(reserved) != 2 || len(already) != 198 {
			t.Fatalf("reserved %d, already %d; want 2 and 198", len(reserved), len(already))
		}
		for _, rid := range already {
			if !reserved[rid] {
				t.Fatalf("409 carries %q, not an existing reservation", rid)
			}
		}
		if st := readState(t, rdb, a.ID); st.remaining != 48 || st.journal != 2 {
			t.Fatalf("state %+v", st)
		}
	})
}

// TestOtherShardsNeverExceedLimit: small stock on many shards, the same few users attack
// from many goroutines while shards run dry; limit 1. Units move to the users' home shard
// (transfers); every reservation is taken there.
func TestOtherShardsNeverExceedLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{MaxOtherShards: 8}, openActivity(t, 12, 1, 8))
		per := map[string]int{}
		off := 0 // reservations taken off the user's home shard
		// 20 users who all live on shard 0 (2 units): 10 units must come from elsewhere.
		var users []string
		for i := 0; len(users) < 20; i++ {
			if u := fmt.Sprint("u", i); HomeShard(s.UserHash(u), 8) == 0 {
				users = append(users, u)
			}
		}
		results, errs := reserveRush(ctx, s, 400, func(g int) ReserveRequest {
			return ReserveRequest{ActivityID: a.ID, UserID: users[g%20], Quantity: 1}
		})
		for g, r := range results {
			if errs[g] != nil {
				t.Error(errs[g])
				continue
			}
			if r.Code == Reserved {
				k, _, _ := ParseReservationID(r.ReservationID)
				per[users[g%20]]++
				if k.Shard != 0 {
					off++
				}
			}
		}
		total := 0
		for u, n := range per {
			if n > 1 {
				t.Errorf("user %s holds %d units, limit 1", u, n)
			}
			total += n
		}
		if total != 12 {
			t.Fatalf("reserved %d, want 12", total)
		}
		if off != 0 {
			t.Errorf("%d reservations off the home shard, want 0", off)
		}
		st := readState(t, rdb, a.ID)
		if st.remaining != 0 || st.journal != 12 || st.taken != 12 || st.minStock < 0 {
			t.Fatalf("state %+v", st)
		}
		// No user count above the limit, nothing left in transit.
		for i := 0; i < 8; i++ {
			k := Shard(a.ID, 0, i)
			for u, v := range rdb.HGetAll(ctx, k.Users()).Val() {
				if st, _ := ParseUserState(v); !strings.Contains(u, ":") && st.Held != 1 {
					t.Errorf("shard %d user %s holds %s", i, u, v)
				}
			}
			if n := rdb.HLen(ctx, k.XOut()).Val(); n != 0 {
				t.Errorf("shard %d: %d transfers left in transit", i, n)
			}
		}
	})
}

// TestHomeEmptyIsRefilled: a user whose home shard is empty is served on the home shard
// after units moved there from another shard; the 409 and the replay carry that rid.
func TestHomeEmptyIsRefilled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 4, 1, 2))
		user := "lonely"
		home := HomeShard(s.UserHash(user), 2)
		if err := rdb.Set(ctx, Shard(a.ID, 0, home).Stock(), 0, 0).Err(); err != nil {
			t.Fatal(err)
		}
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1, IdempotencyKey: "k1"})
		if err != nil || r.Code != Reserved {
			t.Fatalf("reserve = %+v, %v", r, err)
		}
		k, _, _ := ParseReservationID(r.ReservationID)
		if k.Shard != home {
			t.Fatalf("rid %s off the home shard %d", r.ReservationID, home)
		}
		other := Shard(a.ID, 0, 1-home)
		if out, in := rdb.HGet(ctx, other.Stats(), "xout").Val(), rdb.HGet(ctx, k.Stats(), "xin").Val(); out != "1" || in != "1" {
			t.Fatalf("transfer stats out %q in %q, want 1 and 1", out, in)
		}
		again, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1})
		if err != nil || again.Code != AlreadyPurchased || again.ReservationID != r.ReservationID {
			t.Fatalf("second = %+v, %v", again, err)
		}
		replay, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1, IdempotencyKey: "k1"})
		if err != nil || replay.Code != Replayed || replay.ReservationID != r.ReservationID {
			t.Fatalf("replay = %+v, %v", replay, err)
		}
		got, err := s.Reservation(ctx, r.ReservationID)
		if err != nil || got.UserID != user || got.Quantity != 1 || got.Status != "PENDING" || got.ActivityID != a.ID {
			t.Fatalf("reservation = %+v, %v", got, err)
		}
	})
}

func TestIdempotencyReplay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 3, 2))
		req := ReserveRequest{ActivityID: a.ID, UserID: "idem-user", Quantity: 1, IdempotencyKey: "key-1"}
		first, err := s.Reserve(ctx, req)
		if err != nil || first.Code != Reserved {
			t.Fatalf("first = %+v, %v", first, err)
		}
		results, errs := reserveRush(ctx, s, 20, func(int) ReserveRequest { return req })
		for i, r := range results {
			if errs[i] != nil || r.Code != Replayed || r.ReservationID != first.ReservationID {
				t.Errorf("replay = %+v, %v", r, errs[i])
			}
		}
		if st := readState(t, rdb, a.ID); st.remaining != 9 || st.journal != 1 {
			t.Fatalf("replays took stock: %+v", st)
		}
		// Replay reads the binding without taking anything; another user's key is not theirs.
		if rid, ok, err := s.Replay(ctx, a.ID, "idem-user", "key-1"); err != nil || !ok || rid != first.ReservationID {
			t.Fatalf("Replay = %q, %v, %v; want %s", rid, ok, err, first.ReservationID)
		}
		if rid, ok, err := s.Replay(ctx, a.ID, "other-user", "key-1"); err != nil || ok {
			t.Fatalf("Replay of another user = %q, %v, %v", rid, ok, err)
		}
		// Another key is another reservation; a rejected request binds no key.
		other, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "idem-user", Quantity: 2, IdempotencyKey: "key-2"})
		if err != nil || other.Code != Reserved || other.ReservationID == first.ReservationID {
			t.Fatalf("other key = %+v, %v", other, err)
		}
		over, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "idem-user", Quantity: 1, IdempotencyKey: "key-3"})
		if err != nil || over.Code != AlreadyPurchased || over.ReservationID != other.ReservationID {
			t.Fatalf("over limit = %+v, %v", over, err)
		}
		uh := s.UserHash("idem-user")
		if rdb.HExists(ctx, Shard(a.ID, 0, HomeShard(uh, 2)).Users(), idemField(uh, "key-3")).Val() {
			t.Fatal("a rejected request bound its idempotency key")
		}
	})
}

// TestStateIsTheScripts: Reserve checks none of admission's decisions again: on an activity
// not open yet, closed, or known sold out, the script runs and answers, with Redis time
// (admission answers them from its snapshot without Redis: app/admission
// TestKnownStateMakesNoRedisCall). A malformed reservation id is answered without Redis.
func TestStateIsTheScripts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		var calls redishook.Counter
		rdb.AddHook(&calls)
		s := newStore(t, rdb, Options{})
		ctx := ctxT(t)
		now := time.Now()
		soon := Activity{ID: uniqueID(t) + "s", Stock: 5, PerUserLimit: 1, Shards: 2, OpensAt: now.Add(time.Hour)}
		soon = mustCreate(t, s, soon)
		over := Activity{ID: uniqueID(t) + "c", Stock: 5, PerUserLimit: 1, Shards: 2, OpensAt: now.Add(-time.Hour), ClosesAt: now.Add(-time.Minute)}
		mustCreate(t, s, over)
		sold := mustCreate(t, s, openActivity(t, 1, 1, 3))
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: sold.ID, UserID: "first", Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("first = %+v, %v", r, err)
		}
		// Learn the sell-out by asking until every shard answered empty.
		for i := 0; i < 10; i++ {
			r, err := s.Reserve(ctx, ReserveRequest{ActivityID: sold.ID, UserID: fmt.Sprint("late", i), Quantity: 1})
			if err != nil || r.Code != SoldOut {
				t.Fatalf("late = %+v, %v", r, err)
			}
		}
		if v, _ := s.Activity(sold.ID); !v.SoldOut {
			t.Fatal("sell-out not learned")
		}
		tests := []struct {
			name string
			id   string
			want Code
		}{
			{"not open", soon.ID, NotOpen},
			{"closed", over.ID, Closed},
			{"sold out", sold.ID, SoldOut},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for i := 0; i < 3; i++ {
					before := calls.Load()
					r, err := s.Reserve(ctx, ReserveRequest{ActivityID: tt.id, UserID: fmt.Sprint("u", i), Quantity: 1})
					if err != nil || r.Code != tt.want {
						t.Fatalf("got %+v, %v; want %v", r, err, tt.want)
					}
					if tt.want == NotOpen && !r.OpensAt.Equal(soon.OpensAt) {
						t.Fatalf("opensAt %v, want %v", r.OpensAt, soon.OpensAt)
					}
					if calls.Load() == before {
						t.Fatal("answered without running the script")
					}
				}
			})
		}
		t.Run("malformed reservation id", func(t *testing.T) {
			before := calls.Load()
			for _, rid := range []string{"", "x", "a.b.c.d", "a.1.2", "a b.1.2.3", strings.Repeat("a", 65) + ".1.2.3", "a.1.2.3.4", "a.1.99999.3"} {
				if _, err := s.Reservation(ctx, rid); !errors.Is(err, ErrNotFound) {
					t.Errorf("%q: err = %v", rid, err)
				}
			}
			if n := calls.Load() - before; n != 0 {
				t.Fatalf("%d Redis commands, want 0", n)
			}
			if _, err := s.Reservation(ctx, sold.ID+".0.0.999999"); !errors.Is(err, ErrNotFound) {
				t.Errorf("unknown rid: err = %v", err)
			}
		})
	})
}

// TestScriptChecksTimes drives the script with a cache that believes the activity open:
// Redis TIME decides.
func TestScriptChecksTimes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, Options{})
		ctx := ctxT(t)
		opens := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		a := mustCreate(t, s, Activity{ID: uniqueID(t), Stock: 3, PerUserLimit: 1, Shards: 1, OpensAt: opens})
		e, _ := s.entryFor(ctx, a.ID)
		req := ReserveRequest{ActivityID: a.ID, UserID: "early", Quantity: 1}
		r, _, err := s.reserveOn(ctx, e, e.layout.Load(), &req, s.UserHash("early"), "", true)
		if err != nil || r.Code != NotOpen || !r.OpensAt.Equal(opens) {
			t.Fatalf("script = %+v, %v; want NotOpen at %v", r, err, opens)
		}
		closed := &entry{def: e.def, issued: e.issued, gauge: e.gauge}
		closed.def.OpensAt = time.Time{}
		closed.def.ClosesAt = time.Now().Add(-time.Second)
		closed.layout.Store(e.layout.Load())
		r, _, err = s.reserveOn(ctx, closed, e.layout.Load(), &req, s.UserHash("early"), "", true)
		if err != nil || r.Code != Closed {
			t.Fatalf("script = %+v, %v; want Closed", r, err)
		}
	})
}

func TestUserRateAndWindow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 100, 1))
		tests := []struct {
			name string
			give ReserveRequest
			ok   int
			want Code
		}{
			{"bucket", ReserveRequest{UserID: "b", UserRate: tokenbucket.Limit{Rate: 0.01, Burst: 3}}, 3, UserRateLimited},
			{"window", ReserveRequest{UserID: "w", Window: time.Minute, WindowMax: 2}, 2, UserWindowLimited},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req := tt.give
				req.ActivityID, req.Quantity = a.ID, 1
				for i := 0; i < tt.ok; i++ {
					if r, err := s.Reserve(ctx, req); err != nil || r.Code != Reserved {
						t.Fatalf("call %d = %+v, %v", i, r, err)
					}
				}
				r, err := s.Reserve(ctx, req)
				if err != nil || r.Code != tt.want || r.RetryAfter <= 0 {
					t.Fatalf("over = %+v, %v; want %v with RetryAfter", r, err, tt.want)
				}
			})
		}
		// All-or-nothing: a window rejection takes no bucket token.
		req := ReserveRequest{ActivityID: a.ID, UserID: "both", Quantity: 1, UserRate: tokenbucket.Limit{Rate: 0.01, Burst: 2}, Window: time.Minute, WindowMax: 1}
		if r, _ := s.Reserve(ctx, req); r.Code != Reserved {
			t.Fatalf("first = %+v", r)
		}
		for i := 0; i < 3; i++ {
			if r, _ := s.Reserve(ctx, req); r.Code != UserWindowLimited {
				t.Fatalf("window = %+v", r)
			}
		}
		// "tokens|tsSec|tsUsec|winStart|winPrev|winCur" (inventory_reserve.lua)
		u, _, err := ReadUserState(ctx, rdb, Shard(a.ID, 0, 0), s.UserHash("both"))
		if err != nil {
			t.Fatal(err)
		}
		packed := u.Limits
		parts := strings.Split(packed, "|")
		if len(parts) != 6 {
			t.Fatalf("packed user state %q", packed)
		}
		tok, _ := strconv.ParseFloat(parts[0], 64)
		if tok < 0.99 {
			t.Fatalf("bucket holds %v tokens after window rejections, want ~1", tok)
		}
	})
}

func TestTokensAreOneTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := newStore(t, rdb, Options{})
		ctx := ctxT(t)
		id := uniqueID(t)
		tok, exp, err := s.IssueToken(ctx, id, "alice", time.Minute)
		if err != nil || tok == "" || time.Until(exp) < 50*time.Second {
			t.Fatalf("issue = %q %v %v", tok, exp, err)
		}
		tests := []struct {
			name               string
			give               bool // ReturnToken, else ConsumeToken
			act, user, tok, by string
			want               bool
		}{
			{"other user", false, id, "bob", tok, "k1", false},
			{"other activity", false, id + "x", "alice", tok, "k1", false},
			{"wrong token", false, id, "alice", tok + "x", "k1", false},
			{"given back unused", true, id, "alice", tok, "k1", false},
			{"owner", false, id, "alice", tok, "k1", true},
			{"used by another reservation", false, id, "alice", tok, "k2", false},
			{"used again by its reservation (its answer was lost)", false, id, "alice", tok, "k1", true},
			{"given back by another reservation", true, id, "alice", tok, "k2", false},
			{"given back by another user", true, id, "bob", tok, "k1", false},
			// two attempts of k1 used it: one refused gives its use back, the other (it took
			// stock) keeps it spent
			{"one attempt of two gives its use back", true, id, "alice", tok, "k1", true},
			{"still spent for another reservation", false, id, "alice", tok, "k2", false},
			{"used again by k1", false, id, "alice", tok, "k1", true},
			{"one of its two attempts gives its use back", true, id, "alice", tok, "k1", true},
			{"and the other: unused again", true, id, "alice", tok, "k1", true},
			{"given back more than it was used", true, id, "alice", tok, "k1", false},
			{"used by the retry", false, id, "alice", tok, "k2", true},
			{"used again", false, id, "alice", tok, "k3", false},
		}
		for _, tt := range tests {
			op := s.ConsumeToken
			if tt.give {
				op = s.ReturnToken
			}
			if got, err := op(ctx, tt.act, tt.user, tt.tok, tt.by); err != nil || got != tt.want {
				t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
			}
		}
		if ttl, err := rdb.PTTL(ctx, tokenKey(id, tok)).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
			t.Errorf("the used token's TTL %v %v: want the minute it was issued with, kept", ttl, err)
		}
		short, _, _ := s.IssueToken(ctx, id, "carol", 50*time.Millisecond)
		time.Sleep(120 * time.Millisecond)
		if ok, _ := s.ConsumeToken(ctx, id, "carol", short, "k1"); ok {
			t.Error("expired token accepted")
		}
	})
}

// TestIdempotencyKeyWhileRefilling: the same key from many goroutines while the home shard
// is empty (refills in progress) makes exactly one reservation.
func TestIdempotencyKeyWhileRefilling(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 10, 3, 2))
		user := "holder"
		home := HomeShard(s.UserHash(user), 2)
		rdb.Set(ctx, Shard(a.ID, 0, home).Stock(), 0, 0)
		results, errs := reserveRush(ctx, s, 30, func(int) ReserveRequest {
			return ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1, IdempotencyKey: "same"}
		})
		rids := map[string]int{}
		for i, r := range results {
			if errs[i] != nil || (r.Code != Reserved && r.Code != Replayed) {
				t.Errorf("got %+v, %v", r, errs[i])
				continue
			}
			rids[r.ReservationID]++
		}
		if len(rids) != 1 {
			t.Fatalf("rids %v, want one", rids)
		}
		if st := readState(t, rdb, a.ID); st.taken != 1 {
			t.Fatalf("taken %d, want 1", st.taken)
		}
		uh := s.UserHash(user)
		if v := heldOn(t, rdb, Shard(a.ID, 0, home), uh); v != 1 {
			t.Fatalf("user record %d, want 1", v)
		}
	})
}

// TestCrashInTransitIsRecovered: an instance that dies between a transfer's debit and its
// credit leaves the units in transit (counted by the stats, not lost); Recover credits them
// once, and the user's quota was never touched.
func TestCrashInTransitIsRecovered(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 6, 1, 3))
		user := "crasher"
		k, _ := unitInTransit(t, s, rdb, a, user, 0, -1, "crash-1") // 4 units left elsewhere
		// The process dies here: one unit is in transit.
		if st := readState(t, rdb, a.ID); st.remaining != 3 || st.taken != 0 {
			t.Fatalf("state %+v, want 3 on the shards, none taken", st)
		}
		for i, want := range []int{1, 0} {
			n, err := s.Recover(ctx, a.ID, 0)
			if err != nil || n != want {
				t.Fatalf("recover %d = %d, %v; want %d", i, n, err, want)
			}
		}
		if st := readState(t, rdb, a.ID); st.remaining != 4 {
			t.Fatalf("state %+v, want the 4 units back on the shards", st)
		}
		if v := rdb.Get(ctx, k.Stock()).Val(); v != "1" {
			t.Fatalf("home stock %q, want the unit credited there", v)
		}
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("after recovery = %+v, %v", r, err)
		}
	})
}

func TestLookupRemembersUnknownIDs(t *testing.T) {
	rdb := miniRedis(t)
	var calls redishook.Counter
	rdb.AddHook(&calls)
	s := newStore(t, rdb, Options{})
	other := newStore(t, rdb, Options{})
	ctx := ctxT(t)
	id := uniqueID(t)
	rdb.Ping(ctx) // connection setup is not counted
	calls.Reset()
	for i := 0; i < 50; i++ {
		if _, ok, err := s.Lookup(ctx, id); ok || err != nil {
			t.Fatalf("unknown = %v, %v", ok, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d Redis commands for 50 lookups of one unknown id, want 1", n)
	}
	mustCreate(t, other, Activity{ID: id, Stock: 1, PerUserLimit: 1, Shards: 1})
	s.handleEvent(ctx, "created "+id)
	if v, ok := s.Activity(id); !ok || v.Stock != 1 {
		t.Fatalf("after created event: %+v, %v", v, ok)
	}
}

// TestLateEventsKeepTheSoldOutMark: a "created" or "layout" event arriving after the
// instance learned the sell-out (pub/sub may deliver it late, or again), and a lookup, update
// the cached entry in place: the mark stays, so admission answers SOLD_OUT without a Redis
// command.
func TestLateEventsKeepTheSoldOutMark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 1, 1, 2))
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "first", Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("reserve = %+v, %v", r, err)
		}
		if v, _ := refreshed(ctx, t, s, a.ID); !v.SoldOut {
			t.Fatalf("not sold out after the only unit: %+v", v)
		}
		for _, ev := range []string{"created ", "layout ", "created "} {
			s.handleEvent(ctx, ev+a.ID)
		}
		if _, _, err := s.lookup(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if v, _ := s.Activity(a.ID); !v.SoldOut || v.Remaining != 0 {
			t.Fatalf("after late created/layout events and a lookup: %+v, want still sold out", v)
		}
		// The mark is what admission answers 410 from, with no Redis call
		// (app/admission TestKnownStateMakesNoRedisCall); requests that still reach the
		// script are answered SOLD_OUT by it and leave the mark as it is.
		for i := 0; i < 20; i++ {
			if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: fmt.Sprint("late-", i), Quantity: 1}); err != nil || r.Code != SoldOut {
				t.Fatalf("reserve %d = %+v, %v; want SOLD_OUT", i, r, err)
			}
		}
		if v, _ := s.Activity(a.ID); !v.SoldOut || v.Remaining != 0 {
			t.Fatalf("after 20 late requests: %+v, want still sold out", v)
		}
	})
}

// TestLookupReadsStock: an instance meeting an activity for the first time shows its real
// remaining stock and sold-out state at once.
func TestLookupReadsStock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 2, 1, 2))
		if _, ok := newStore(t, rdb, Options{}).Activity(a.ID); ok {
			t.Fatal("a new instance knows the activity without a lookup")
		}
		for _, u := range []string{"a", "b"} {
			if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1}); err != nil || r.Code != Reserved {
				t.Fatalf("reserve = %+v, %v", r, err)
			}
		}
		v, ok, err := newStore(t, rdb, Options{}).Lookup(ctx, a.ID)
		if err != nil || !ok || !v.SoldOut || v.Remaining != 0 || v.Stock != 2 || v.Shards != 2 {
			t.Fatalf("lookup = %+v, %v, %v", v, ok, err)
		}
	})
}

func TestQuantityAboveShardStock(t *testing.T) {
	s := newStore(t, miniRedis(t), Options{})
	ctx := ctxT(t)
	a := mustCreate(t, s, openActivity(t, 3, 2, 1))
	tests := []struct {
		user string
		qty  int
		want Code
	}{
		{"a", 2, Reserved},
		{"b", 2, SoldOut}, // one unit left: not enough for two
		{"c", 1, Reserved},
		{"d", 1, SoldOut},
	}
	for _, tt := range tests {
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: tt.user, Quantity: tt.qty})
		if err != nil || r.Code != tt.want {
			t.Fatalf("%s x%d = %+v, %v; want %v", tt.user, tt.qty, r, err, tt.want)
		}
		if v, _ := s.Activity(a.ID); tt.user == "b" && v.SoldOut {
			t.Fatal("marked sold out with a unit left")
		}
	}
	// The per-user limit is the script's: a quantity above it is refused as the limit reached.
	if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "e", Quantity: 3}); err != nil || r.Code != AlreadyPurchased {
		t.Fatalf("quantity above the limit: %+v, %v; want AlreadyPurchased", r, err)
	}
	if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "e", Quantity: 0}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("quantity 0: err = %v", err)
	}
	// The idempotency key's bound is the header's (keyspace.MaxIdempotencyKey).
	long := strings.Repeat("k", keyspace.MaxIdempotencyKey+1)
	if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "e", Quantity: 1, IdempotencyKey: long}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("idempotency key of %d bytes: err = %v, want ErrInvalid", len(long), err)
	}
	if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "e", Quantity: 1, IdempotencyKey: long[1:]}); err != nil || r.Code != SoldOut {
		t.Fatalf("idempotency key of %d bytes: %+v, %v; want SoldOut", len(long)-1, r, err)
	}
}

// The per-IP token travels in the reservation's own round trip on a single node: the bucket
// empties across users of one IP and a rejection takes no user token or stock. On a cluster
// (another slot) the caller passes no IP key, as admission plans it, and the limiter takes it.
func TestIPBucketInTheReservationScript(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 1, 2))
		ipKey := "sk:{ip:" + uniqueID(t) + "}:tb"
		t.Cleanup(func() { rdb.Del(context.Background(), ipKey) })
		reserve := func(user string) ReserveResult {
			req := ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1}
			if s.ChecksIP() {
				req.IPKey, req.IPRate = ipKey, tokenbucket.Limit{Rate: 0.01, Burst: 2}
			}
			r, err := s.Reserve(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for i := 0; i < 2; i++ {
			if r := reserve(fmt.Sprintf("ip-user-%d", i)); r.Code != Reserved {
				t.Fatalf("user %d: %+v", i, r)
			}
		}
		r := reserve("ip-user-2")
		if !s.ChecksIP() {
			if r.Code != Reserved {
				t.Fatalf("cluster: without an IP key the script takes no IP token: %+v", r)
			}
			return
		}
		if r.Code != IPRateLimited || r.RetryAfter <= 0 {
			t.Fatalf("third user of the IP: %+v, want IPRateLimited with RetryAfter", r)
		}
		var held int64
		for i := 0; i < 2; i++ {
			held += buyers(t, rdb, Shard(a.ID, 0, i))
		}
		if held != 2 {
			t.Fatalf("%d buyers recorded, want 2 (the IP rejection must take nothing)", held)
		}
	})
}

// The per-user bucket and window live in the user's packed field of the users hash, which a
// reshard copies: a user at the window's max stays limited on the new home shard, and the
// bucket's tokens come along (before issue 12 both restarted on a reshard).
func TestUserLimitsSurviveReshard(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 1000, 10, 2))
		win := ReserveRequest{ActivityID: a.ID, UserID: "win", Quantity: 1, Window: time.Hour, WindowMax: 2}
		tb := ReserveRequest{ActivityID: a.ID, UserID: "tb", Quantity: 1, UserRate: tokenbucket.Limit{Rate: 0.0001, Burst: 2}}
		for _, req := range []ReserveRequest{win, win, tb, tb} {
			if r, err := s.Reserve(ctx, req); err != nil || r.Code != Reserved {
				t.Fatalf("%s: %+v, %v", req.UserID, r, err)
			}
		}
		for _, n := range []int{3, 5} {
			if err := s.Reshard(ctx, a.ID, n); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Reserve(ctx, win); err != nil || r.Code != UserWindowLimited {
				t.Fatalf("window after a reshard to %d shards: %+v, %v", n, r, err)
			}
			if r, err := s.Reserve(ctx, tb); err != nil || r.Code != UserRateLimited {
				t.Fatalf("bucket after a reshard to %d shards: %+v, %v", n, r, err)
			}
		}
	})
}

// TestUnitsInTransitAreNotSoldOut: while the last units are moving between shards (debited
// from one, not yet credited to another) every shard's stock reads 0, yet the activity is
// not sold out. Neither the refresh nor a reservation that finds every shard empty may
// mark it sold out (that answered SOLD_OUT to every later request of a rush while a unit was
// still for sale); once the transfer lands the unit is sold.
func TestUnitsInTransitAreNotSoldOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 1, 1, 2))
		user := "waiter"
		// The one unit on the other shard, whichever shard Create gave it to, in another
		// instance's transfer cut short between debit and credit.
		unitInTransit(t, s, rdb, a, user, 0, 1, "slow-1")
		if v, ok := refreshed(ctx, t, s, a.ID); !ok || v.SoldOut {
			t.Fatalf("after a refresh with one unit in transit: %+v, want not sold out", v)
		}
		r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := s.Activity(a.ID); v.SoldOut {
			t.Fatalf("a reservation (%+v) that found every shard empty marked the activity sold out with one unit in transit", r)
		}
		if _, err := s.Recover(ctx, a.ID, 0); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: user, Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("after the transfer landed = %+v, %v", r, err)
		}
	})
}

// While no user bucket or window is on, the script keeps the limits part of the user's state
// as it is: a user window turned off and on again within its span resumes from its state,
// and a user who never had a limit keeps the empty one.
func TestLimitTurnedOffAndOnResumes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 100, 1))
		on := ReserveRequest{ActivityID: a.ID, UserID: "toggle", Quantity: 1, Window: time.Minute, WindowMax: 1}
		off := ReserveRequest{ActivityID: a.ID, UserID: "toggle", Quantity: 1}
		if r, err := s.Reserve(ctx, on); err != nil || r.Code != Reserved {
			t.Fatalf("window on, first = %+v, %v", r, err)
		}
		limits := func(user string) string {
			u, found, err := ReadUserState(ctx, rdb, Shard(a.ID, 0, 0), s.UserHash(user))
			if err != nil || !found {
				t.Fatalf("state of %s: %v, %v", user, found, err)
			}
			return u.Limits
		}
		before := limits("toggle")
		if r, err := s.Reserve(ctx, off); err != nil || r.Code != Reserved {
			t.Fatalf("limits off = %+v, %v", r, err)
		}
		if after := limits("toggle"); after != before {
			t.Fatalf("packed state %q after a limits-off reservation, want it untouched %q", after, before)
		}
		if r, err := s.Reserve(ctx, on); err != nil || r.Code != UserWindowLimited {
			t.Fatalf("window on again = %+v, %v; want UserWindowLimited", r, err)
		}
		if r, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: "never-limited", Quantity: 1}); err != nil || r.Code != Reserved {
			t.Fatalf("a user without limits = %+v, %v", r, err)
		}
		if got := limits("never-limited"); got != noLimits {
			t.Fatalf("limits off wrote the limits state %q", got)
		}
	})
}

// A user's state is one field (user.go). At the limit with a window on, the 409 names the last
// id and the attempt is counted in the window, while held, sequence and last id stay; after a
// refund (inventory_refund.lua) the sequence goes on from the old one, the last id is the new
// reservation's and the 409 names it, and the reservation number is the shard's counter's.
// A state the refund cannot read is an error before its marker is set, so it can be tried
// again.
func TestUserStateCarriesOn(t *testing.T) {
	forEachBackend(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, a, ctx := storeWith(t, rdb, Options{}, openActivity(t, 100, 2, 1))
		k := Shard(a.ID, 0, 0)
		uh := s.UserHash("old")
		oldRid := ReservationID(a.ID, 0, 0, 77, "0123456789abcdef", 1)
		if err := rdb.HSet(ctx, k.Users(), uh, UserState{Held: 2, Seq: 5, Last: oldRid}.String()).Err(); err != nil {
			t.Fatal(err)
		}
		state := func() UserState {
			t.Helper()
			u, found, err := ReadUserState(ctx, rdb, k, uh)
			if err != nil || !found {
				t.Fatalf("state: %v, %v", found, err)
			}
			return u
		}
		req := ReserveRequest{ActivityID: a.ID, UserID: "old", Quantity: 1, Window: time.Hour, WindowMax: 10}
		if r, err := s.Reserve(ctx, req); err != nil || r.Code != AlreadyPurchased || r.ReservationID != oldRid {
			t.Fatalf("at the limit: %+v, %v; want AlreadyPurchased %s", r, err, oldRid)
		}
		if u := state(); u.Held != 2 || u.Seq != 5 || u.Last != oldRid || u.Limits == noLimits {
			t.Fatalf("after the 409: %+v, want held 2, seq 5, the old id and the window's count", u)
		}
		l, err := NewLedger(rdb)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Refund(ctx, oldRid, uh, 1); err != nil {
			t.Fatal(err)
		}
		if err := l.Refund(ctx, oldRid, uh, 1); err != nil { // once per reservation
			t.Fatal(err)
		}
		if u := state(); u.Held != 1 || u.Seq != 5 {
			t.Fatalf("after the refund: %+v, want held 1, seq 5", u)
		}
		r, err := s.Reserve(ctx, req)
		if err != nil || r.Code != Reserved {
			t.Fatalf("after the refund: %+v, %v", r, err)
		}
		xs := rdb.XRange(ctx, k.Journal(), "-", "+").Val()
		if len(xs) != 1 {
			t.Fatalf("journal %v, want one entry with seq 6", xs)
		}
		if je, err := ParseJournalEntry(xs[0].Values); err != nil || je.Seq != 6 {
			t.Fatalf("journal %v, want one entry with seq 6", xs)
		}
		if _, n, _ := ParseReservationID(r.ReservationID); rdb.Get(ctx, k.Seq()).Val() != strconv.FormatInt(n, 10) {
			t.Fatalf("rid %s, seq counter %q", r.ReservationID, rdb.Get(ctx, k.Seq()).Val())
		}
		if u := state(); u.Held != 2 || u.Seq != 6 || u.Last != r.ReservationID {
			t.Fatalf("after the reservation: %+v, want held 2, seq 6, last %s", u, r.ReservationID)
		}
		if again, err := s.Reserve(ctx, req); err != nil || again.Code != AlreadyPurchased || again.ReservationID != r.ReservationID {
			t.Fatalf("at the limit again: %+v, %v; want AlreadyPurchased %s", again, err, r.ReservationID)
		}
		// A state of the release before (a bare count): the refund fails and sets no marker.
		if err := rdb.HSet(ctx, k.Users(), uh, "2").Err(); err != nil {
			t.Fatal(err)
		}
		if err := l.Refund(ctx, r.ReservationID, uh, 1); err == nil {
			t.Fatal("a refund on a state it cannot read succeeded")
		}
		if rdb.HExists(ctx, k.Users(), uh+":r:"+r.ReservationID).Val() {
			t.Fatal("the failed refund left its marker: a retry would skip it")
		}
	})
}
