//go:build integration

package waitroom

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/testsvc"
)

func TestJoinPollPassOnRedis(t *testing.T) {
	testsvc.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: testsvc.RedisAddr, DisableIdentity: true})
	id := fmt.Sprintf("wr-unit-%d", time.Now().UnixNano())
	fs := &fakeStock{}
	fs.v.ID, fs.v.OpensAt, fs.v.Remaining = id, time.Now().Add(-time.Second), 10
	r, err := New(rdb, fakeSigner{}, fs, func() *config.Config { return nil }, Options{InstanceID: "i1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := config.DefaultWaitingRoom()
	w.Enabled, w.Rate = true, 50
	ctx := context.Background()
	tk, err := r.Join(ctx, id, "u1", true)
	if err != nil {
		t.Fatal(err)
	}
	ln := r.lineOf(id)
	for i := 0; i < 5; i++ {
		if err := r.stepLine(ctx, ln, w); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := r.Status(ctx, id, "u1", tk.N, w, time.Now(), false, time.Now())
	if err != nil || st.State != StateAdmitted {
		t.Fatalf("status %+v %v view %+v", st, err, ln.view.Load())
	}
}

// Two attempts of one reservation (its key) both use the pass: a retry sent while the first
// was still on its way. One is refused and gives its use back; the other took stock. The pass
// must stay spent: it was live again for anyone's reservation (one turn bought twice). Once
// every attempt gave its use back, it is live again.
func TestAPassUsedByTwoAttemptsIsGivenBackByBoth(t *testing.T) {
	r, _, id, w := redisRoom(t, "wr-two-attempts", nil)
	ctx := context.Background()
	tk, err := r.Join(ctx, id, "u1", true)
	if err != nil {
		t.Fatal(err)
	}
	stepUntil(ctx, t, r, id, w, 1)
	now := time.Now()
	st, err := r.Status(ctx, id, "u1", tk.N, w, now, false, now)
	if err != nil || st.State != StateAdmitted {
		t.Fatalf("poll: %+v %v", st, err)
	}
	ttl := w.PassTTL.D()
	for i := 0; i < 2; i++ {
		if ok, err := r.ConsumePass(ctx, id, "u1", st.Pass, "k1", ttl); !ok || err != nil {
			t.Fatalf("attempt %d of k1: %v %v", i+1, ok, err)
		}
	}
	if ok, err := r.ReturnPass(ctx, id, "u1", st.Pass, "k1", ttl); !ok || err != nil {
		t.Fatalf("the refused attempt gives its use back: %v %v", ok, err)
	}
	if ok, err := r.ConsumePass(ctx, id, "u1", st.Pass, "k2", ttl); ok || err != nil {
		t.Fatalf("another reservation used the pass an attempt of k1 bought with: %v %v", ok, err)
	}
	if ok, err := r.ReturnPass(ctx, id, "u1", st.Pass, "k1", ttl); !ok || err != nil {
		t.Fatalf("the other attempt, refused too: %v %v", ok, err)
	}
	if ok, err := r.ConsumePass(ctx, id, "u1", st.Pass, "k2", ttl); !ok || err != nil {
		t.Fatalf("the pass both attempts gave back: %v %v, want live", ok, err)
	}
}

// A kill switch while the line is open: every poll is refused (503 DISABLED), so no heartbeat
// is recorded, and the inlet kept walking: once the pause outlasted the heartbeat bound, it
// skipped every place of the line (joining again returns the skipped place: those buyers could
// never buy). The inlet now walks nothing while the activity is killed, nor for a heartbeat
// bound plus a refused poll's Retry-After after, and the places polled again are admitted.
func TestAKillSwitchDoesNotEmptyTheLine(t *testing.T) {
	var cfg atomic.Pointer[config.Config]
	cfg.Store(&config.Config{})
	r, _, id, w := redisRoom(t, "wr-killed", cfg.Load)
	w.Heartbeat = config.Duration(300 * time.Millisecond)
	ctx := context.Background()
	ln := stepUntil(ctx, t, r, id, w, 0) // open, nobody in line
	if !ln.view.Load().opened {
		t.Fatal("the line did not open")
	}
	cfg.Store(&config.Config{KillSwitch: true})
	users := []string{"u1", "u2", "u3"}
	tickets := map[string]uint64{}
	for _, u := range users {
		tk, err := r.Join(ctx, id, u, true)
		if err != nil {
			t.Fatal(err)
		}
		tickets[u] = tk.N
	}
	// Killed for longer than the heartbeat bound; the users' polls are refused meanwhile.
	for until := time.Now().Add(2 * w.Heartbeat.D()); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		if err := r.stepLine(ctx, ln, w); err != nil {
			t.Fatal(err)
		}
	}
	if v := ln.view.Load(); v.pos != 0 {
		t.Fatalf("the inlet walked %d places while the activity was killed (%d skipped)", v.pos, v.skipped)
	}
	// Back on: the users poll again, and each is admitted, none skipped.
	cfg.Store(&config.Config{})
	admitted := map[string]bool{}
	for deadline := time.Now().Add(15 * time.Second); len(admitted) < len(users) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := r.stepLine(ctx, ln, w); err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			now := time.Now()
			st, err := r.Status(ctx, id, u, tickets[u], w, now, false, now)
			if err != nil {
				t.Fatal(err)
			}
			switch st.State {
			case StateAdmitted:
				admitted[u] = true
			case StateSkipped:
				t.Fatalf("%s's place was skipped after the kill switch (view %+v)", u, ln.view.Load())
			}
		}
	}
	if len(admitted) != len(users) {
		t.Fatalf("admitted %v after the kill switch, want all of %v", admitted, users)
	}
}

// redisRoom is a room on the test Redis for a new activity (its id prefix and a clock), open
// a second ago with 10 units left, with the configuration cfg gives (nil: none), and a FIFO
// waiting room that admits 50 places a second.
func redisRoom(t *testing.T, prefix string, cfg func() *config.Config) (*Room, redis.UniversalClient, string, config.WaitingRoom) {
	t.Helper()
	rdb := testsvc.Redis(t)
	id := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	fs := &fakeStock{}
	fs.v.ID, fs.v.OpensAt, fs.v.Remaining = id, time.Now().Add(-time.Second), 10
	if cfg == nil {
		cfg = func() *config.Config { return nil }
	}
	r, err := New(rdb, fakeSigner{}, fs, cfg, Options{InstanceID: "i1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := config.DefaultWaitingRoom()
	w.Enabled, w.Rate, w.Order = true, 50, config.OrderFIFO
	return r, rdb, id, w
}
