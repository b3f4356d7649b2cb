package limiter

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// TestScriptsRunOnMiniredis: the embedded mode runs the same scripts on miniredis.
func TestScriptsRunOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	l := must(New(rdb, Options{InstanceID: "solo"}, nil, slog.New(slog.DiscardHandler)))
	r := Request{Global: tokenbucket.Limit{Rate: 0.001, Burst: 3}, IP: tokenbucket.Limit{Rate: 0.001, Burst: 2}}
	allowed := 0
	for i := range 5 {
		r.IPKey = ipKeyOf(l, "10.8.0."+string(rune('0'+i)))
		d, err := l.Allow(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 3 || l.Degraded() {
		t.Fatalf("allowed %d (want 3), degraded %v", allowed, l.Degraded())
	}
	l.heartbeat(context.Background())
	if l.healthyCount() != 1 {
		t.Fatalf("healthy %d, want 1", l.healthyCount())
	}
	w := must(NewRedisWindow(rdb))
	for i, want := range []bool{true, true, false} {
		ok, retry, err := w.Take(context.Background(), "w", Window{Size: time.Minute, Max: 2}, string(rune('a'+i)))
		if err != nil || ok != want || (!ok && retry < 59*time.Second) {
			t.Fatalf("window take %d: %v %v %v", i, ok, retry, err)
		}
	}
}

func TestDecodeRejectsUnknownCodes(t *testing.T) {
	tests := []struct {
		give      []int64
		wantOK    bool
		wantRetry time.Duration
		wantErr   bool
	}{
		{give: []int64{1, 0}, wantOK: true},
		{give: []int64{2, 250}, wantRetry: 250 * time.Millisecond},
		{give: []int64{0, 0}, wantErr: true},
		{give: []int64{3, 0}, wantErr: true},
		{give: []int64{1}, wantErr: true},
	}
	for _, tt := range tests {
		ok, retry, err := decode(tt.give)
		if ok != tt.wantOK || retry != tt.wantRetry || (err != nil) != tt.wantErr {
			t.Errorf("decode(%v) = %v, %v, %v", tt.give, ok, retry, err)
		}
	}
}

func TestKeyNames(t *testing.T) {
	tests := []struct {
		ns                           string
		wantGlobal, wantAct, wantIns string
	}{
		{ns: "", wantGlobal: "sk:{budget:global}:tk", wantAct: "sk:{budget:activity:flash-1}:tk", wantIns: "sk:instances"},
		{ns: "blue", wantGlobal: "sk:{budget:global}:tk:blue", wantAct: "sk:{budget:activity:flash-1}:tk:blue", wantIns: "sk:instances:blue"},
	}
	for _, tt := range tests {
		l := must(New(nil, Options{Namespace: tt.ns}, nil, slog.New(slog.DiscardHandler)))
		if got := l.budgetKey(dGlobal, ""); got != tt.wantGlobal {
			t.Errorf("global %q, want %q", got, tt.wantGlobal)
		}
		if got := l.budgetKey(dActivity, "flash-1"); got != tt.wantAct {
			t.Errorf("activity %q, want %q", got, tt.wantAct)
		}
		if l.instancesKey != tt.wantIns {
			t.Errorf("instances %q, want %q", l.instancesKey, tt.wantIns)
		}
		if ip := ipKeyOf(l, "10.0.0.1"); len(ip) < 10 || ip[:6] != "sk:{ip" || (tt.ns != "" && ip[len(ip)-5:] != ":"+tt.ns) {
			t.Errorf("ip key %q", ip)
		}
	}
}

// TestIPKeyOfAddress: IPKey is the bucket of the client's limit key (the IPv4 address, the
// IPv6 address cut to its prefix, no zone) under FNV-1a, the key the limiter has always used,
// so a rolling deploy shares the buckets; "" for an unknown address.
func TestIPKeyOfAddress(t *testing.T) {
	l := must(New(nil, Options{Namespace: "ns"}, nil, slog.New(slog.DiscardHandler)))
	want := func(limitKey string) string {
		h := fnv.New64a()
		_, _ = h.Write([]byte(limitKey))
		return "sk:{ip:" + strconv.FormatUint(h.Sum64(), 16) + "}:tk:ns"
	}
	tests := []struct {
		give   string
		prefix int
		want   string
	}{
		{"10.0.0.1", 64, "10.0.0.1"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"},
		{"fe80::1%eth0", 0, "fe80::1"},
		{"fe80::1%eth0", 48, "fe80::/48"},
		{"::ffff:10.0.0.1", 128, "::ffff:10.0.0.1"},
	}
	for _, tt := range tests {
		if got := l.IPKey(netip.MustParseAddr(tt.give), tt.prefix); got != want(tt.want) {
			t.Errorf("IPKey(%s, %d) = %s, want the bucket of %s", tt.give, tt.prefix, got, tt.want)
		}
	}
	if got := l.IPKey(netip.Addr{}, 64); got != "" {
		t.Errorf("IPKey of an unknown address = %q", got)
	}
}

// TestMetricsPreCreatedAndScriptDecisions: every series of the closed label sets exists at 0
// before the first event, and the decisions the reservation script reports are counted under
// the user and IP dimensions with their Retry-After.
func TestMetricsPreCreatedAndScriptDecisions(t *testing.T) {
	m := must(NewMetrics(prometheus.NewRegistry()))
	for _, c := range []struct {
		give prometheus.Collector
		want int
	}{
		{m.pass, len(passDims)}, {m.reject, len(rejectLabels)}, {m.redisCalls, len(redisOps)},
		{m.transitions, len(modes)}, {m.leaseTokens, len(leaseOps)},
	} {
		if got := testutil.CollectAndCount(c.give); got != c.want {
			t.Errorf("%d series before any event, want %d", got, c.want)
		}
	}
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	l := must(New(rdb, Options{}, m, slog.New(slog.DiscardHandler)))
	l.ScriptAdmitted(true, true)
	l.ScriptAdmitted(true, false)
	l.ScriptRejected(DimUser, ReasonWindow, 2*time.Second)
	l.ScriptRejected(DimIP, ReasonRate, time.Second)
	for _, c := range []struct {
		give prometheus.Collector
		want float64
	}{
		{m.pass.WithLabelValues(DimUser), 2},
		{m.pass.WithLabelValues(DimIP), 1},
		{m.reject.WithLabelValues(DimUser, ReasonWindow), 1},
		{m.reject.WithLabelValues(DimIP, ReasonRate), 1},
	} {
		if got := testutil.ToFloat64(c.give); got != c.want {
			t.Errorf("%v = %v, want %v", c.give, got, c.want)
		}
	}
	if got := testutil.CollectAndCount(m.reject); got != len(rejectLabels) {
		t.Errorf("script rejections created %d series, want the %d of the closed set", got, len(rejectLabels))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.retryAfter)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("retry-after histogram: %v, %v", mfs, err)
	}
	if h := mfs[0].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 2 || h.GetSampleSum() != 3 {
		t.Errorf("retry-after histogram: count %d sum %v, want 2 and 3 seconds", h.GetSampleCount(), h.GetSampleSum())
	}
}

// TestRecoversOnMiniredis: the embedded mode's Redis (miniredis, which speaks RESP only and
// closes a connection sent an inline command) lets a degraded Limiter recover once a probe
// answers: the prober's own PING must be a RESP array.
func TestRecoversOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	l := must(New(rdb, Options{}, nil, slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	l.ObserveRedis(time.Millisecond, errors.New("use of closed network connection"))
	if !l.Degraded() {
		t.Fatal("a failed call did not degrade")
	}
	deadline := time.Now().Add(15 * time.Second) // probes every 1 s (the default ProbeEvery)
	for l.Degraded() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if l.Degraded() {
		t.Fatal("still degraded 15 s after one failed call, with miniredis answering")
	}
}
