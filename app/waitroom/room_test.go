package waitroom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/inventory"
)

type fakeStock struct{ v inventory.ActivityView }

func (f *fakeStock) Activity(id string) (inventory.ActivityView, bool) { return f.v, true }

type fakeSigner struct{}

func (fakeSigner) Sign(domain, msg string) string {
	s := sha256.Sum256([]byte("k\x00" + domain + "\x00" + msg))
	return hex.EncodeToString(s[:16])
}
func (fakeSigner) UserHash(u string) string { return fakeSigner{}.Sign("u", u) }

// newTestRoom is a room on a miniredis of its own for activity "a1", open a second ago with 10
// units left, and a waiting-room configuration that admits 50 places a second in order.
func newTestRoom(t *testing.T, order string) (*Room, config.WaitingRoom) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), DisableIdentity: true})
	fs := &fakeStock{}
	fs.v.ID, fs.v.OpensAt, fs.v.Remaining = "a1", time.Now().Add(-time.Second), 10
	r, err := New(rdb, fakeSigner{}, fs, func() *config.Config { return nil }, Options{InstanceID: "i1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := config.DefaultWaitingRoom()
	w.Enabled, w.Rate, w.Order = true, 50, order
	return r, w
}

func TestJoinPollPass(t *testing.T) {
	r, w := newTestRoom(t, config.OrderShuffle)
	ctx := context.Background()
	tk, err := r.Join(ctx, "a1", "u1", true)
	if err != nil || !tk.New || tk.N != 1 {
		t.Fatalf("join: %+v %v", tk, err)
	}
	if again, _ := r.Join(ctx, "a1", "u1", true); again.N != 1 || again.New || again.Token != tk.Token {
		t.Fatalf("rejoin: %+v", again)
	}
	n, ok := r.ParseTicket("a1", "u1", tk.Token)
	if !ok || n != 1 {
		t.Fatalf("parse: %d %v", n, ok)
	}
	if _, ok := r.ParseTicket("a1", "u2", tk.Token); ok {
		t.Fatal("another user's ticket parsed")
	}
	ln := r.lineOf("a1")
	var st Status
	for i := 0; i < 5; i++ {
		if err := r.stepLine(ctx, ln, w); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err = r.Status(ctx, "a1", "u1", n, w, time.Now(), false, time.Now())
	if err != nil || st.State != StateAdmitted || st.Pass == "" {
		t.Fatalf("status: %+v %v (view %+v)", st, err, ln.view.Load())
	}
	if ok, err := r.ConsumePass(ctx, "a1", "u2", st.Pass, "k1", time.Minute); ok || err != nil {
		t.Fatalf("another user's pass: %v %v", ok, err)
	}
	if ok, err := r.ConsumePass(ctx, "a1", "u1", st.Pass, "k1", time.Minute); !ok || err != nil {
		t.Fatalf("pass: %v %v", ok, err)
	}
	if ok, err := r.ConsumePass(ctx, "a1", "u1", st.Pass, "k2", time.Minute); ok || err != nil {
		t.Fatalf("pass used twice, by another reservation: %v %v", ok, err)
	}
	// The same reservation sent again with its key (after an answer it did not get) may.
	if ok, err := r.ConsumePass(ctx, "a1", "u1", st.Pass, "k1", time.Minute); !ok || err != nil {
		t.Fatalf("the same reservation again with its key: %v %v", ok, err)
	}
}

// A place the inlet skipped (no heartbeat within the bound) shows SKIPPED to a later poll,
// never a pass: the view knows the skipped places (a poll of one showed ADMITTED with a pass
// the reservation then refused: 1,302 users of the first queued-sale test run).
func TestSkippedPlaceGetsNoPass(t *testing.T) {
	r, w := newTestRoom(t, config.OrderFIFO)
	ctx := context.Background()
	gone, err := r.Join(ctx, "a1", "gone", false) // no heartbeat: as if it stopped polling
	if err != nil {
		t.Fatal(err)
	}
	live, err := r.Join(ctx, "a1", "live", true)
	if err != nil {
		t.Fatal(err)
	}
	ln := stepUntil(ctx, t, r, "a1", w, 2)
	now := time.Now()
	if st, err := r.Status(ctx, "a1", "gone", gone.N, w, now, false, now); err != nil || st.State != StateSkipped || st.Pass != "" {
		t.Fatalf("the skipped place: %+v %v, want SKIPPED without a pass (view %+v)", st, err, ln.view.Load())
	}
	if st, err := r.Status(ctx, "a1", "live", live.N, w, now, false, now); err != nil || st.State != StateAdmitted || st.Pass == "" {
		t.Fatalf("the live place: %+v %v, want ADMITTED", st, err)
	}
}

// stepUntil steps activity id's line until its inlet moved past pos places (at most 100
// steps, 20 ms apart), then once more for the view after the last move, and returns the line.
func stepUntil(ctx context.Context, t *testing.T, r *Room, id string, w config.WaitingRoom, pos uint64) *line {
	t.Helper()
	ln := r.lineOf(id)
	for i := 0; i < 100; i++ {
		if err := r.stepLine(ctx, ln, w); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if v := ln.view.Load(); v != nil && v.pos >= pos {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.stepLine(ctx, ln, w); err != nil { // the view after the last move
		t.Fatal(err)
	}
	return ln
}

// A poll never shows a pass that cannot be used: once a reservation used it, the poll answers
// USED, even past the pass's expiry (EXPIRED says it was not used); given back (a refusal), it
// is shown again, and a pass nobody used shows EXPIRED once expired.
func TestUsedPassIsNotShown(t *testing.T) {
	r, w := newTestRoom(t, config.OrderFIFO)
	ctx := context.Background()
	tk, err := r.Join(ctx, "a1", "u1", true)
	if err != nil {
		t.Fatal(err)
	}
	stepUntil(ctx, t, r, "a1", w, 1)
	now := time.Now()
	st, err := r.Status(ctx, "a1", "u1", tk.N, w, now, false, now)
	if err != nil || st.State != StateAdmitted || st.Pass == "" {
		t.Fatalf("before use: %+v %v, want ADMITTED with a pass", st, err)
	}
	pass, late := st.Pass, st.PassExpires.Add(time.Second)
	if ok, err := r.ConsumePass(ctx, "a1", "u1", pass, "k1", w.PassTTL.D()); !ok || err != nil {
		t.Fatalf("use: %v %v", ok, err)
	}
	for _, at := range []time.Time{now, late} {
		if st, err := r.Status(ctx, "a1", "u1", tk.N, w, at, false, at); err != nil || st.State != StateUsed || st.Pass != "" || !st.PassExpires.IsZero() {
			t.Fatalf("after use, at %v: %+v %v, want USED with no pass", at, st, err)
		}
	}
	if ok, err := r.ReturnPass(ctx, "a1", "u1", pass, "k1", w.PassTTL.D()); !ok || err != nil {
		t.Fatalf("give back: %v %v", ok, err)
	}
	if st, err := r.Status(ctx, "a1", "u1", tk.N, w, now, false, now); err != nil || st.State != StateAdmitted || st.Pass != pass {
		t.Fatalf("given back: %+v %v, want ADMITTED with the same pass", st, err)
	}
	if st, err := r.Status(ctx, "a1", "u1", tk.N, w, late, false, late); err != nil || st.State != StateExpired || st.Pass != "" {
		t.Fatalf("given back, past its expiry: %+v %v, want EXPIRED", st, err)
	}
}
