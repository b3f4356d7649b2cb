//go:build integration

package app

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// TestPublicReadyzNamesNoInternalError: issue 24 item 5, the storefront's /readyz showed the
// order writer's raw error ("dial tcp 127.0.0.1:45449: connect: connection refused"). With
// the writer's MariaDB unreachable, the admin port's /readyz names the error and the
// address; the storefront's says only that the writer is failing.
func TestPublicReadyzNamesNoInternalError(t *testing.T) {
	opts := realOptions(t)
	p, err := faultproxy.New("127.0.0.1:0", mysqlHostPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	opts.MySQLDSN = strings.Replace(testsvc.MySQLDSN, "("+mysqlHostPort()+")", "("+p.Addr()+")", 1)
	ta := startApp(t, opts, testConfig)
	id := uniq(t, "rdz")
	ta.createActivity(t, id, 10, 1, 1, time.Now().Add(-time.Second))
	if err := p.Disable(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Enable() })
	if a := ta.reserve(t, id, "alice", "k1"); a.status != http.StatusAccepted {
		t.Fatalf("reservation with MariaDB down: %d %v", a.status, a.body)
	}
	get := func(base string) (int, string) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var admin string
	testwait.Eventually(t, 60*time.Second, func() bool {
		_, admin = get(ta.adminBase)
		return strings.Contains(admin, `"writer"`)
	}, "the admin /readyz reports the failing writer (last %v)", testwait.Lazy(func() string { return admin }))
	if !strings.Contains(admin, p.Addr()) {
		t.Errorf("the admin /readyz does not name the unreachable address %s: %s", p.Addr(), admin)
	}
	status, public := get(ta.base)
	if status != http.StatusOK || !strings.Contains(public, `"writer":"failing"`) {
		t.Errorf("storefront /readyz with the writer failing: %d %s, want 200 naming the writer failing", status, public)
	}
	for _, leak := range []string{p.Addr(), "tcp", "127.0.0.1", "refused", "order:"} {
		if strings.Contains(public, leak) {
			t.Errorf("storefront /readyz names %q: %s", leak, public)
		}
	}
	t.Logf("admin: %s; storefront: %s", admin, public)
}

// TestLimitsAtTheBoundsServeOnRedis: the bounds of config (issue 24 item 4) are ones the
// scripts of a real Redis count and expire: at each, reservations are 202 or 429 and the
// limiter never degrades (limits.ip at rate 1e-300 made the script fail on Redis with "ERR
// value is not an integer or out of range", and degraded the limiter).
func TestLimitsAtTheBoundsServeOnRedis(t *testing.T) { limitsAtTheBounds(t, realOptions(t)) }

// mysqlHostPort is the host:port of testsvc.MySQLDSN's tcp(...).
func mysqlHostPort() string {
	s := testsvc.MySQLDSN
	i, j := strings.Index(s, "tcp("), strings.Index(s, ")/")
	if i < 0 || j < i {
		panic(fmt.Sprintf("no tcp(host:port) in %q", s))
	}
	return s[i+4 : j]
}
