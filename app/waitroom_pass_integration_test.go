//go:build integration

package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/testwait"
)

// A waiting-room pass is spent only by a reservation that took stock. A buyer whose address
// shares the per-IP bucket with a neighbour who just emptied it gets 429, and a reservation
// whose Redis call fails gets 503; neither may cost the buyer the turn: the poll still shows
// the pass, and the same pass (with the 503's idempotency key, as API.md says) reserves once
// the limit and Redis allow it. Used by a 202, it is spent.
func TestWaitingRoomPassSurvivesARefusal(t *testing.T) {
	id, other := uniq(t, "wr-keep"), uniq(t, "wr-nbr")
	room := "activities:\n  " + id + ":\n    waitingRoom: {enabled: true, rate: 50, heartbeat: 3s, passTTL: 60s}\n"
	const wide = "ip:       {rate: 1000000, burst: 1000000}"
	if !strings.Contains(testConfig, wide) {
		t.Fatalf("setup: testConfig has no line %q", wide)
	}
	tight := strings.Replace(testConfig, wide, "ip:       {rate: 0.01, burst: 1}", 1)
	ta := startApp(t, realOptions(t), tight+room)
	ta.createActivity(t, id, 5, 1, 1, time.Now().Add(-time.Second))
	ta.createActivity(t, other, 5, 1, 1, time.Now().Add(-time.Second))

	j := ta.join(t, id, "buyer")
	if j.status != http.StatusCreated {
		t.Fatalf("join: %d %v", j.status, j.body)
	}
	ticket := j.body["ticket"].(string)
	pass := func() string {
		var p string
		testwait.Eventually(t, 10*time.Second, func() bool {
			a := ta.poll(t, id, "buyer", ticket)
			p, _ = a.body["pass"].(string)
			return a.status == http.StatusOK && a.body["status"] == "ADMITTED" && p != ""
		}, "the buyer admitted with a pass")
		return p
	}
	first := pass()

	// The neighbour, on the same address, takes the address's only token (on a sale without
	// a room); the buyer's reservation then meets the empty bucket in the script.
	if r := ta.reserve(t, other, "neighbour", ""); r.status != http.StatusAccepted {
		t.Fatalf("setup: the neighbour's reservation: %d %v", r.status, r.body)
	}
	if r := ta.reserveWith(t, id, "buyer", first); r.status != http.StatusTooManyRequests {
		t.Fatalf("the buyer behind an empty address bucket: %d %v, want 429", r.status, r.body)
	}
	if p := pass(); p != first {
		t.Fatalf("the poll after the 429 shows pass %q, want the same %q", p, first)
	}

	// The limit goes back up; the buyer's reservation now fails in Redis (503).
	ta.setConfig(t, testConfig+room)
	fault := &failReserve{id: id}
	fault.left.Store(1)
	ta.rdb.AddHook(fault)
	r := ta.reserveWith(t, id, "buyer", first)
	if r.status != http.StatusServiceUnavailable || fault.left.Load() > 0 {
		t.Fatalf("the buyer's reservation with Redis failing: %d %v (faults left %d), want 503", r.status, r.body, fault.left.Load())
	}
	key, _ := r.body["idempotencyKey"].(string)
	h := map[string]string{"X-User-Id": "buyer"}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	ok := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", h, fmt.Sprintf(`{"token":%q}`, first))
	if ok.status != http.StatusAccepted {
		t.Fatalf("the retry with the same pass after a 429 and a 503: %d %v, want 202", ok.status, ok.body)
	}
	if again := ta.reserveWith(t, id, "buyer", first); again.status != http.StatusForbidden || again.body["code"] != CodeTokenRequired {
		t.Fatalf("the pass after its 202: %d %v, want 403 %s", again.status, again.body, CodeTokenRequired)
	}
	if v := scrapeSum(t, ta, "seckill_waitroom_passes_returned_total"); v != 2 {
		t.Fatalf("seckill_waitroom_passes_returned_total %v, want 2 (the 429 and the 503)", v)
	}
}

// failReserve fails (before sending) the next left reservation scripts of activity id: an
// EVALSHA or EVAL whose keys name one of the activity's stock shards.
type failReserve struct {
	id   string
	left atomic.Int32
}

var errInjected = errors.New("injected fault")

func (f *failReserve) hit(cmd redis.Cmder) bool {
	if n := cmd.Name(); n != "evalsha" && n != "eval" {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasPrefix(s, "sk:{"+f.id+":") && strings.HasSuffix(s, ":stock") {
			return f.left.Add(-1) >= 0
		}
	}
	return false
}

func (f *failReserve) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failReserve) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if f.hit(cmd) {
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

func (f *failReserve) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if f.hit(c) {
				for _, c := range cmds {
					c.SetErr(errInjected)
				}
				return errInjected
			}
		}
		return next(ctx, cmds)
	}
}
