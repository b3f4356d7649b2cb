//go:build integration

package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

// The waiting-room page cannot be framed by another site (it reserves by itself once
// admitted), and a join's or poll's answer, which may carry a pass, is never stored by a
// cache.
func TestWaitingRoomHeaders(t *testing.T) {
	id := uniq(t, "wr-hdr")
	ta := startApp(t, Options{}, roomConfig(id, "{enabled: true, rate: 50, heartbeat: 3s}"))
	ta.createActivity(t, id, 5, 1, 1, time.Now().Add(-time.Second))
	page, err := http.Get(ta.base + "/waiting-room?activity=" + id)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != http.StatusOK || page.Header.Get("X-Frame-Options") != "DENY" ||
		!strings.Contains(page.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("page: %d X-Frame-Options %q CSP %q", page.StatusCode, page.Header.Get("X-Frame-Options"), page.Header.Get("Content-Security-Policy"))
	}
	j := ta.join(t, id, "u1")
	if j.status != http.StatusCreated || j.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("join: %d Cache-Control %q", j.status, j.header.Get("Cache-Control"))
	}
	ticket := j.body["ticket"].(string)
	var p answer
	testwait.Eventually(t, 10*time.Second, func() bool {
		p = ta.poll(t, id, "u1", ticket)
		return p.status == http.StatusOK && p.body["pass"] != nil
	}, "u1 admitted")
	if p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the poll that carries the pass: Cache-Control %q, want no-store", p.header.Get("Cache-Control"))
	}
}
