//go:build integration

package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/redishook"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/inventory"
)

// Issue 9, defect 9: before the first configuration loads, every storefront route answers
// 503 UNAVAILABLE with Retry-After in the JSON error model, never 500.
func TestAPINoConfigurationAnswers503(t *testing.T) {
	ta := startAppUnready(t, realOptions(t), "killSwitch: [\n") // never a valid configuration
	user := map[string]string{"X-User-Id": "u-1", "Idempotency-Key": "k"}
	routes := []struct{ method, path string }{
		{"GET", "/api/v1/activities/any"},
		{"POST", "/api/v1/activities/any/tokens"},
		{"POST", "/api/v1/activities/any/reservations"},
		{"GET", "/api/v1/reservations/any.0.0.1"},
		{"GET", "/readyz"},
	}
	for _, r := range routes {
		must503(t, r.method+" "+r.path, ta.do(t, r.method, r.path, user, ""), admission.CodeUnavailable)
	}
	if a := ta.do(t, "GET", "/healthz", nil, ""); a.status != http.StatusOK {
		t.Fatalf("healthz: %d %v", a.status, a.body)
	}
}

// Issue 9, defect 7: "alice" and "alice " are one user in MySQL, so an X-User-Id with
// surrounding whitespace is refused (401, a bad identity).
func TestAPIUserIDWithSurroundingSpaceRefused(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "space")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	for _, u := range []string{"alice ", " alice", "alice\t", "alice\u00a0", "\u3000alice"} {
		req := httptest.NewRequest("POST", "/api/v1/activities/"+id+"/reservations", nil)
		req.Header["X-User-Id"] = []string{u}
		if a := ta.serve(t, req); a.status != http.StatusUnauthorized || a.body["code"] != CodeUnauthenticated {
			t.Fatalf("X-User-Id %q: %d %v, want 401", u, a.status, a.body)
		}
	}
	// Over the wire too (the server trims only SP and HTAB).
	if a := ta.reserve(t, id, "bob\u00a0", ""); a.status != http.StatusUnauthorized {
		t.Fatalf("X-User-Id with a trailing NBSP over HTTP: %d %v", a.status, a.body)
	}
	if a := ta.reserve(t, id, "al ice", ""); a.status != http.StatusAccepted {
		t.Fatalf("inner space is fine: %d %v", a.status, a.body)
	}
}

// Issue 9, defect 10: behind a trusted proxy that appends its own X-Forwarded-For line, the
// client's forged first line must not hide its address from the blacklist.
func TestAPIForwardedForEveryLine(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig+"trustedProxies: [127.0.0.1/32]\nblacklist: {users: [], ips: [203.0.113.7]}\n")
	id := uniq(t, "xff")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	req, _ := http.NewRequest("POST", ta.base+"/api/v1/activities/"+id+"/reservations", nil)
	req.Header.Set("X-User-Id", "xff-user")
	req.Header.Add("X-Forwarded-For", "198.51.100.1") // forged by the client
	req.Header.Add("X-Forwarded-For", "203.0.113.7")  // appended by the proxy
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("blacklisted client behind a second XFF line: %d, want 403", resp.StatusCode)
	}
}

// Issue 14: IPv6 clients are limited per /64 (configurable), and zones do not make a
// client new.
func TestAPIIPv6PerPrefixLimit(t *testing.T) {
	cfg := strings.Replace(testConfig, "ip:       {rate: 1000000, burst: 1000000}", "ip:       {rate: 0.01, burst: 2}", 1)
	ta := startApp(t, realOptions(t), cfg+"trustedProxies: [127.0.0.1/32]\n")
	id := uniq(t, "v6")
	ta.createActivity(t, id, 100, 1, 2, time.Now().Add(-time.Second))
	statuses := []int{}
	for i := 1; i <= 4; i++ {
		a := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", map[string]string{
			"X-User-Id": fmt.Sprintf("v6-%d", i), "X-Forwarded-For": fmt.Sprintf("2001:db8:1:2::%x", i),
		}, "")
		statuses = append(statuses, a.status)
	}
	if statuses[0] != 202 || statuses[1] != 202 || statuses[2] != 429 || statuses[3] != 429 {
		t.Fatalf("four addresses of one /64 with an IP burst of 2: %v, want 202 202 429 429", statuses)
	}
	if a := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", map[string]string{
		"X-User-Id": "v6-other", "X-Forwarded-For": "2001:db8:1:3::1"}, ""); a.status != 202 {
		t.Fatalf("another /64: %d %v", a.status, a.body)
	}
	// A zone in the connection's address is not part of the client.
	req := httptest.NewRequest("GET", "/api/v1/activities/"+id, nil)
	req.RemoteAddr = "[fe80::1%eth0]:4242"
	c, _ := ginContext(req)
	if got := clientIP(c, ta.cfg.Current().Cfg); got != netip.MustParseAddr("fe80::1") {
		t.Fatalf("client IP of a zoned address: %v", got)
	}
}

// Issue 9, defect 11: re-posting an identical activity without opensAt is the same
// definition (200), not a conflict; and a database failure on creation is a 503 with
// Retry-After after which the same request succeeds.
func TestAPIRepostWithoutOpensAt(t *testing.T) {
	testsvc.MySQL(t)
	host := strings.SplitN(strings.SplitN(testsvc.MySQLDSN, "tcp(", 2)[1], ")", 2)[0]
	p, err := faultproxy.New("127.0.0.1:0", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	opts := realOptions(t)
	opts.MySQLDSN = strings.Replace(testsvc.MySQLDSN, host, p.Addr(), 1)
	ta := startApp(t, opts, testConfig)

	id := uniq(t, "noopen")
	body := fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":2}`, id)
	if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
		t.Fatalf("create: %d %v", a.status, a.body)
	}
	time.Sleep(5 * time.Millisecond)
	if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusOK {
		t.Fatalf("identical re-post without opensAt: %d %v, want 200", a.status, a.body)
	}

	id2 := uniq(t, "nodb")
	body2 := fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":2}`, id2)
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	a := ta.admin(t, "POST", "/admin/v1/activities", body2)
	must503(t, "create with MySQL down", a, admission.CodeUnavailable)
	if err := p.Enable(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, func() bool {
		a = ta.admin(t, "POST", "/admin/v1/activities", body2)
		if a.status != http.StatusOK && a.status != http.StatusCreated && a.status != http.StatusServiceUnavailable {
			t.Fatalf("retry after MySQL is back: %d %v", a.status, a.body)
		}
		return a.status == http.StatusOK || a.status == http.StatusCreated
	}, "create accepted after MySQL is back (last %v)", testwait.Lazy(func() string { return fmt.Sprint(a.status, a.body) }))
}

// Issue 9, defect 8: a replayed Idempotency-Key on a requireToken activity returns the
// reservation although its one-time token is spent.
func TestAPIReplayOnTokenActivity(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "tokreplay")
	body := fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":1,"requireToken":true,"opensAt":%q}`,
		id, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano))
	if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
		t.Fatalf("create: %d %v", a.status, a.body)
	}
	user := map[string]string{"X-User-Id": "tok-user"}
	tok := ta.do(t, "POST", "/api/v1/activities/"+id+"/tokens", user, "")
	if tok.status != http.StatusOK {
		t.Fatalf("token: %d %v", tok.status, tok.body)
	}
	h := map[string]string{"X-User-Id": "tok-user", "Idempotency-Key": "tk-1"}
	rb := fmt.Sprintf(`{"token":%q}`, tok.body["token"])
	first := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", h, rb)
	if first.status != http.StatusAccepted {
		t.Fatalf("first: %d %v", first.status, first.body)
	}
	replay := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", h, rb)
	if replay.status != http.StatusOK || replay.body["reservationId"] != first.body["reservationId"] {
		t.Fatalf("replay with the spent token: %d %v, want 200 %v", replay.status, replay.body, first.body["reservationId"])
	}
	// Without a valid token a new key is still refused.
	h["Idempotency-Key"] = "tk-2"
	if a := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", h, rb); a.status != http.StatusForbidden || a.body["code"] != admission.CodeTokenRequired {
		t.Fatalf("spent token, new key: %d %v", a.status, a.body)
	}
}

// A grab token is used by a reservation that takes stock: one the reservation script refuses
// (here the buyer's rate limit, 429 with Retry-After) is given back, so the retry after the
// Retry-After reserves with it. It was spent by the refusal: the retry was answered 403
// TOKEN_REQUIRED, and the buyer had to take a new token (counted against tokensPerUser).
func TestAGrabTokenRefusedByTheScriptIsGivenBack(t *testing.T) {
	cfg := strings.Replace(testConfig, "user:     {rate: 1000, burst: 1000}", "user:     {rate: 1, burst: 1}", 1)
	if cfg == testConfig {
		t.Fatal("the test configuration has no user bucket to narrow")
	}
	ta := startApp(t, realOptions(t), cfg)
	id := uniq(t, "tokback")
	body := fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":2,"shards":1,"requireToken":true,"opensAt":%q}`,
		id, time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano))
	if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
		t.Fatalf("create: %d %v", a.status, a.body)
	}
	user := map[string]string{"X-User-Id": "tok-user"}
	token := func() string {
		t.Helper()
		a := ta.do(t, "POST", "/api/v1/activities/"+id+"/tokens", user, "")
		if a.status != http.StatusOK {
			t.Fatalf("token: %d %v", a.status, a.body)
		}
		return fmt.Sprintf(`{"token":%q}`, a.body["token"])
	}
	reserve := func(rb string) answer {
		return ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", user, rb)
	}
	if a := reserve(token()); a.status != http.StatusAccepted {
		t.Fatalf("first reservation: %d %v", a.status, a.body)
	}
	second := token()
	refused := reserve(second) // the user's bucket (1 a second) is empty
	if refused.status != http.StatusTooManyRequests || refused.body["code"] != "RATE_LIMITED" {
		t.Fatalf("the second reservation at once: %d %v, want 429 RATE_LIMITED", refused.status, refused.body)
	}
	wait, _ := refused.body["retryAfterSeconds"].(float64)
	time.Sleep(time.Duration(wait*1000+200) * time.Millisecond)
	if a := reserve(second); a.status != http.StatusAccepted {
		t.Fatalf("the retry with the same token after the Retry-After: %d %v, want 202", a.status, a.body)
	}
	// and it is used now
	if a := reserve(second); a.status != http.StatusForbidden || a.body["code"] != admission.CodeTokenRequired {
		t.Fatalf("the token again after its reservation: %d %v, want 403 TOKEN_REQUIRED", a.status, a.body)
	}
}

// Issue 10: a replay answers the reservation's current status; after sell-out the key that
// made a reservation still finds it.
func TestAPIReplayAnswersCurrentStatus(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "replaystatus")
	ta.createActivity(t, id, 2, 1, 1, time.Now().Add(-time.Second))
	first := ta.reserve(t, id, "rs-user", "rs-key")
	if first.status != http.StatusAccepted {
		t.Fatalf("reserve: %d %v", first.status, first.body)
	}
	rid := first.body["reservationId"].(string)
	waitStatus(t, ta, "rs-user", rid, "CONFIRMED")
	if r := ta.reserve(t, id, "rs-user", "rs-key"); r.status != http.StatusOK || r.body["reservationId"] != rid || r.body["status"] != "CONFIRMED" {
		t.Fatalf("replay of a confirmed reservation: %d %v, want 200 %s CONFIRMED", r.status, r.body, rid)
	}
	if r := ta.reserve(t, id, "rs-last", ""); r.status != http.StatusAccepted {
		t.Fatalf("last unit: %d %v", r.status, r.body)
	}
	ta.waitSoldOutKnown(t, id, "rs-other", 3*time.Second)
	replay := ta.reserve(t, id, "rs-user", "rs-key")
	if replay.status != http.StatusOK || replay.body["reservationId"] != rid || replay.body["status"] != "CONFIRMED" {
		t.Fatalf("replay of a confirmed reservation after sell-out: %d %v, want 200 %s CONFIRMED", replay.status, replay.body, rid)
	}
	if a := ta.reserve(t, id, "rs-user", "another-key"); a.status != http.StatusGone || a.body["code"] != admission.CodeSoldOut {
		t.Fatalf("a new key after sell-out: %d %v, want 410 SOLD_OUT", a.status, a.body)
	}
}

// Issue 9, defect 13: Redis stalls after the reservation script was sent, so the request
// gives up before the script runs. The answer is 503 OUTCOME_UNKNOWN with a server-generated
// idempotency key, and the retry with that key returns the reservation that was made. A
// Redis that refuses connections is 503 UNAVAILABLE (nothing was sent).
func TestAPIOutcomeUnknownRetryFindsReservation(t *testing.T) {
	testsvc.Redis(t)
	p, err := faultproxy.New("127.0.0.1:0", testsvc.RedisAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	opts := realOptions(t)
	opts.RedisAddr = p.Addr()
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "unknown")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	for i := 0; i < 3; i++ { // lease the limiter's budgets
		if a := ta.reserve(t, id, fmt.Sprintf("warm-%d", i), ""); a.status != http.StatusAccepted {
			t.Fatalf("warm-up: %d %v", a.status, a.body)
		}
	}

	// The stall: every byte reaches Redis 2.5 s late, after the client's 1 s read timeout.
	p.SetLatency(2500 * time.Millisecond)
	a := ta.reserve(t, id, "stalled", "")
	p.SetLatency(0)
	must503(t, "reservation during the stall", a, CodeOutcomeUnknown)
	key, _ := a.body["idempotencyKey"].(string)
	if key == "" {
		t.Fatalf("OUTCOME_UNKNOWN without idempotencyKey: %v", a.body)
	}
	// The script runs once the delayed bytes arrive (2.5 s after they were sent): wait for it
	// in Redis, the shard's counter at 4 (three warm-ups and the stalled one), so the retry
	// comes after it. A retry before would reserve as usual, as API.md says, and prove nothing.
	seq := inventory.Shard(id, 0, 0).Seq()
	testwait.Eventually(t, 10*time.Second, func() bool {
		n, err := ta.rdb.Get(context.Background(), seq).Int()
		return err == nil && n >= 4
	}, "the stalled reservation's script ran (%s at 4)", seq)
	var retry answer
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if retry = ta.reserve(t, id, "stalled", key); retry.status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if retry.status != http.StatusOK {
		t.Fatalf("retry with the returned key: %d %v, want 200 with the reservation made during the stall", retry.status, retry.body)
	}
	rid, _ := retry.body["reservationId"].(string)
	if got := ta.do(t, "GET", "/api/v1/reservations/"+rid, map[string]string{"X-User-Id": "stalled"}, ""); got.status != http.StatusOK {
		t.Fatalf("the replayed reservation %s: %d %v", rid, got.status, got.body)
	}
	if again := ta.reserve(t, id, "stalled", ""); again.status != http.StatusConflict || again.body["reservationId"] != rid {
		t.Fatalf("a new key for the same user: %d %v, want 409 with %s", again.status, again.body, rid)
	}

	// Redis refusing connections: nothing was sent, so UNAVAILABLE.
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	a = ta.reserve(t, id, "refused", "")
	if err := p.Enable(); err != nil {
		t.Fatal(err)
	}
	must503(t, "reservation with Redis refusing connections", a, admission.CodeUnavailable)
}

// Issue 14: the token endpoint goes through kill switch, blacklist and state, and one user
// cannot mint more than tokensPerUser tokens per token lifetime; its IP has its own budget.
func TestAPITokenAdmission(t *testing.T) {
	cfg := strings.Replace(testConfig, "tokensPerUser: 1000", "tokensPerUser: 3", 1)
	ta := startApp(t, realOptions(t), cfg)
	id := uniq(t, "tokadm")
	// Tokens are minted only for an activity that requires them (issue 24).
	createTokenActivity := func(id string, opens time.Time) {
		t.Helper()
		body := fmt.Sprintf(`{"activityId":%q,"stock":10,"perUserLimit":1,"shards":1,"requireToken":true,"opensAt":%q}`,
			id, opens.UTC().Format(time.RFC3339Nano))
		if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
			t.Fatalf("create %s: %d %v", id, a.status, a.body)
		}
	}
	createTokenActivity(id, time.Now().Add(-time.Second))
	post := func(user string) answer {
		return ta.do(t, "POST", "/api/v1/activities/"+id+"/tokens", map[string]string{"X-User-Id": user}, "")
	}
	for i := 0; i < 3; i++ {
		if a := post("minter"); a.status != http.StatusOK {
			t.Fatalf("token %d: %d %v", i, a.status, a.body)
		}
	}
	a := post("minter")
	if a.status != http.StatusTooManyRequests || a.body["code"] != admission.CodeRateLimited || a.header.Get("Retry-After") == "" {
		t.Fatalf("fourth token of one user: %d %v", a.status, a.body)
	}
	if a := post("other"); a.status != http.StatusOK {
		t.Fatalf("another user: %d %v", a.status, a.body)
	}
	if a := ta.do(t, "POST", "/api/v1/activities/nope-"+id+"/tokens", map[string]string{"X-User-Id": "u"}, ""); a.status != http.StatusNotFound {
		t.Fatalf("unknown activity: %d %v", a.status, a.body)
	}

	later := uniq(t, "toklater")
	createTokenActivity(later, time.Now().Add(time.Hour))
	if a := ta.do(t, "POST", "/api/v1/activities/"+later+"/tokens", map[string]string{"X-User-Id": "early"}, ""); a.status != http.StatusTooEarly || a.body["opensAt"] == nil {
		t.Fatalf("token an hour before the opening: %d %v", a.status, a.body)
	}

	ta.setConfig(t, cfg+"blacklist: {users: [bad-minter], ips: []}\n")
	if a := post("bad-minter"); a.status != http.StatusForbidden {
		t.Fatalf("blacklisted user: %d %v", a.status, a.body)
	}
	ta.setConfig(t, cfg+"killSwitch: true\n")
	must503(t, "token under the kill switch", post("k"), admission.CodeDisabled)
	ta.setConfig(t, strings.Replace(cfg, "tokens:   {rate: 1000000, burst: 1000000}", "tokens:   {rate: 0.01, burst: 2}", 1))
	post("ip-1")
	post("ip-2")
	if a := post("ip-3"); a.status != http.StatusTooManyRequests || a.body["dimension"] != "ip" {
		t.Fatalf("third token request of one IP with a burst of 2: %d %v", a.status, a.body)
	}
}

// Issue 14: reads that cost Redis (a reservation, an unknown activity) have a per-IP and
// per-user budget. (The unknown-activity cache stays bounded without clearing itself:
// internal/lru's test.)
func TestAPIReadBudget(t *testing.T) {
	cfg := strings.Replace(testConfig, "reads:    {rate: 1000000, burst: 1000000}", "reads:    {rate: 0.01, burst: 5}", 1)
	ta := startApp(t, realOptions(t), cfg)
	id := uniq(t, "reads")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	r := ta.reserve(t, id, "reader", "")
	rid := r.body["reservationId"].(string)
	var codes []int
	for i := 0; i < 7; i++ {
		codes = append(codes, ta.do(t, "GET", "/api/v1/reservations/"+rid, map[string]string{"X-User-Id": "reader"}, "").status)
	}
	if codes[4] != 200 || codes[5] != 429 || codes[6] != 429 {
		t.Fatalf("reservation reads with a burst of 5: %v", codes)
	}
	// Known activities are served from the snapshot, whatever the budget.
	if a := ta.do(t, "GET", "/api/v1/activities/"+id, nil, ""); a.status != 200 {
		t.Fatalf("known activity after the budget ran out: %d %v", a.status, a.body)
	}
	// Unknown ids take the same per-IP budget (already spent here).
	if a := ta.do(t, "GET", "/api/v1/activities/random-"+id, nil, ""); a.status != 429 {
		t.Fatalf("unknown activity after the budget ran out: %d %v", a.status, a.body)
	}

}

// Issue 14: /readyz answers from a cached probe, at most one PING per 250 ms.
func TestAPIReadyzCachesItsProbe(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	pc := redishook.Counter{Match: isPing}
	ta.rdb.AddHook(&pc)
	start := time.Now()
	const n = 200
	for i := 0; i < n; i++ {
		if a := ta.do(t, "GET", "/readyz", nil, ""); a.status != http.StatusOK {
			t.Fatalf("readyz: %d %v", a.status, a.body)
		}
	}
	elapsed := time.Since(start)
	if max := int64(elapsed/(250*time.Millisecond)) + 2; pc.Load() > max {
		t.Fatalf("%d readyz requests in %v made %d PINGs, want at most %d", n, elapsed, pc.Load(), max)
	}
}

// neverSent separates "the command surely did not run" (UNAVAILABLE) from "it may have"
// (OUTCOME_UNKNOWN).
func TestNeverSent(t *testing.T) {
	testsvc.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: testsvc.RedisAddr})
	defer rdb.Close()
	serverErr := rdb.Do(context.Background(), "NO-SUCH-COMMAND").Err()
	if serverErr == nil {
		t.Fatal("Redis accepted an unknown command")
	}
	tests := []struct {
		name string
		give error
		want bool
	}{
		{"pool timeout", fmt.Errorf("inventory: reserve script: %w", redis.ErrPoolTimeout), true},
		{"client closed", redis.ErrClosed, true},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"refused, wrapped", fmt.Errorf("x: %w", syscall.ECONNREFUSED), true},
		{"busy", fmt.Errorf("x: %w", inventory.ErrBusy), true},
		{"server error reply", fmt.Errorf("x: %w", serverErr), true},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
		{"connection lost", fmt.Errorf("x: %w", io.EOF), false},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"deadline", context.DeadlineExceeded, false},
		{"cancelled", context.Canceled, false},
	}
	for _, tt := range tests {
		if got := neverSent(tt.give); got != tt.want {
			t.Errorf("%s: neverSent(%v) = %v, want %v", tt.name, tt.give, got, tt.want)
		}
	}
}
