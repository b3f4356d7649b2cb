//go:build integration

package waitroom

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
)

// A line whose Redis state was lost (a Redis back with less, a flush) numbers its places again
// from 1. A ticket or a pass of the old line names a place by its number only, so it must not
// reach the new line's place of that number, another buyer's: the old ticket's poll got a pass
// for it and the old pass used it, so one buyer took the turn of another, whose own pass was
// then refused; and a place the old line skipped showed SKIPPED to the new line's buyer there.
func TestTheOldLinesTicketsAndPassesDoNotReachTheNewLine(t *testing.T) {
	r, rdb, id, w := redisRoom(t, "wr-lost", nil)
	ctx := context.Background()
	join := func(user string, alive bool) Ticket {
		t.Helper()
		tk, err := r.Join(ctx, id, user, alive)
		if err != nil {
			t.Fatalf("join %s: %v", user, err)
		}
		return tk
	}
	admitted := func(user string, n uint64) string {
		t.Helper()
		now := time.Now()
		st, err := r.Status(ctx, id, user, n, w, now, false, now)
		if err != nil || st.State != StateAdmitted || st.Pass == "" {
			t.Fatalf("%s's poll of ticket %d: %+v %v, want ADMITTED with a pass (view %+v)", user, n, st, err, r.lineOf(id).view.Load())
		}
		return st.Pass
	}

	// The old line: place 1 skipped (no heartbeat), place 2 admitted with a pass.
	if tk := join("gone", false); tk.N != 1 {
		t.Fatalf("first ticket %d", tk.N)
	}
	old := join("old", true)
	stepUntil(ctx, t, r, id, w, 2)
	oldPass := admitted("old", old.N)

	// Redis loses the line.
	k := keysOf(id)
	if err := rdb.Del(ctx, k.users, k.st, k.hb, k.adm, k.live, k.used, k.steps, k.skip, k.lease).Err(); err != nil {
		t.Fatal(err)
	}
	stepUntil(ctx, t, r, id, w, 0)
	// The new line has handed out no ticket yet: the old ticket's poll says so at once (its
	// holder joins again), rather than WAITING until the new line numbers that far.
	now := time.Now()
	if st, err := r.Poll(ctx, id, "old", old.N, w, now, false, now); !errors.Is(err, ErrNotYourPlace) {
		t.Errorf("the old ticket's poll before the new line numbered that far: %+v %v, want ErrNotYourPlace", st, err)
	}

	// The new line: two buyers take places 1 and 2, both polling.
	n1, n2 := join("new1", true), join("new2", true)
	if n1.N != 1 || n2.N != old.N {
		t.Fatalf("the new line's tickets %d, %d: want 1 and %d (the old ones' numbers)", n1.N, n2.N, old.N)
	}
	// a ticket joined after the instance's last reading of the line is the user's
	if st, err := r.Poll(ctx, id, "new2", n2.N, w, now, false, now); err != nil || st.State != StateWaiting {
		t.Errorf("a poll of a ticket newer than the instance's reading: %+v %v, want WAITING", st, err)
	}
	stepUntil(ctx, t, r, id, w, 2)
	admitted("new1", n1.N) // place 1, which the old line skipped
	newPass := admitted("new2", n2.N)

	// The old buyer's ticket and pass name place 2, now new2's.
	now = time.Now()
	if st, err := r.Poll(ctx, id, "old", old.N, w, now, false, now); !errors.Is(err, ErrNotYourPlace) {
		t.Errorf("the old ticket's poll: %+v %v, want ErrNotYourPlace", st, err)
	}
	if ok, err := r.ConsumePass(ctx, id, "old", oldPass, "k-old", w.PassTTL.D()); ok || err != nil {
		t.Errorf("the old pass was used on the new line: %v %v", ok, err)
	}
	if ok, err := r.ConsumePass(ctx, id, "new2", newPass, "k-new2", w.PassTTL.D()); !ok || err != nil {
		t.Errorf("new2's own pass: %v %v, want used", ok, err)
	}
}

// The same in a shuffled line, where a ticket's place comes from the order drawn at the
// opening: a buyer who joins the new line first has ticket 1 again, but the new order puts
// ticket 1 elsewhere, so the old pass's place is another buyer's. (Tried until the two orders
// put ticket 1 at different places, which they do two times in three.)
func TestAnOldPassOfAShuffledLineDoesNotReachTheNewOrder(t *testing.T) {
	ctx := context.Background()
	users := []string{"b1", "b2", "b3"}
	for try := 0; try < 20; try++ {
		r, rdb, id, w := redisRoom(t, "wr-lost-shuffled", nil)
		w.Order = config.OrderShuffle
		// a line of three joined before its opening (the first step opens it), b1 at ticket 1
		prequeue := func() *view {
			t.Helper()
			for _, u := range users {
				if _, err := r.Join(ctx, id, u, true); err != nil {
					t.Fatal(err)
				}
			}
			return stepUntil(ctx, t, r, id, w, 3).view.Load()
		}
		oldView := prequeue()
		e0, _ := oldView.place(1)
		now := time.Now()
		st, err := r.Status(ctx, id, "b1", 1, w, now, false, now)
		if err != nil || st.State != StateAdmitted {
			t.Fatalf("b1's poll: %+v %v", st, err)
		}
		k := keysOf(id)
		if err := rdb.Del(ctx, k.users, k.st, k.hb, k.adm, k.live, k.used, k.steps, k.skip, k.lease).Err(); err != nil {
			t.Fatal(err)
		}
		newView := prequeue()
		if e1, _ := newView.place(1); e1 == e0 || newView.seed == oldView.seed {
			continue // ticket 1 at the same place again: the old pass names b1's own place
		}
		if ok, err := r.ConsumePass(ctx, id, "b1", st.Pass, "k-old", w.PassTTL.D()); ok || err != nil {
			t.Fatalf("b1's pass of the old order was used on the new one: %v %v", ok, err)
		}
		for n := uint64(2); n <= 3; n++ { // whoever has the old pass's place still has its turn
			u := users[n-1]
			now := time.Now()
			st, err := r.Status(ctx, id, u, n, w, now, false, now)
			if err != nil || st.State != StateAdmitted {
				t.Fatalf("%s's poll: %+v %v", u, st, err)
			}
			if ok, err := r.ConsumePass(ctx, id, u, st.Pass, "k-"+u, w.PassTTL.D()); !ok || err != nil {
				t.Fatalf("%s's own pass: %v %v", u, ok, err)
			}
		}
		return
	}
	t.Fatal("twenty new orders all put ticket 1 where the old one did")
}

// An instance answers from the line it last read, and reads it again every period: between a
// loss and its next reading it still holds the old line's places. A new buyer whose place the
// old line skipped, or had admitted, is told neither SKIPPED (final for the page) nor ADMITTED
// with a pass of the old line's order, but to retry (ErrUnknownLine: 503) until the instance
// follows the new line.
func TestAViewOfALostLineAnswersRetry(t *testing.T) {
	r, rdb, id, w := redisRoom(t, "wr-lost-view", nil)
	ctx := context.Background()
	for _, u := range []struct {
		name  string
		alive bool
	}{{"gone", false}, {"old", true}} {
		if _, err := r.Join(ctx, id, u.name, u.alive); err != nil {
			t.Fatal(err)
		}
	}
	ln := stepUntil(ctx, t, r, id, w, 2)
	if v := ln.view.Load(); !v.wasSkipped(1) || v.wasSkipped(2) {
		t.Fatalf("the old line: place 1 skipped and 2 admitted, got skips %v", v.skips)
	}
	k := keysOf(id)
	if err := rdb.Del(ctx, k.users, k.st, k.hb, k.adm, k.live, k.used, k.steps, k.skip, k.lease).Err(); err != nil {
		t.Fatal(err)
	}
	// the new line, before this instance reads it again: another instance led it
	other, err := New(rdb, fakeSigner{}, r.stock, func() *config.Config { return nil }, Options{InstanceID: "i2"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"new1", "new2"} {
		if _, err := other.Join(ctx, id, u, true); err != nil {
			t.Fatal(err)
		}
	}
	stepUntil(ctx, t, other, id, w, 2)
	now := time.Now()
	for n, u := range []string{"new1", "new2"} {
		if st, err := r.Status(ctx, id, u, uint64(n+1), w, now, false, now); !errors.Is(err, ErrUnknownLine) {
			t.Errorf("%s's poll on the instance that read the old line: %+v %v, want ErrUnknownLine", u, st, err)
		}
	}
	// once it reads the new line, it answers from it
	stepUntil(ctx, t, r, id, w, 2)
	for n, u := range []string{"new1", "new2"} {
		if st, err := r.Status(ctx, id, u, uint64(n+1), w, now, false, now); err != nil || st.State != StateAdmitted {
			t.Errorf("%s's poll after the new line was read: %+v %v, want ADMITTED", u, st, err)
		}
	}
}

// A Redis back with less may have lost inlet steps and not joins (the numbers handed out
// stand, the serving position went back): the places those steps skipped are walked again,
// and a buyer who polls again by then is admitted, so the instance must forget the skips it
// had read (it showed SKIPPED to a buyer the line admitted).
func TestAnInstanceForgetsTheSkipsOfLostInletSteps(t *testing.T) {
	r, rdb, id, w := redisRoom(t, "wr-lost-steps", nil)
	ctx := context.Background()
	late, err := r.Join(ctx, id, "late", false) // not polling yet: the inlet skips place 1
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Join(ctx, id, "on-time", true); err != nil {
		t.Fatal(err)
	}
	k := keysOf(id)
	ln := stepUntil(ctx, t, r, id, w, 2)
	if !ln.view.Load().wasSkipped(1) {
		t.Fatal("place 1 was not skipped")
	}
	// Redis goes back to before the inlet's steps (the joins stand); "late" polls by then.
	if err := rdb.Del(ctx, k.adm, k.live, k.steps, k.skip).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, k.st, "pos", 0, "admitted", 0, "skipped", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, k.hb, redis.Z{Score: float64(time.Now().UnixMilli()), Member: late.N}).Err(); err != nil {
		t.Fatal(err)
	}
	stepUntil(ctx, t, r, id, w, 2)
	now := time.Now()
	if st, err := r.Status(ctx, id, "late", late.N, w, now, false, now); err != nil || st.State != StateAdmitted {
		t.Fatalf("late's poll after the inlet walked its place again: %+v %v, want ADMITTED (skips known %v)", st, err, ln.view.Load().skips)
	}
}

// A pass is given back only by the reservation that used it, on the line that gave its place
// to the user: the old line's pass, used just before Redis lost the line and given back after
// (its reservation refused as the activity recovered), names the place a new buyer's
// reservation has used since, which stays used (it was made live again, for anyone's pass).
func TestAPassOfALostLineIsNotGivenBackOnTheNewOne(t *testing.T) {
	r, rdb, id, w := redisRoom(t, "wr-lost-return", nil)
	ctx := context.Background()
	turn := func(user string) string {
		t.Helper()
		tk, err := r.Join(ctx, id, user, true)
		if err != nil || tk.N != 1 {
			t.Fatalf("join %s: %+v %v", user, tk, err)
		}
		stepUntil(ctx, t, r, id, w, 1)
		now := time.Now()
		st, err := r.Status(ctx, id, user, tk.N, w, now, false, now)
		if err != nil || st.State != StateAdmitted {
			t.Fatalf("%s's poll: %+v %v", user, st, err)
		}
		if ok, err := r.ConsumePass(ctx, id, user, st.Pass, "k-"+user, w.PassTTL.D()); !ok || err != nil {
			t.Fatalf("%s's pass: %v %v", user, ok, err)
		}
		return st.Pass
	}
	oldPass := turn("old")
	k := keysOf(id)
	if err := rdb.Del(ctx, k.users, k.st, k.hb, k.adm, k.live, k.used, k.steps, k.skip, k.lease).Err(); err != nil {
		t.Fatal(err)
	}
	stepUntil(ctx, t, r, id, w, 0)
	newPass := turn("new")
	if ok, err := r.ReturnPass(ctx, id, "old", oldPass, "k-old", w.PassTTL.D()); ok || err != nil {
		t.Fatalf("the old line's pass was given back on the new line: %v %v", ok, err)
	}
	if ok, err := r.ConsumePass(ctx, id, "new", newPass, "k-other", w.PassTTL.D()); ok || err != nil {
		t.Fatalf("the new buyer's used pass was live again (used by another reservation): %v %v", ok, err)
	}
	// its own reservation gives it back
	if ok, err := r.ReturnPass(ctx, id, "new", newPass, "k-other", w.PassTTL.D()); ok || err != nil {
		t.Fatalf("a pass given back by another reservation than the one that used it: %v %v", ok, err)
	}
	if ok, err := r.ReturnPass(ctx, id, "new", newPass, "k-new", w.PassTTL.D()); !ok || err != nil {
		t.Fatalf("the new buyer's reservation gave its pass back: %v %v, want true", ok, err)
	}
}
