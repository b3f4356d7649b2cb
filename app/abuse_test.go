package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/testwait"
)

// withLimits is testConfig with the lines of the given limits replaced.
func withLimits(repl map[string]string) string {
	var b strings.Builder
	for _, line := range strings.Split(testConfig, "\n") {
		for k, v := range repl {
			if strings.HasPrefix(strings.TrimSpace(line), k+":") {
				line = "  " + k + ": " + v
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestLimitsAtTheBoundsServe: a configuration with limits at the bounds config accepts
// (MinRate, MaxRate, MaxBurst, MaxRefill) is served by the scripts: every reservation is 202
// or 429, never the 503 of a script that cannot count or expire its bucket. The embedded
// Redis here; TestLimitsAtTheBoundsServeOnRedis runs the same on the real one.
func TestLimitsAtTheBoundsServe(t *testing.T) { limitsAtTheBounds(t, Options{}) }

func limitsAtTheBounds(t *testing.T, opts Options) {
	for _, tt := range []struct {
		name string
		repl map[string]string
	}{
		{"max", map[string]string{"global": "{rate: 1.0e9, burst: 1000000000}", "user": "{rate: 1.0e9, burst: 1000000000}",
			"ip": "{rate: 1.0e9, burst: 1000000000}", "activity": "{rate: 1.0e9, burst: 1000000000}"}},
		{"min", map[string]string{"ip": "{rate: 0.001, burst: 1}", "user": "{rate: 0.001, burst: 1}"}},
		{"refill", map[string]string{"global": "{rate: 0.001, burst: 604}", "user": "{rate: 0.01, burst: 6048}",
			"ip": "{rate: 0.01, burst: 6048}", "userWindow": "{window: 168h, max: 1000000000}"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ta := startApp(t, opts, withLimits(tt.repl))
			id := uniq(t, "bounds")
			ta.createActivity(t, id, 1000, 1000, 2, time.Now().Add(-time.Second))
			var got []int
			for i := range 8 {
				a := ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations",
					map[string]string{"X-User-Id": fmt.Sprintf("u-%d", i%2)}, "")
				if a.status != http.StatusAccepted && a.status != http.StatusTooManyRequests {
					t.Fatalf("reservation %d at the bounds: %d %v, want 202 or 429", i, a.status, a.body)
				}
				// A limiter script that fails (ERR value is not an integer) degrades the
				// limiter at once, and its local limits would still answer 202.
				if ta.lim.Degraded() {
					t.Fatalf("reservation %d at the bounds degraded the limiter: a script failed", i)
				}
				got = append(got, a.status)
			}
			if got[0] != http.StatusAccepted {
				t.Fatalf("first reservation %v, want 200", got)
			}
		})
	}
}

// TestRevertedLimitIsNotRemembered: a limit tightened by mistake (rate 0.001: Retry-After
// 1000 s) and reverted must stop refusing once the revert is applied, for the user and for
// the address; before, the local memory of refusals kept answering 429 for 1000 s.
func TestRevertedLimitIsNotRemembered(t *testing.T) {
	for _, dim := range []string{"user", "ip"} {
		t.Run(dim, func(t *testing.T) {
			ta := startApp(t, Options{}, testConfig)
			ta.createActivity(t, "revert-1", 1000, 1000, 2, time.Now().Add(-time.Second))
			ta.setConfig(t, withLimits(map[string]string{dim: "{rate: 0.001, burst: 1}"}))
			reserve := func() answer {
				return ta.do(t, "POST", "/api/v1/activities/revert-1/reservations", map[string]string{"X-User-Id": "u-1"}, "")
			}
			if a := reserve(); a.status != http.StatusAccepted {
				t.Fatalf("first: %d %v", a.status, a.body)
			}
			a := reserve()
			if a.status != http.StatusTooManyRequests || a.body["dimension"] != dim {
				t.Fatalf("second under the tight limit: %d %v, want 429 of %s", a.status, a.body, dim)
			}
			ta.setConfig(t, testConfig)
			start := time.Now()
			testwait.Eventually(t, 2*time.Second, func() bool { return reserve().status == http.StatusAccepted },
				"a reservation admitted once the revert is applied")
			if took := time.Since(start); took > time.Second {
				t.Fatalf("the revert took %v to reach the admission, want within 1 s", took)
			}
		})
	}
}

// TestSmallAbuses: the smaller findings of round two, each answered as docs/API.md says.
func TestSmallAbuses(t *testing.T) {
	ta := startApp(t, Options{}, testConfig+"trustedProxies: [127.0.0.1/32]\n")
	ta.createActivity(t, "small-1", 100, 5, 1, time.Now().Add(-time.Second))
	ta.setConfig(t, testConfig+"trustedProxies: [127.0.0.1/32]\nadmin: {allowFrom: [10.9.9.9/32]}\n")
	send := func(method, path string, h http.Header, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	res := ta.base + "/api/v1/activities/small-1/reservations"
	if got := send("POST", res, http.Header{"X-User-Id": {"mallory", "alice"}}, ""); got != http.StatusUnauthorized {
		t.Errorf("two X-User-Id headers: %d, want 401", got)
	}
	for _, u := range []string{"alice\u00a0", "alice\u3000", "\u2003alice"} {
		if got := send("POST", res, http.Header{"X-User-Id": {u}}, ""); got != http.StatusUnauthorized {
			t.Errorf("X-User-Id %q: %d, want 401", u, got)
		}
	}
	for _, body := range []string{`{"quantity":2,"quantity":1}`, `{"QUANTITY":2}`, `{"Token":"x"}`} {
		if got := send("POST", res, http.Header{"X-User-Id": {"bob"}}, body); got != http.StatusBadRequest {
			t.Errorf("body %s: %d, want 400", body, got)
		}
	}
	if got := send("POST", res, http.Header{"X-User-Id": {"bob"}}, `{"quantity":1}`); got != http.StatusAccepted {
		t.Errorf("a plain body: %d, want 202", got)
	}
	if got := send("POST", ta.base+"/api/v1/activities/small-1/tokens", http.Header{"X-User-Id": {"bob"}}, ""); got != http.StatusBadRequest {
		t.Errorf("a grab token for an activity that requires none: %d, want 400", got)
	}
	big := http.Header{"X-User-Id": {"bob"}, "X-Pad": {strings.Repeat("p", 17<<10)}}
	if got := send("GET", ta.base+"/api/v1/activities/small-1", big, ""); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("17 KB of headers: %d, want 431", got)
	}
	fits := http.Header{"X-User-Id": {"bob"}, "X-Pad": {strings.Repeat("p", 15<<10)}}
	if got := send("GET", ta.base+"/api/v1/activities/small-1", fits, ""); got != http.StatusOK {
		t.Errorf("15 KB of headers: %d, want 200", got)
	}
	adm := http.Header{"Authorization": {"Bearer " + testAdminToken}, "X-Forwarded-For": {"10.9.9.9"}}
	if got := send("GET", ta.adminBase+"/admin/v1/config", adm, ""); got != http.StatusForbidden {
		t.Errorf("admin from 127.0.0.1 claiming X-Forwarded-For 10.9.9.9: %d, want 403", got)
	}
}

// TestJWTCritAndSpacesRefused: a JWT whose header marks an extension critical (RFC 7515
// section 4.1.11: none is understood here) and one whose sub ends in a Unicode space are
// refused, as the same id in X-User-Id is.
func TestJWTCritAndSpacesRefused(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	cfg, err := config.Decode([]byte("auth: {mode: jwt}"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := authKeys{hsSecret: secret}.buildSnapshot(cfg, config.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(sub string, crit bool) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: sub,
			ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute))})
		if crit {
			tok.Header["crit"] = []string{"exp-unknown"}
			tok.Header["exp-unknown"] = true
		}
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, ok := snap.auth.verify(sign("alice", false)); !ok {
		t.Fatal("a plain token is refused")
	}
	// Two Authorization headers (a gateway that appends its own) are no identity, whichever
	// comes first; one is the token's subject.
	for _, hs := range [][]string{{"Bearer " + sign("alice", false)},
		{"Bearer " + sign("mallory", false), "Bearer " + sign("alice", false)}} {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("POST", "/", nil)
		c.Request.Header["Authorization"] = hs
		user, e := identity(c, snap)
		if len(hs) == 1 && (e != nil || user != "alice") {
			t.Fatalf("one Authorization header: %q %v", user, e)
		}
		if len(hs) == 2 && (e == nil || e.Status != http.StatusUnauthorized) {
			t.Fatalf("two Authorization headers: user %q, error %v, want 401", user, e)
		}
	}
	for _, tt := range []struct {
		sub  string
		crit bool
	}{{"alice", true}, {"alice\u00a0", false}, {"alice\u3000", false}} {
		if sub, ok := snap.auth.verify(sign(tt.sub, tt.crit)); ok {
			t.Errorf("sub %q crit %v accepted as %q", tt.sub, tt.crit, sub)
		}
	}
}
