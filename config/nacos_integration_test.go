//go:build integration

package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/faultproxy"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

func TestNacosEditsAndInvalidEdits(t *testing.T) {
	addr := testsvc.Nacos(t)
	id := uniqueDataID(t)
	// A namespace of its own (SECKILL_NACOS_NAMESPACE): the server needs no prior creation.
	ns := fmt.Sprintf("seckill-test-%d", time.Now().UnixNano())
	pub := func(t *testing.T, content string) { api(addr).Publish(t, ns, id, DefaultGroup, content) }
	good := "limits: {user: {rate: 1, burst: 1}}\n"
	pub(t, good)
	snapPath := filepath.Join(t.TempDir(), "snap", "seckill.yaml")
	r := startNacosPair(t, authed(&NacosSource{Addr: addr, DataID: id, Namespace: ns, LocalSnapshotPath: snapPath}))
	waitReady(t, r, 10*time.Second)
	if st := r.Status(); st.Source != SourceNacos || st.Version != versionOf(t, good) {
		t.Fatalf("status %+v", st)
	}
	testwait.Eventually(t, 2*time.Second, func() bool {
		b, _ := os.ReadFile(snapPath)
		return string(b) == good
	}, "snapshot written")

	// A good edit is in force at once (tens of ms on a quiet machine). The bound is 5 s: in
	// make test this package runs beside the Redis and MySQL packages on 2 cores with the Nacos
	// JVM, and a push once took over 1 s there; the time is logged.
	good2 := "limits: {user: {rate: 2, burst: 2}}\n"
	start := time.Now()
	pub(t, good2)
	testwait.Eventually(t, 5*time.Second, func() bool { return r.Status().Version == versionOf(t, good2) }, "edit applied")
	t.Logf("edit applied in %v", time.Since(start))
	kept := r.Current()

	tests := []struct {
		name string
		give string
		want string
	}{
		{"broken yaml", "limits: {user: {rate: 1", "did not find expected"},
		{"unknown key", "limits: {usr: {rate: 1, burst: 1}}", "field usr not found"},
		{"negative rate", "limits: {user: {rate: -1, burst: 1}}", "limits.user.rate: -1 must be >= 0"},
		{"ratio out of range", "activities: {flash-1001: {canaryRatio: 1.5}}", "canaryRatio: 1.5 not in [0,1]"},
		{"shards 0", "activities: {flash-1001: {shards: 0}}", "activities.flash-1001.shards: 0 not in 1..1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub(t, tt.give)
			testwait.Eventually(t, 2*time.Second, func() bool { return strings.Contains(r.Status().LastError, tt.want) }, "refusal")
			if r.Current() != kept || r.Status().Version != versionOf(t, good2) {
				t.Fatalf("invalid edit changed the snapshot: %+v", r.Status())
			}
			if b, _ := os.ReadFile(snapPath); string(b) != good2 {
				t.Fatalf("invalid edit reached the local snapshot: %q", b)
			}
		})
	}
	// Back to a good one.
	good3 := "limits: {user: {rate: 3, burst: 3}}\n"
	pub(t, good3)
	testwait.Eventually(t, time.Second, func() bool { return r.Current().userRate == 3 }, "good edit after refusals")
}

// A data id missing in Nacos, with no local snapshot: not ready (fails closed), never the
// defaults; the first publish makes it ready.
func TestNacosMissingContentFailsClosedOnServer(t *testing.T) {
	addr := testsvc.Nacos(t)
	id := uniqueDataID(t)
	r := startNacosPair(t, authed(&NacosSource{Addr: addr, DataID: id}))
	testwait.Eventually(t, 10*time.Second, func() bool { return r.Status().LastError != "" }, "refusal of the missing content")
	if st := r.Status(); st.Ready || r.Current() != nil {
		t.Fatalf("status %+v, want not ready", st)
	}
	doc := "killSwitch: true\n"
	publish(t, addr, id, doc)
	// Just after start the library may not have subscribed yet (its listen loop starts
	// within 5 s); the poll bounds that to PollEvery.
	testwait.Eventually(t, DefaultPollEvery+time.Second, func() bool {
		c := r.Current()
		return c != nil && c.cfg.KillSwitch
	}, "first publish")

}

// Three instances (child processes, each with its own client, as in production) watch one
// data id; 50 edits are published through the Open API and the time until each instance
// applied each edit is measured.
func TestNacosPropagationThreeInstances(t *testing.T) {
	// Not in parallel with TestNacosRestart: a private server's boot (a JVM's class loading
	// and compiling on both cores) beside this measurement stalled the shared server's push
	// past 1 s, the same edit late on all three instances (a fresh machine's .ci/run,
	// 2026-12-04: edit 3 of 50 at 1.05-1.13 s, p99 1.13 s, where p50 was 152 ms and p90
	// 353 ms). The bound stays the contract's 1 s (p99). This runs in the package's
	// sequential part, before TestNacosRestart launches its server.
	addr := testsvc.Nacos(t)
	id := uniqueDataID(t)
	doc := func(i int) string { return fmt.Sprintf("limits: {user: {rate: %d, burst: %d}}\n", i, i) }
	publish(t, addr, id, doc(1))

	const instances, edits = 3, 50
	events := make(chan childEvent, 1024)
	for c := range instances {
		startChild(t, c, addr, id, events)
	}
	// wait until every instance holds want; return when each applied it.
	wait := func(want string, d time.Duration) ([instances]time.Time, bool) {
		var at [instances]time.Time
		seen := 0
		deadline := time.After(d)
		for seen < instances {
			select {
			case ev := <-events:
				if ev.version == want && at[ev.child].IsZero() {
					at[ev.child] = ev.at
					seen++
				}
			case <-deadline:
				return at, false
			}
		}
		return at, true
	}
	if _, ok := wait(versionOf(t, doc(1)), 20*time.Second); !ok {
		t.Fatal("instances did not load the initial config")
	}

	// An edit is made when Nacos acknowledges it (the console's save returns): propagation
	// is measured from there. The publish's own time (the server storing the edit) is
	// logged for the slow edits, and bounded apart.
	var lat []time.Duration
	slow, slowSaves := 0, 0
	for i := 2; i < 2+edits; i++ {
		want := versionOf(t, doc(i))
		begin := time.Now()
		publish(t, addr, id, doc(i))
		start := time.Now()
		at, ok := wait(want, 10*time.Second)
		if !ok {
			t.Fatalf("edit %d not applied by every instance within 10 s: %v", i, at)
		}
		var ds []time.Duration
		for _, a := range at {
			d := a.Sub(start)
			lat = append(lat, d)
			ds = append(ds, d)
			if d >= time.Second {
				slow++
			}
		}
		if save := start.Sub(begin); save >= time.Second || slices.Max(ds) >= time.Second {
			t.Logf("edit %d: saved in %v, applied after %v", i, save, ds)
			if save >= time.Second {
				slowSaves++
			}
		}
		// Operators edit by hand, not several times a second: each edit costs every client
		// two queries (the library's own and ours) of the library's 5 per second per key.
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1)+0.5)] }
	t.Logf("propagation over %d edits x %d instances: p50 %v, p90 %v, p99 %v, max %v",
		edits, instances, p(0.50), p(0.90), p(0.99), lat[len(lat)-1])
	if p(0.99) >= time.Second {
		t.Errorf("p99 %v >= 1s (%d of %d applications slower than 1 s)", p(0.99), slow, len(lat))
	}
	if slowSaves > edits/10 {
		t.Errorf("%d of %d edits took Nacos 1 s or more to save", slowSaves, edits)
	}
}

func TestNacosRegistryHealthy(t *testing.T) {
	addr := testsvc.Nacos(t)
	service := fmt.Sprintf("seckill-test-%d", time.Now().UnixNano())
	regs := make([]*NacosRegistry, 2)
	for i := range regs {
		regs[i] = &NacosRegistry{Addr: addr, ServiceName: service, IP: "127.0.0.1", Port: uint64(28080 + i),
			InstanceID: fmt.Sprintf("i%d", i), CacheDir: t.TempDir(), RefreshEvery: 500 * time.Millisecond,
			Username: testsvc.NacosUsername, Password: testsvc.NacosPassword}
		if got := regs[i].Healthy(); got != 1 {
			t.Fatalf("Healthy before any count = %d, want 1", got)
		}
		errc := make(chan error, 1)
		go func(r *NacosRegistry) { errc <- r.Run(context.Background()) }(regs[i])
		t.Cleanup(func() {
			regs[i].Close()
			if err := <-errc; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	for i, r := range regs {
		testwait.Eventually(t, 10*time.Second, func() bool { return r.Healthy() == 2 }, "registry %d sees 2", i)
	}
	start := time.Now()
	regs[1].Close()
	testwait.Eventually(t, 10*time.Second, func() bool { return regs[0].Healthy() == 1 }, "registry 0 sees 1")
	t.Logf("deregistration seen after %v", time.Since(start))
}

// A server with auth on refuses a wrong password, and no credentials at all, with an error
// at start naming the cause; the right ones pass, and an unreachable server is no error (the
// service may start from its snapshot and keeps trying).
func TestNacosLoginAtStart(t *testing.T) {
	addr := testsvc.Nacos(t)
	ctx := context.Background()
	if err := CheckNacosLogin(ctx, addr, testsvc.NacosUsername, testsvc.NacosPassword, ""); err != nil {
		t.Fatalf("right password: %v", err)
	}
	for _, tt := range []struct{ name, user, pass, want string }{
		{"wrong password", testsvc.NacosUsername, "not-" + testsvc.NacosPassword, "wrong SECKILL_NACOS_USERNAME or SECKILL_NACOS_PASSWORD"},
		{"unknown user", "nobody-" + strconv.FormatInt(time.Now().UnixNano(), 36), "x", "wrong SECKILL_NACOS_USERNAME or SECKILL_NACOS_PASSWORD"},
		{"no credentials", "", "", "requires a login: set SECKILL_NACOS_USERNAME and SECKILL_NACOS_PASSWORD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNacosLogin(ctx, addr, tt.user, tt.pass, "")
			if !errors.Is(err, ErrNacosLogin) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckNacosLogin = %v, want ErrNacosLogin with %q", err, tt.want)
			}
			// NacosSource.Run fails at once with the same error instead of never getting ready.
			src := &NacosSource{Addr: addr, DataID: uniqueDataID(t), Username: tt.user, Password: tt.pass, CacheDir: t.TempDir()}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			start := time.Now()
			err = src.Run(rctx, func(p Payload) { t.Errorf("offered %+v", p) })
			if !errors.Is(err, ErrNacosLogin) {
				t.Fatalf("Run = %v after %v, want ErrNacosLogin", err, time.Since(start))
			}
			t.Logf("start-up error after %v: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
	if err := CheckNacosLogin(ctx, "127.0.0.1:1", testsvc.NacosUsername, "whatever", ""); err != nil {
		t.Fatalf("unreachable server: %v, want nil", err)
	}
}

// nacosProxies puts a fault proxy before each of the Nacos ports at addr (HTTP and gRPC at
// HTTP+1000, the pair the SDK derives from one address) and returns the proxies' HTTP address.
func nacosProxies(t *testing.T, addr string) (string, *faultproxy.Proxy) {
	t.Helper()
	host, port, err := testsvc.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+1000 > 65535 {
			continue
		}
		httpP, err := faultproxy.New("127.0.0.1:"+strconv.Itoa(p), addr)
		if err != nil {
			continue
		}
		grpcP, err := faultproxy.New("127.0.0.1:"+strconv.Itoa(p+1000), host+":"+strconv.FormatUint(port+1000, 10))
		if err != nil {
			httpP.Close()
			continue
		}
		t.Cleanup(func() { grpcP.Close(); httpP.Close() })
		return httpP.Addr(), grpcP
	}
	t.Fatal("no free pair of ports p, p+1000 on 127.0.0.1")
	return "", nil
}

// The SDK's connection to Nacos drops and comes back (a restarted server, a proxy's idle cut):
// the source keeps following edits over the new connection. Under -race this is also the check
// of the SDK's reconnect, which replaced its current connection while its event goroutine read
// it (third_party/nacos-sdk-go/SECKILL_PATCH.md): the race detector fails the test then.
func TestNacosEditsFollowedAcrossDroppedConnections(t *testing.T) {
	addr := testsvc.Nacos(t)
	via, grpc := nacosProxies(t, addr)
	id := uniqueDataID(t)
	ns := fmt.Sprintf("seckill-test-%d", time.Now().UnixNano())
	pub := func(content string) { api(addr).Publish(t, ns, id, DefaultGroup, content) }
	pub("limits: {user: {rate: 1, burst: 1}}\n")
	r := startNacosPair(t, authed(&NacosSource{Addr: via, DataID: id, Namespace: ns}))
	waitReady(t, r, 10*time.Second)
	for rate := 2; rate <= 4; rate++ {
		testwait.Eventually(t, 30*time.Second, func() bool { return grpc.Conns() > 0 }, "the SDK connected over gRPC")
		if err := grpc.Disable(); err != nil { // closes the SDK's connections
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		// Enable fails only if an outgoing connection took the port meanwhile: try again.
		testwait.Eventually(t, 10*time.Second, func() bool { return grpc.Enable() == nil }, "the gRPC proxy listening again")
		pub(fmt.Sprintf("limits: {user: {rate: %d, burst: 1}}\n", rate))
		testwait.Eventually(t, 30*time.Second, func() bool { return r.Current().userRate == float64(rate) },
			"edit to rate %d applied after the connection dropped", rate)
	}
}
