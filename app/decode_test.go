package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/keyspace"
)

func TestDecodeReservationBody(t *testing.T) {
	tests := []struct {
		give       string
		wantStatus int // 0 = accepted
		wantQty    int
	}{
		{give: "", wantQty: 0},
		{give: "  \n", wantQty: 0},
		{give: `{}`, wantQty: 0},
		{give: `{"quantity":2}`, wantQty: 2},
		{give: `{"quantity":2,"token":"t"}`, wantQty: 2},
		{give: `{"quantity":0}`, wantStatus: 400},
		{give: `{"quantity":-1}`, wantStatus: 400},
		{give: `{"quantity":"1"}`, wantStatus: 400},
		{give: `{"quantity":1.5}`, wantStatus: 400},
		{give: `{"quantity":99999999999999999999}`, wantStatus: 400},
		{give: `{"extra":1}`, wantStatus: 400},
		{give: `{"quantity":1}{"quantity":1}`, wantStatus: 400},
		{give: `[1]`, wantStatus: 400},
		{give: `{`, wantStatus: 400},
		{give: `{"token":"` + strings.Repeat("x", 4100) + `"}`, wantStatus: 413},
		{give: `{"token":"` + strings.Repeat("x", 300) + `"}`, wantStatus: 400},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.give))
		b, e := decodeReservationBody(r)
		if tt.wantStatus != 0 {
			if e == nil || e.Status != tt.wantStatus {
				t.Errorf("%.40q: got %v, want status %d", tt.give, e, tt.wantStatus)
			}
			continue
		}
		if e != nil {
			t.Errorf("%.40q: unexpected %v", tt.give, e)
			continue
		}
		if b.Quantity != tt.wantQty {
			t.Errorf("%.40q: quantity %d, want %d", tt.give, b.Quantity, tt.wantQty)
		}
	}
}

// FuzzDecodeReservationBody: any body gets an answer (accepted, 400 or 413), never a panic,
// and an accepted body always has a positive quantity or none (0). FuzzReservationBody
// checks the answers against the encoding/json decoder this one replaced.
func FuzzDecodeReservationBody(f *testing.F) {
	for _, s := range []string{"", `{"quantity":1}`, `{"token":"abc"}`, `{`, `{"quantity":-5}`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		b, e := decodeReservationBody(r)
		if e != nil {
			if e.Status != 400 && e.Status != 413 {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if b.Quantity < 0 {
			t.Fatalf("accepted quantity %d", b.Quantity)
		}
		if len(body) > maxBodyBytes {
			t.Fatalf("accepted a body of %d bytes", len(body))
		}
	})
}

func FuzzParseActivity(f *testing.F) {
	f.Add(`{"activityId":"a","stock":1,"perUserLimit":1}`)
	f.Add(`{"activityId":"a","stock":1,"perUserLimit":1,"opensAt":"2026-01-01T00:00:00Z","closesAt":"2025-01-01T00:00:00Z"}`)
	f.Fuzz(func(t *testing.T, body string) {
		a, e := parseActivity([]byte(body), fixedNow)
		if e != nil {
			if e.Status != 400 {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if a.Stock < 1 || a.PerUserLimit < 1 || a.Shards < 1 || a.Shards > 1024 || !keyspace.ValidName(a.ID) {
			t.Fatalf("accepted invalid activity %+v", a)
		}
		if !a.ClosesAt.IsZero() && !a.ClosesAt.After(a.OpensAt) {
			t.Fatalf("accepted closesAt before opensAt: %+v", a)
		}
	})
}

func TestClientIP(t *testing.T) {
	cfg, err := config.Decode([]byte("trustedProxies: [10.0.0.0/8]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		remote, xff, want string
	}{
		{"192.0.2.1:5000", "", "192.0.2.1"},
		{"192.0.2.1:5000", "198.51.100.7", "192.0.2.1"},                // untrusted peer: header ignored
		{"10.1.2.3:5000", "198.51.100.7", "198.51.100.7"},              // trusted proxy
		{"10.1.2.3:5000", "203.0.113.9, 198.51.100.7", "198.51.100.7"}, // rightmost untrusted hop
		{"10.1.2.3:5000", "198.51.100.7, 10.9.9.9", "198.51.100.7"},    // chain of trusted proxies
		{"10.1.2.3:5000", "garbage", "10.1.2.3"},
		{"[::ffff:192.0.2.1]:80", "", "192.0.2.1"},
		{"10.1.2.3:5000", "203.0.113.9\n198.51.100.7, 10.9.9.9", "198.51.100.7"}, // lines read last first
		{"10.1.2.3:5000", "203.0.113.9, 10.0.0.1\n10.9.9.9", "203.0.113.9"},
		{"10.1.2.3:5000", "203.0.113.9,, 10.9.9.9", "10.9.9.9"}, // an empty hop ends the chain
		{"10.1.2.3:5000", "[fe80::1%eth0], 10.9.9.9", "10.9.9.9"},
		// At most maxForwardedHops (16) are read from the right: the 16th stands for the client.
		{"10.1.2.3:5000", "198.51.100.7" + hopsFrom(1, 15), "198.51.100.7"},
		{"10.1.2.3:5000", "198.51.100.7" + hopsFrom(1, 16), "10.0.0.16"},
		{"10.1.2.3:5000", "198.51.100.7" + hopsFrom(1, 1200), "10.0.0.16"},
		{"10.1.2.3:5000", "198.51.100.7" + hopsFrom(16, 16) + "\n" + hopsFrom(1, 15)[2:], "10.0.0.16"},
		{"10.1.2.3:5000", "198.51.100.7\n" + hopsFrom(1, 15)[2:], "198.51.100.7"},
	}
	for _, tt := range tests {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest("GET", "/", nil)
		c.Request.RemoteAddr = tt.remote
		for _, line := range strings.Split(tt.xff, "\n") {
			if line != "" {
				c.Request.Header.Add("X-Forwarded-For", line)
			}
		}
		if got := clientIP(c, cfg).String(); got != tt.want {
			t.Errorf("remote %s xff %q: got %s, want %s", tt.remote, tt.xff, got, tt.want)
		}
	}
}

// hopsFrom is ", 10.0.x.y" for the hops from..to, the last one nearest the connection.
func hopsFrom(from, to int) string {
	var b strings.Builder
	for i := to; i >= from; i-- {
		fmt.Fprintf(&b, ", 10.0.%d.%d", i/256, i%256)
	}
	return b.String()
}

func TestRetryAfterAlwaysOnThrottle(t *testing.T) {
	for _, e := range []*apiError{
		newError(http.StatusTooManyRequests, admission.CodeRateLimited, "x"),
		newError(http.StatusServiceUnavailable, admission.CodeUnavailable, "x").after(1500 * time.Millisecond),
	} {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		writeError(c, e)
		if w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "retryAfterSeconds") {
			t.Errorf("%d without Retry-After: %v %s", e.Status, w.Header(), w.Body.String())
		}
	}
}

var fixedNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
