package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/seckill/seckill/internal/syncbuf"
	"github.com/seckill/seckill/internal/testwait"
)

// snap is a test snapshot: values a request would read from one Load.
type snap struct {
	cfg       *Config
	userRate  float64
	userBurst int
}

func buildSnap(c *Config, _ Meta) (*snap, error) {
	return &snap{cfg: c, userRate: c.Limits.User.Rate, userBurst: c.Limits.User.Burst}, nil
}

// startReloader runs a Reloader until the test ends.
func startReloader[T any](t *testing.T, build func(*Config, Meta) (*T, error), m *Metrics) *Reloader[T] {
	t.Helper()
	r := NewReloader(build, m, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func versionOf(t *testing.T, doc string) string {
	t.Helper()
	c, err := Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c.Version()
}

func TestReloaderGoodBadGood(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := must(NewMetrics(reg))
	r := startReloader(t, buildSnap, m)

	if r.Current() != nil || r.Status().Ready {
		t.Fatal("ready before any payload")
	}
	good := "limits: {user: {rate: 1, burst: 1}}"
	r.Offer(Payload{Data: []byte(good), Source: SourceNacos, Seq: 1})
	select {
	case <-r.Ready():
	case <-time.After(time.Second):
		t.Fatal("not ready")
	}
	st := r.Status()
	if st.Source != SourceNacos || st.Version != versionOf(t, good) || st.Config == nil || st.AppliedAt.IsZero() {
		t.Fatalf("status = %+v", st)
	}
	if got := testutil.ToFloat64(m.lastSuccessful); got != 1 {
		t.Fatalf("seckill_config_last_reload_successful = %v", got)
	}
	if got := testutil.ToFloat64(m.info.WithLabelValues(SourceNacos, st.Version)); got != 1 {
		t.Fatalf("seckill_config_info = %v", got)
	}
	first := r.Current()

	tests := []struct {
		give string
		want string
	}{
		{"limits: {user: {rate: 1, burst: 1}", "did not find expected"},
		{"limits: {usr: {rate: 1}}", "field usr not found"},
		{"limits: {user: {rate: -2, burst: 1}}", "limits.user.rate: -2 must be >= 0"},
		{"activities: {a: {canaryRatio: 1.5}}", "activities.a.canaryRatio: 1.5 not in [0,1]"},
		{"activities: {a: {shards: 0}}", "activities.a.shards: 0 not in 1..1024"},
	}
	for i, tt := range tests {
		r.Offer(Payload{Data: []byte(tt.give), Source: SourceNacos, Seq: uint64(2 + i)})
		testwait.Eventually(t, time.Second, func() bool {
			return testutil.ToFloat64(m.failures) == float64(i+1)
		}, "failure counted")

		if r.Current() != first {
			t.Fatalf("%q replaced the snapshot", tt.give)
		}
		st := r.Status()
		if !strings.Contains(st.LastError, tt.want) || st.Version != versionOf(t, good) {
			t.Fatalf("status after %q = %+v", tt.give, st)
		}
		if got := testutil.ToFloat64(m.lastSuccessful); got != 0 {
			t.Fatalf("seckill_config_last_reload_successful = %v after a refused payload", got)
		}
	}

	// The same content again is a no-op but the latest payload was good.
	r.Offer(Payload{Data: []byte(good), Source: SourceNacos, Seq: 100})
	testwait.Eventually(t, time.Second, func() bool { return testutil.ToFloat64(m.lastSuccessful) == 1 }, "gauge back to 1")
	if r.Current() != first {
		t.Fatal("same version rebuilt the snapshot")
	}

	good2 := "limits: {user: {rate: 2, burst: 2}}"
	r.Offer(Payload{Data: []byte(good2), Source: SourceNacos, Seq: 101})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().Version == versionOf(t, good2) }, "second good payload")
	if s := r.Current(); s.userRate != 2 || s.userBurst != 2 {
		t.Fatalf("current = %+v", s)
	}
	if got := testutil.ToFloat64(m.lastSuccessTime); got < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("success timestamp = %v", got)
	}
	if n := testutil.CollectAndCount(m.info); n != 1 {
		t.Fatalf("seckill_config_info has %d series, want 1", n)
	}
}

func TestReloaderBuildErrorRefuses(t *testing.T) {
	m := must(NewMetrics(prometheus.NewRegistry()))
	calls := 0
	r := startReloader(t, func(c *Config, _ Meta) (*snap, error) {
		calls++
		if c.KillSwitch {
			return nil, errors.New("cannot build")
		}
		return buildSnap(c, Meta{})
	}, m)
	r.Offer(Payload{Data: []byte("killSwitch: false"), Source: SourceFile, Seq: 1})
	<-r.Ready()
	r.Offer(Payload{Data: []byte("killSwitch: true"), Source: SourceFile, Seq: 2})
	testwait.Eventually(t, time.Second, func() bool { return testutil.ToFloat64(m.failures) == 1 }, "failure")
	if r.Current().cfg.KillSwitch || !strings.Contains(r.Status().LastError, "cannot build") {
		t.Fatalf("status %+v", r.Status())
	}
}

// An empty or whitespace-only payload (a truncated file, a console publish of nothing) is
// refused like any other invalid edit: it must not reset a kill switch to its default.
func TestReloaderRefusesEmptyPayload(t *testing.T) {
	m := must(NewMetrics(nil))
	r := startReloader(t, buildSnap, m)
	r.Offer(Payload{Data: []byte("killSwitch: true"), Source: SourceFile, Seq: 1})
	<-r.Ready()
	for i, give := range []string{"", " \n\t\n", "# nothing but a comment\n"} {
		r.Offer(Payload{Data: []byte(give), Source: SourceFile, Seq: uint64(2 + i)})
		testwait.Eventually(t, time.Second, func() bool { return testutil.ToFloat64(m.failures) == float64(i+1) }, "refusal")
		if !r.Current().cfg.KillSwitch {
			t.Fatalf("payload %q lifted the kill switch", give)
		}
		if st := r.Status(); !strings.Contains(st.LastError, "the document is empty") {
			t.Fatalf("payload %q: status %+v", give, st)
		}
	}
}

// Nothing offered but an empty payload (e.g. the data id missing in Nacos and no local
// snapshot): the reloader stays not ready instead of running on the defaults.
func TestReloaderEmptyFirstPayloadNotReady(t *testing.T) {
	r := startReloader(t, buildSnap, nil)
	r.Offer(Payload{Data: nil, Source: SourceNacos, Seq: 1})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().LastError != "" }, "refusal")
	if st := r.Status(); st.Ready || r.Current() != nil {
		t.Fatalf("ready on an empty document: %+v", st)
	}
}

// The status says when the last error happened and whether a later payload superseded it.
func TestReloaderLastErrorSuperseded(t *testing.T) {
	m := must(NewMetrics(nil))
	r := startReloader(t, buildSnap, m)
	r.Offer(Payload{Data: []byte("killSwitch: false"), Source: SourceFile, Seq: 1})
	<-r.Ready()
	if st := r.Status(); st.LastError != "" || !st.LastErrorAt.IsZero() || st.LastErrorSuperseded {
		t.Fatalf("fresh status %+v", st)
	}
	before := time.Now()
	r.Offer(Payload{Data: []byte("limits: {user: {rate: -1}}"), Source: SourceFile, Seq: 2})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().LastError != "" }, "refusal")
	st := r.Status()
	if st.LastErrorAt.Before(before) || st.LastErrorSuperseded {
		t.Fatalf("after the refusal: %+v", st)
	}
	// The refused edit reverted to the running content: the error is history.
	r.Offer(Payload{Data: []byte("killSwitch: false"), Source: SourceFile, Seq: 3})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().LastErrorSuperseded }, "revert")
	// Refused again, then a new config applied after it.
	r.Offer(Payload{Data: []byte("limits: {user: {rate: -2}}"), Source: SourceFile, Seq: 4})
	testwait.Eventually(t, time.Second, func() bool { return !r.Status().LastErrorSuperseded }, "second refusal")
	r.Offer(Payload{Data: []byte("killSwitch: true"), Source: SourceFile, Seq: 5})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().LastErrorSuperseded }, "applied")
	st = r.Status()
	if !st.AppliedAt.After(st.LastErrorAt) || !strings.Contains(st.LastError, "rate: -2") {
		t.Fatalf("after a later good edit: %+v", st)
	}
}

// A build step that never returns (e.g. a read that blocks on a FIFO) is abandoned after the
// reloader's timeout: a later good edit such as a kill switch is still applied.
func TestReloaderStuckBuildDoesNotBlockLaterEdits(t *testing.T) {
	m := must(NewMetrics(nil))
	release := make(chan struct{})
	defer close(release)
	stuck := make(chan struct{})
	r := NewReloader(func(c *Config, meta Meta) (*snap, error) {
		if c.Limits.User.Rate == 3 {
			close(stuck)
			<-release // stuck until the test ends
		}
		return buildSnap(c, meta)
	}, m, nil)
	r.timeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	r.Offer(Payload{Data: []byte("killSwitch: false"), Source: SourceNacos, Seq: 1})
	<-r.Ready()
	r.Offer(Payload{Data: []byte("limits: {user: {rate: 3, burst: 3}}"), Source: SourceNacos, Seq: 2})
	<-stuck // the stuck build has started
	start := time.Now()
	r.Offer(Payload{Data: []byte("killSwitch: true"), Source: SourceNacos, Seq: 3})
	testwait.Eventually(t, 2*time.Second, func() bool { return r.Current().cfg.KillSwitch }, "kill switch applied behind a stuck build")
	t.Logf("kill switch applied %v after the edit", time.Since(start))
	if st := r.Status(); !strings.Contains(st.LastError, "took longer than 200ms") || testutil.ToFloat64(m.failures) != 1 {
		t.Fatalf("status %+v", st)
	}
}

// A document over MaxDocumentBytes is refused before it is parsed.
func TestDecodeRefusesHugeDocument(t *testing.T) {
	doc := "killSwitch: false\n" + strings.Repeat("# padding padding padding padding padding padding\n", MaxDocumentBytes/50+1)
	_, err := Decode([]byte(doc))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("err = %v", err)
	}
}

func TestReloaderDropsOlderSeq(t *testing.T) {
	m := must(NewMetrics(nil))
	r := startReloader(t, buildSnap, m)
	newer := "limits: {user: {rate: 5, burst: 5}}"
	older := "limits: {user: {rate: 4, burst: 4}}"
	r.Offer(Payload{Data: []byte(newer), Source: SourceNacos, Seq: 10})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().Version == versionOf(t, newer) }, "newer applied")
	r.Offer(Payload{Data: []byte(older), Source: SourceNacos, Seq: 9})
	testwait.Eventually(t, time.Second, func() bool { return testutil.ToFloat64(m.stale) == 1 }, "stale counted")
	if r.Current().userRate != 5 {
		t.Fatal("older payload overwrote the newer one")
	}
	// Another source has its own sequence.
	r.Offer(Payload{Data: []byte(older), Source: SourceFile, Seq: 1})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().Source == SourceFile }, "file payload")

	// Pending coalescing: an older offer does not replace a newer pending one.
	r2 := NewReloader(buildSnap, nil, nil)
	r2.Offer(Payload{Data: []byte(newer), Source: SourceNacos, Seq: 3})
	r2.Offer(Payload{Data: []byte(older), Source: SourceNacos, Seq: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r2.Run(ctx)
	<-r2.Ready()
	testwait.Never(t, 20*time.Millisecond, func() bool { return r2.Current().userRate != 5 }, "coalescing kept the older payload")
}

func TestReloaderCacheThenNacosSameContent(t *testing.T) {
	r := startReloader(t, buildSnap, nil)
	doc := "killSwitch: true"
	r.Offer(Payload{Data: []byte(doc), Source: SourceCache})
	<-r.Ready()
	first := r.Current()
	r.Offer(Payload{Data: []byte(doc), Source: SourceNacos, Seq: 1})
	testwait.Eventually(t, time.Second, func() bool { return r.Status().Source == SourceNacos }, "source nacos")
	if r.Current() != first {
		t.Fatal("same content rebuilt")
	}
}

// Readers must never see a torn snapshot while payloads flip between two configs whose
// user rate and burst always change together.
func TestReloaderNoTornReads(t *testing.T) {
	r := startReloader(t, buildSnap, nil)
	docs := [2][]byte{
		[]byte("limits: {user: {rate: 1, burst: 1}}"),
		[]byte("limits: {user: {rate: 2, burst: 2}}"),
	}
	r.Offer(Payload{Data: docs[0], Source: SourceFile, Seq: 1})
	<-r.Ready()

	var stop atomic.Bool
	var torn, reads, sawOne, sawTwo atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s := r.Current()
				// Both the snapshot's own fields and its Config must agree.
				if float64(s.userBurst) != s.userRate || s.cfg.Limits.User.Rate != s.userRate ||
					s.cfg.Limits.User.Burst != s.userBurst {
					torn.Add(1)
				}
				reads.Add(1)
				if s.userRate == 1 {
					sawOne.Add(1)
				} else {
					sawTwo.Add(1)
				}
			}
		}()
	}
	for i := range 2000 {
		r.Offer(Payload{Data: docs[i%2], Source: SourceFile, Seq: uint64(i + 2)})
		if i%7 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Fatalf("%d torn reads of %d", torn.Load(), reads.Load())
	}
	if sawOne.Load() == 0 || sawTwo.Load() == 0 {
		t.Fatalf("reads saw rate 1 %d times, rate 2 %d times: payloads did not alternate", sawOne.Load(), sawTwo.Load())
	}
	t.Logf("%d reads (%d of rate 1, %d of rate 2), no torn snapshot", reads.Load(), sawOne.Load(), sawTwo.Load())
}

func TestMetricsNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := must(NewMetrics(reg))
	r := startReloader(t, buildSnap, m)
	r.Offer(Payload{Data: []byte("{"), Source: SourceFile, Seq: 1})
	testwait.Eventually(t, time.Second, func() bool { return testutil.ToFloat64(m.failures) == 1 }, "failure")
	want := `
# HELP seckill_config_last_reload_successful 1 if the latest configuration payload was applied, 0 if it was refused.
# TYPE seckill_config_last_reload_successful gauge
seckill_config_last_reload_successful 0
# HELP seckill_config_reload_failures_total Configuration payloads refused (decode, validation or build errors).
# TYPE seckill_config_reload_failures_total counter
seckill_config_reload_failures_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"seckill_config_last_reload_successful", "seckill_config_reload_failures_total"); err != nil {
		t.Fatal(err)
	}
	if r.Status().Ready {
		t.Fatal(fmt.Sprint("ready after a bad first payload: ", r.Status()))
	}
}

// The identity mode is logged when it takes effect, with the first configuration; it is
// fixed from then on, so a later edit that changes it is refused and logs no new mode.
func TestReloaderLogsIdentityMode(t *testing.T) {
	for _, tt := range []struct{ give, other, want string }{
		{"auth: {mode: header, trustedGateway: true}", "auth: {mode: jwt}", "level=WARN msg=\"config: identity from X-User-Id"},
		{"auth: {mode: jwt}", "auth: {mode: header, trustedGateway: true}", "identity from bearer JWTs"},
	} {
		var buf syncbuf.Buffer
		r := NewReloader(buildSnap, nil, slog.New(slog.NewTextHandler(&buf, nil)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		r.Offer(Payload{Data: []byte(tt.give), Source: SourceFile, Seq: 1})
		<-r.Ready()
		testwait.Eventually(t, time.Second, func() bool { return strings.Contains(buf.String(), tt.want) }, "log line %q", tt.want)
		r.Offer(Payload{Data: []byte(tt.other), Source: SourceFile, Seq: 2})
		testwait.Eventually(t, time.Second, func() bool { return r.Status().LastError != "" }, "identity change refused")
		if st := r.Status(); !strings.Contains(st.LastError, "restart") || st.Config.Auth.Mode == "" ||
			strings.Contains(tt.other, st.Config.Auth.Mode) || strings.Count(buf.String(), "msg=\"config: identity from") != 1 {
			t.Errorf("%s then %s: status %+v, log:\n%s", tt.give, tt.other, st, buf.String())
		}
		cancel()
		<-done
	}
}

// must returns v, or stops the test binary when a constructor failed (a metric registered
// twice): a defect no test can go on from.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
