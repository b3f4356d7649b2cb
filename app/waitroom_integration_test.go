//go:build integration

package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testwait"
)

// roomConfig is testConfig with a waiting room on activity id.
func roomConfig(id, room string) string {
	return testConfig + "activities:\n  " + id + ":\n    waitingRoom: " + room + "\n"
}

// fromRequest reports whether a Redis command is sent on behalf of an HTTP request: its
// context descends from a request's (net/http puts the server in every request context).
// Background work (refresh, the inlet, the relay) runs on the instance's own context and is
// not counted, so the count does not swing with the load.
func fromRequest(ctx context.Context, _ redis.Cmder) bool {
	return ctx.Value(http.ServerContextKey) != nil
}

// roomCommand matches the waiting room's commands sent on behalf of an HTTP request: those
// naming one of its keys ("...{<activity>}:q:..."). A request's other commands are other
// layers' (admission takes a new lease of a shared budget under the request that found the
// last one spent), whose cost their own tests count.
func roomCommand(ctx context.Context, cmd redis.Cmder) bool {
	if !fromRequest(ctx, cmd) {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.Contains(s, "}:q:") {
			return true
		}
	}
	return false
}

func (ta *testApp) join(t testing.TB, id, user string) answer {
	return ta.do(t, "POST", "/api/v1/activities/"+id+"/queue", map[string]string{"X-User-Id": user}, "")
}

func (ta *testApp) poll(t testing.TB, id, user, ticket string) answer {
	return ta.do(t, "GET", "/api/v1/activities/"+id+"/queue/"+ticket, map[string]string{"X-User-Id": user}, "")
}

func (ta *testApp) reserveWith(t testing.TB, id, user, token string) answer {
	return ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", map[string]string{"X-User-Id": user},
		fmt.Sprintf(`{"token":%q}`, token))
}

// The pass flow on two instances: one place per user, polls that cost Redis nothing until the
// turn came and one command after, a pass once the turn came, bound to its user, used once; no
// reservation without it.
func TestWaitingRoomPassFlow(t *testing.T) {
	id, later := uniq(t, "wr-flow"), uniq(t, "wr-later")
	const room = "{enabled: true, rate: 5, order: fifo, heartbeat: 3s, passTTL: 10s}"
	cfg := roomConfig(id, room) + "  " + later + ":\n    waitingRoom: " + room + "\n"
	opts := realOptions(t)
	a, b := startApp(t, opts, cfg), startApp(t, opts, cfg)
	a.createActivity(t, id, 3, 1, 2, time.Now().Add(-time.Second))
	a.createActivity(t, later, 3, 1, 2, time.Now().Add(5*time.Minute)) // its line waits for the opening

	j1 := a.join(t, id, "u1")
	if j1.status != http.StatusCreated {
		t.Fatalf("join: %d %v", j1.status, j1.body)
	}
	ticket := j1.body["ticket"].(string)
	if again := b.join(t, id, "u1"); again.status != http.StatusOK || again.body["ticket"] != ticket {
		t.Fatalf("joining again on the other instance: %d %v, want 200 and ticket %s", again.status, again.body, ticket)
	}
	if p := a.poll(t, id, "u2", ticket); p.status != http.StatusNotFound {
		t.Fatalf("another user's ticket: %d %v, want 404", p.status, p.body)
	}
	if r := a.reserve(t, id, "u1", ""); r.status != http.StatusForbidden || r.body["code"] != admission.CodeTokenRequired {
		t.Fatalf("reservation without a pass: %d %v", r.status, r.body)
	}
	var pass string
	testwait.Eventually(t, 10*time.Second, func() bool {
		p := b.poll(t, id, "u1", ticket)
		if p.status == http.StatusServiceUnavailable {
			return false // the line is not read on b yet
		}
		if p.status != http.StatusOK {
			t.Fatalf("poll: %d %v", p.status, p.body)
		}
		pass, _ = p.body["pass"].(string)
		return p.body["status"] == "ADMITTED" && pass != ""
	}, "u1 admitted")
	j2 := a.join(t, id, "u2")
	if r := a.reserveWith(t, id, "u2", pass); r.status != http.StatusForbidden {
		t.Fatalf("another user's pass: %d %v", r.status, r.body)
	}
	if r := a.reserveWith(t, id, "u1", pass); r.status != http.StatusAccepted {
		t.Fatalf("reservation with the pass: %d %v", r.status, r.body)
	}
	if r := b.reserveWith(t, id, "u1", pass); r.status != http.StatusForbidden {
		t.Fatalf("the pass used twice: %d %v", r.status, r.body)
	}

	// Polls of a waiting place cost no Redis call: 500 of them send no command on behalf of a
	// request, where a join (the control: it takes a place in Redis) sends at least one. A
	// poll of a place whose turn came sends three in one round trip (is the place the
	// user's, is the line the one read, is its pass used?).
	t2 := j2.body["ticket"].(string)
	testwait.Eventually(t, 10*time.Second, func() bool {
		p := b.poll(t, id, "u2", t2)
		return p.status == http.StatusOK && p.body["status"] == "ADMITTED"
	}, "u2 admitted")
	jl := b.join(t, later, "u2")
	if jl.status != http.StatusCreated {
		t.Fatalf("join the later line: %d %v", jl.status, jl.body)
	}
	tl := jl.body["ticket"].(string)
	testwait.Eventually(t, 5*time.Second, func() bool {
		return b.poll(t, later, "u2", tl).status == http.StatusOK
	}, "the later line read on b")
	var mu sync.Mutex
	sent := map[string]int{} // what was counted, by command and key (named when the count is off)
	cc := &redishook.Counter{Match: func(ctx context.Context, cmd redis.Cmder) bool {
		if !roomCommand(ctx, cmd) {
			return false
		}
		mu.Lock()
		sent[fmt.Sprint(cmd.Args()[:min(2, len(cmd.Args()))])]++
		mu.Unlock()
		return true
	}}
	b.rdb.AddHook(cc) // set before the hook is added: the instance's goroutines read it
	// A poll of a ticket newer than the instance's last reading of its line asks Redis whose
	// it is (a line Redis lost numbers its tickets again): wait until b's reading covers tl.
	testwait.Eventually(t, 5*time.Second, func() bool {
		before := cc.Load()
		return b.poll(t, later, "u2", tl).status == http.StatusOK && cc.Load() == before
	}, "a poll of the later line's ticket answered from b's memory")
	cc.Reset()
	mu.Lock()
	clear(sent)
	mu.Unlock()
	if j := b.join(t, id, "u3"); j.status != http.StatusCreated {
		t.Fatalf("join u3: %d %v", j.status, j.body)
	}
	joined := cc.Load()
	if joined == 0 {
		t.Fatal("a join sent no Redis command under its request context: the counter sees nothing")
	}
	for i := 0; i < 500; i++ {
		if p := b.poll(t, later, "u2", tl); p.status != http.StatusOK || p.body["status"] != "WAITING" {
			t.Fatalf("poll of the waiting place: %d %v", p.status, p.body)
		}
	}
	if polled := cc.Load() - joined; polled != 0 {
		t.Fatalf("500 polls of a waiting place sent %d Redis commands (a join sent %d)", polled, joined)
	}
	cc.Reset()
	mu.Lock()
	clear(sent)
	mu.Unlock()
	for i := 0; i < 500; i++ {
		if p := b.poll(t, id, "u2", t2); p.status != http.StatusOK || p.body["status"] != "ADMITTED" {
			t.Fatalf("poll of the admitted place: %d %v", p.status, p.body)
		}
	}
	// one round trip a poll: is the place still the user's and the line the one the instance
	// read (a line Redis lost numbers its places again), is its pass used
	mu.Lock()
	defer mu.Unlock()
	q := "sk:{" + id + "}:q:"
	if polled := cc.Load(); polled != 1500 || len(sent) != 3 || sent["[hget "+q+"users]"] != 500 ||
		sent["[hexists "+q+"used]"] != 500 || sent["[hget "+q+"st]"] != 500 {
		t.Fatalf("500 polls of an admitted place sent %d Redis commands, want 1500, one HGET of the place, one HEXISTS of the used passes and one HGET of the line's opening each: %v", polled, sent)
	}
}

// A sold-out activity answers every poll 410 SOLD_OUT, on every instance. Both users join
// before the opening, so the line's shuffled order decides who is admitted first: the test
// follows whoever it is.
func TestWaitingRoomSoldOutAnswers410(t *testing.T) {
	id := uniq(t, "wr-sold")
	cfg := roomConfig(id, "{enabled: true, rate: 50, heartbeat: 3s}")
	opts := realOptions(t)
	a, b := startApp(t, opts, cfg), startApp(t, opts, cfg)
	a.createActivity(t, id, 1, 1, 1, time.Now().Add(-time.Second))
	tickets := map[string]string{"w1": a.join(t, id, "w1").body["ticket"].(string), "w2": b.join(t, id, "w2").body["ticket"].(string)}
	var winner, loser, pass string
	testwait.Eventually(t, 10*time.Second, func() bool {
		for user, ticket := range tickets {
			p := a.poll(t, id, user, ticket)
			if pass, _ = p.body["pass"].(string); pass != "" {
				winner = user
				return true
			}
		}
		return false
	}, "one of w1 and w2 admitted")
	for user := range tickets {
		if user != winner {
			loser = user
		}
	}
	if r := a.reserveWith(t, id, winner, pass); r.status != http.StatusAccepted {
		t.Fatalf("reserve: %d %v", r.status, r.body)
	}
	// An instance learns the sell-out from its refresh (every 250 ms). Here a pass reads every
	// activity the shared test MySQL knows, each one recovering in this test's namespace: about
	// 200 ms a pass with -race on a quiet machine (2026-12-07, 1,835 activities), so on a loaded
	// one two passes can take more than the 2 s this bound was (a .ci/run failed on it).
	for _, ta := range []*testApp{a, b} {
		testwait.Eventually(t, 5*time.Second, func() bool {
			p := ta.poll(t, id, loser, tickets[loser])
			return p.status == http.StatusGone && p.body["code"] == admission.CodeSoldOut
		}, "410 SOLD_OUT for %s on %s", loser, ta.base)
	}
	if j := b.join(t, id, "w3"); j.status != http.StatusGone {
		t.Fatalf("join after the sell-out: %d %v", j.status, j.body)
	}
}
