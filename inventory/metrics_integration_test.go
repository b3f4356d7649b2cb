//go:build integration

package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// TestScriptLimitDecisionsAreCounted: the decisions the reservation script makes for the user
// and the IP reach the LimitRecorder, one per script answer; answers that decide nothing
// (replays) are not counted.
func TestScriptLimitDecisionsAreCounted(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &limitLog{}
	m.CountLimits(rec)
	rdb := testsvc.Redis(t)
	s, err := New(rdb, Options{}, m, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	a := mustCreate(t, s, openActivity(t, 10, 1, 1))
	ipKey := "sk:{ip:" + a.ID + "}:tb"
	t.Cleanup(func() { rdb.Del(context.Background(), ipKey) })
	req := func(user, idem string, window int) ReserveRequest {
		return ReserveRequest{ActivityID: a.ID, UserID: user, IdempotencyKey: idem, Quantity: 1,
			UserRate: tokenbucket.Limit{Rate: 0.001, Burst: 2}, Window: time.Minute, WindowMax: window,
			IPKey: ipKey, IPRate: tokenbucket.Limit{Rate: 0.001, Burst: 3}}
	}
	want := []string{}
	for _, c := range []struct {
		give ReserveRequest
		code Code
		want string
	}{
		{req("u1", "k1", 0), Reserved, "admitted user=true ip=true"},
		{req("u1", "k1", 0), Replayed, ""},
		{req("u1", "", 0), AlreadyPurchased, "admitted user=true ip=true"},
		{req("u1", "", 0), UserRateLimited, "rejected user rate retry>0=true"},
		{req("u2", "", 1), Reserved, "admitted user=true ip=true"},
		{req("u2", "", 1), UserWindowLimited, "rejected user window retry>0=true"},
		{req("u3", "", 0), IPRateLimited, "rejected ip rate retry>0=true"},
	} {
		res, err := s.Reserve(ctx, c.give)
		if err != nil || res.Code != c.code {
			t.Fatalf("%s: %v %v, want %v", c.give.UserID, res.Code, err, c.code)
		}
		if c.want != "" {
			want = append(want, c.want)
		}
	}
	if !s.ChecksIP() {
		t.Fatal("a single Redis node must let the script take the IP token")
	}
	if got := strings.Join(rec.events, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("recorded:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
