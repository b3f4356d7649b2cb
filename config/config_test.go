package config

import (
	"errors"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/tokenbucket"
	"gopkg.in/yaml.v3"
)

func TestDefaultValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	// A document that sets one key to its default value decodes to Default() (the empty
	// document is refused: see TestBadFixtures).
	d, err := Decode([]byte("killSwitch: false"))
	if err != nil {
		t.Fatal(err)
	}
	d.index(nil)
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("default-valued document != Default():\n%+v\n%+v", d, c)
	}
	if got, want := c.Limits.UserWindow.Window.D(), time.Minute; got != want {
		t.Fatalf("userWindow.window = %v, want %v", got, want)
	}
}

// decodeFile decodes the configuration file at path, failing the test when it cannot be read
// or decoded.
func decodeFile(t testing.TB, path string) *Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// The embedded default must match docs/API.md section 6 and the defaults.
func TestEmbeddedDefaultFile(t *testing.T) {
	c := decodeFile(t, "seckill.yaml")
	def := Default()
	if !reflect.DeepEqual(c.Limits, def.Limits) || !reflect.DeepEqual(c.Fallback, def.Fallback) {
		t.Fatalf("seckill.yaml limits/fallback differ from Default()")
	}
	if got := c.Activities["flash-1001"].Limits; got == nil || *got != (tokenbucket.Limit{Rate: 8000, Burst: 16000}) {
		t.Fatalf("flash-1001 limit = %+v", got)
	}
	if n, ok := c.ShardsOverride("flash-1001"); !ok || n != 16 {
		t.Fatalf("flash-1001 shards = %d,%v", n, ok)
	}
	if got := c.Campaigns["double11"].Limits; got == nil || *got != (tokenbucket.Limit{Rate: 25000, Burst: 50000}) {
		t.Fatalf("double11 = %+v", got)
	}
}

func TestGoodFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { decodeFile(t, f) })
	}
}

func TestBadFixtures(t *testing.T) {
	tests := []struct {
		give    string
		want    string
		wantErr error
	}{
		{"broken_yaml", "did not find expected", ErrSyntax},
		{"unknown_key", "field usr not found", ErrSyntax},
		{"unknown_top", "field killswitch not found", ErrSyntax},
		{"negative_rate", "limits.user.rate: -1 must be >= 0", ErrInvalid},
		{"burst_zero", "limits.global.burst: 0 must be >= 1 when rate > 0", ErrInvalid},
		{"ratio_high", "activities.flash-1001.canaryRatio: 1.5 not in [0,1]", ErrInvalid},
		{"ratio_negative", "activities.flash-1001.canaryRatio: -0.1 not in [0,1]", ErrInvalid},
		{"ratio_nan", "activities.flash-1001.canaryRatio: NaN not in [0,1]", ErrInvalid},
		{"shards_zero", "activities.flash-1001.shards: 0 not in 1..1024", ErrInvalid},
		{"shards_big", "activities.flash-1001.shards: 1025 not in 1..1024", ErrInvalid},
		{"activity_id", `activities.bad id!: id "bad id!" does not match`, ErrInvalid},
		{"activity_limit", "activities.a1.limits.burst: 0 must be >= 1", ErrInvalid},
		{"campaign_limit", "campaigns.c1.limits.rate: -5 must be >= 0", ErrInvalid},
		{"window_zero", "limits.userWindow.window: 0s not in (0s, 168h0m0s]", ErrInvalid},
		{"window_long", "limits.userWindow.window: 2562047h0m0s not in (0s, 168h0m0s]", ErrInvalid},
		{"window_max_huge", "limits.userWindow.max: 9223372036854775807 not in 0..1000000000", ErrInvalid},
		{"rate_tiny", "limits.ip.rate: 1e-300 must be 0 (off) or at least 0.001", ErrInvalid},
		{"rate_huge", "limits.user.rate: 1e+300 must be at most 1e+09", ErrInvalid},
		{"burst_huge", "limits.user.burst: 9223372036854775807 must be at most 1000000000", ErrInvalid},
		{"refill_long", "limits.global: a full refill (burst/rate) takes 1000000000 s, over the 168h0m0s", ErrInvalid},
		{"activity_limit_huge", "activities.a1.limits.rate: 1e+300 must be at most 1e+09", ErrInvalid},
		{"window_number", "want a duration string", ErrSyntax},
		{"duration_bad", `invalid duration "soon"`, ErrSyntax},
		{"cidr", `trustedProxies[0]: "10.0.0.0/33" is not a CIDR prefix`, ErrInvalid},
		{"blacklist_ip", `blacklist.ips[0]: "not-an-ip"`, ErrInvalid},
		{"blacklist_user", `blacklist.users[0]: "" is not 1 to 128 bytes`, ErrInvalid},
		{"wrong_type", "cannot unmarshal !!str `maybe` into bool", ErrSyntax},
		{"two_docs", "want exactly one YAML document", ErrSyntax},
		{"duplicate_key", `mapping key "killSwitch" already defined`, ErrSyntax},
		{"auth_mode", `auth.mode: "oauth" is not one of header, jwt`, ErrInvalid},
		{"jwt_both", "auth.jwtHS256SecretEnv: not a live key", ErrInvalid},
		{"header_no_gateway", "auth.trustedGateway: header mode believes X-User-Id as sent", ErrInvalid},
		{"jwt_gateway", "auth.trustedGateway: only meaningful with mode header", ErrInvalid},
		{"leeway_big", "auth.leeway: 1h0m0s not in 0s..5m0s", ErrInvalid},
		{"token_age_big", "auth.maxTokenAge: 876000h0m0s not in 1s..720h0m0s", ErrInvalid},
		{"jwt_secret_env", "auth.jwtHS256SecretEnv: not a live key: give the HS256 secret at start-up", ErrInvalid},
		{"jwt_key_file", "auth.jwtRS256PublicKeyFile: not a live key: give the RS256 public key file at start-up", ErrInvalid},
		{"rate_inf", "limits.global.rate: +Inf is not a finite number", ErrInvalid},
		{"slow_zero", "fallback.redisSlowMs: 0 must be >= 1", ErrInvalid},
		{"probe_fast", "fallback.probeEvery: 1ns not in 100ms..1m0s", ErrInvalid},
		{"probe_slow", "fallback.probeEvery: 2562047h0m0s not in 100ms..1m0s", ErrInvalid},
		{"channel_name", `limits.channels.we b: id "we b"`, ErrInvalid},
		{"top_list", "cannot unmarshal !!seq into config.Config", ErrSyntax},
		{"empty", "the document is empty", ErrInvalid},
		{"whitespace", "the document is empty", ErrInvalid},
		{"comment_only", "the document is empty", ErrInvalid},
	}
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) != len(tests) {
		t.Errorf("%d fixtures in testdata/bad, %d cases in the table", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			data, err := os.ReadFile("testdata/bad/" + tt.give + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			c, err := Decode(data)
			if err == nil {
				t.Fatalf("Decode accepted it: %+v", c)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %q is not %v", err, tt.wantErr)
			}
		})
	}
}

func TestValidationListsEveryProblem(t *testing.T) {
	_, err := Decode([]byte("limits: {user: {rate: -1, burst: 1}}\nactivities: {x: {shards: 0, canaryRatio: 2}}"))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	want := []string{"limits.user.rate", "activities.x.canaryRatio", "activities.x.shards"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths = %v, want %v", paths, want)
	}
}

func TestPartialOverridesKeepDefaults(t *testing.T) {
	c, err := Decode([]byte("limits: {user: {rate: 5}}\nfallback: {probeEvery: 250ms}"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.User != (tokenbucket.Limit{Rate: 5, Burst: 4}) {
		t.Fatalf("user = %+v, want rate 5 and the default burst 4", c.Limits.User)
	}
	if c.Fallback.ProbeEvery.D() != 250*time.Millisecond || c.Fallback.RedisSlowMs != 20 {
		t.Fatalf("fallback = %+v", c.Fallback)
	}
	if _, ok := c.Limits.Channels["web"]; !ok {
		t.Fatal("default channels lost")
	}
	// A given map replaces the default map.
	c, err = Decode([]byte("limits: {channels: {mini: {rate: 1, burst: 1}}}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Limits.Channels["web"]; ok {
		t.Fatal("channels given: web should be gone")
	}
	if l, ok := c.Limits.Channels["mini"]; !ok || l != (tokenbucket.Limit{Rate: 1, Burst: 1}) {
		t.Fatalf("mini = %+v %v", l, ok)
	}
}

func TestAccessors(t *testing.T) {
	c, err := Decode([]byte(`
killSwitch: false
activities:
  a1: {killSwitch: true, canaryRatio: 0.25, shards: 8, limits: {rate: 10, burst: 20}}
  a2: {}
campaigns: {c1: {limits: {rate: 7, burst: 9}}, c2: {}}
blacklist: {users: [u1], ips: [203.0.113.9, "198.51.100.0/24", "2001:db8::/32"]}
trustedProxies: [10.0.0.0/8]
admin: {allowFrom: [127.0.0.1]}
`))
	if err != nil {
		t.Fatal(err)
	}
	def := Default()
	tests := []struct {
		name string
		give any
		want any
	}{
		{"activity limit override", *c.Activities["a1"].Limits, tokenbucket.Limit{Rate: 10, Burst: 20}},
		{"activity limit empty entry", c.Activities["a2"].Limits == nil, true},
		{"campaign limit override", *c.Campaigns["c1"].Limits, tokenbucket.Limit{Rate: 7, Burst: 9}},
		{"campaign limit empty", c.Campaigns["c2"].Limits == nil, true},
		{"CanaryRatio set", c.CanaryRatio("a1"), 0.25},
		{"CanaryRatio default", c.CanaryRatio("a2"), 1.0},
		{"ActivityKilled a1", c.ActivityKilled("a1"), true},
		{"ActivityKilled a2", c.ActivityKilled("a2"), false},
		{"BlockedUser u1", c.BlockedUser("u1"), true},
		{"BlockedUser u2", c.BlockedUser("u2"), false},
		{"BlockedIP exact", c.BlockedIP("203.0.113.9"), true},
		{"BlockedIP mapped", c.BlockedIP("::ffff:203.0.113.9"), true},
		{"BlockedIP cidr", c.BlockedIP("198.51.100.77"), true},
		{"BlockedIP v6 cidr", c.BlockedIP("2001:db8::1"), true},
		{"BlockedIP other", c.BlockedIP("203.0.113.10"), false},
		{"BlockedIP garbage", c.BlockedIP("nope"), false},
		{"TrustedProxy in", c.TrustedProxy(netip.MustParseAddr("10.1.2.3")), true},
		{"TrustedProxy out", c.TrustedProxy(netip.MustParseAddr("11.1.2.3")), false},
		{"AdminAllowed in", c.AdminAllowed(netip.MustParseAddr("127.0.0.1")), true},
		{"AdminAllowed out", c.AdminAllowed(netip.MustParseAddr("127.0.0.2")), false},
		{"AdminAllowed default", def.AdminAllowed(netip.MustParseAddr("127.0.0.2")), true},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.give, tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.give, tt.want)
		}
	}
	if n, ok := c.ShardsOverride("a1"); !ok || n != 8 {
		t.Errorf("ShardsOverride(a1) = %d, %v", n, ok)
	}
	if _, ok := c.ShardsOverride("a2"); ok {
		t.Error("ShardsOverride(a2) set")
	}
	g, _ := Decode([]byte("killSwitch: true"))
	if !g.ActivityKilled("anything") {
		t.Error("global kill switch does not kill")
	}
}

func TestVersion(t *testing.T) {
	a, _ := Decode([]byte("killSwitch: true"))
	b, _ := Decode([]byte("killSwitch: true\n"))
	a2, _ := Decode([]byte("killSwitch: true"))
	if a.Version() == b.Version() || a.Version() != a2.Version() || len(a.Version()) != 16 {
		t.Fatalf("versions %q %q %q", a.Version(), b.Version(), a2.Version())
	}
}

func TestCanary(t *testing.T) {
	c, err := Decode([]byte("activities: {a: {canaryRatio: 0.1}}"))
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	const n = 20000
	for i := range n {
		// Ids that differ only in their last characters, as real ones often do.
		u := "canary-" + strconv.Itoa(i)
		first := c.CanaryAdmits("a", u)
		if first != c.CanaryAdmits("a", u) {
			t.Fatal("not sticky")
		}
		if first {
			admitted++
		}
	}
	if got := float64(admitted) / n; got < 0.09 || got > 0.11 {
		t.Fatalf("admitted %.3f, want 0.10 +/- 0.01", got)
	}
	if !Default().CanaryAdmits("a", "u") {
		t.Fatal("default ratio must admit everyone")
	}
}

// FuzzDecode: Decode never panics; what decodes is valid and survives a re-encode.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, _ := filepath.Glob(dir + "/*.yaml")
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("limits: ~"))
	f.Add([]byte("activities: {a: ~}"))
	// Round two's bounds, each at its edge and just past it (issue 24 items 3 and 4).
	for _, s := range []string{
		"limits: {ip: {rate: 0.001, burst: 1}}", "limits: {ip: {rate: 0.00099, burst: 1}}",
		"limits: {user: {rate: 1.0e9, burst: 1000000000}}", "limits: {user: {rate: 1.000001e9, burst: 1000000001}}",
		"limits: {global: {rate: 0.001, burst: 604}}", "limits: {global: {rate: 0.001, burst: 605}}",
		"limits: {global: {rate: 0.001, burst: 1e11}}", "limits: {user: {rate: 1.0e300, burst: 9223372036854775807}}",
		"limits: {userWindow: {window: 168h, max: 1000000000}}", "limits: {userWindow: {window: 168h0m0.001s, max: 1000000001}}",
		"activities: {a: {limits: {rate: 0.0001, burst: 1}}}", "campaigns: {c: {limits: {rate: 1e10, burst: 1}}}",
		"fallback: {probeEvery: 1m}", "fallback: {probeEvery: 1m0.001s}", "fallback: {probeEvery: 100ms}",
		"fallback: {probeEvery: 99ms}", "fallback: {probeEvery: 2562047h}",
		// Prefix lists matched on every request (prefixSet): nested, adjacent, both families,
		// IPv4 written in IPv6, /0.
		"trustedProxies: [10.0.0.0/8, 10.1.0.0/16, 10.1.2.3, 0.0.0.0/0, \"::/0\", \"::ffff:192.0.2.0/120\"]",
		"blacklist: {ips: [192.0.2.0/25, 192.0.2.128/25, \"2001:db8::/32\", \"2001:db8::1\", 203.0.113.7]}",
		"admin: {allowFrom: [127.0.0.1, \"::1\", \"fe80::/10\", 255.255.255.255/32]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded config does not validate: %v", err)
		}
		checkScriptBounds(t, c)
		checkPrefixLists(t, c)
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		c2, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode of\n%s\nfailed: %v", out, err)
		}
		c2.index(data) // compare content, not the version of different bytes
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip differs:\n%+v\n%+v\n%s", c, c2, out)
		}
	})
}

// checkScriptBounds fails unless every limit of c is one the Lua scripts can count and expire,
// computed as the scripts compute it: a bucket's PEXPIRE is ceil(burst*1000/rate)+1000 ms and
// must print as an integer (tostring keeps 14 digits), a Retry-After of one token is
// ceil(1000/rate) ms, a window's PEXPIRE is its length in ms, and counts stay below 2^53.
func checkScriptBounds(t *testing.T, c *Config) {
	t.Helper()
	limits := []tokenbucket.Limit{c.Limits.Global, c.Limits.Campaign, c.Limits.Activity, c.Limits.User,
		c.Limits.IP, c.Limits.Tokens, c.Limits.Reads, c.Fallback.Global}
	for _, l := range c.Limits.Channels {
		limits = append(limits, l)
	}
	for _, a := range c.Activities {
		if a.Limits != nil {
			limits = append(limits, *a.Limits)
		}
	}
	for _, cp := range c.Campaigns {
		if cp.Limits != nil {
			limits = append(limits, *cp.Limits)
		}
	}
	const printable = 1e14 // the largest integer Lua's tostring prints without an exponent, roughly
	for _, l := range limits {
		if !l.Limited() {
			continue
		}
		if ttl := math.Ceil(float64(l.Capacity())*1000/l.Rate) + 1000; !(ttl < printable) {
			t.Fatalf("limit %+v: bucket TTL %v ms is not an integer the scripts can pass to PEXPIRE", l, ttl)
		}
		if retry := math.Ceil(1000 / l.Rate); !(retry < printable) {
			t.Fatalf("limit %+v: Retry-After %v ms out of range", l, retry)
		}
		if float64(l.Burst) >= 1<<53 || l.Rate*1e6 >= 1<<53 {
			t.Fatalf("limit %+v: counts past what a Lua number holds exactly", l)
		}
	}
	if w := c.Limits.UserWindow; float64(w.Window.D().Milliseconds()) >= printable || float64(w.Max) >= 1<<53 {
		t.Fatalf("userWindow %+v out of the scripts' range", w)
	}
	if p := c.Fallback.ProbeEvery.D(); p <= 0 || p > time.Minute {
		t.Fatalf("fallback.probeEvery %s: a degraded limiter would wait that long to recover", p)
	}
}

// checkPrefixLists fails unless the indexed prefix lists of c (blacklist, trusted proxies,
// admin allow-list) answer as a scan of the lists as written, at every edge of every prefix.
func checkPrefixLists(t *testing.T, c *Config) {
	t.Helper()
	lists := []struct {
		name string
		ps   []netip.Prefix
		got  func(netip.Addr) bool
	}{
		{"blacklist.ips", mustPrefixes(c.Blacklist.IPs), c.BlockedAddr},
		{"trustedProxies", mustPrefixes(c.TrustedProxies), c.TrustedProxy},
		{"admin.allowFrom", mustPrefixes(c.Admin.AllowFrom), c.AdminAllowed},
	}
	for _, l := range lists {
		for _, a := range edges(l.ps) {
			if !a.IsValid() {
				continue
			}
			want := linearContains(l.ps, a.Unmap().WithZone(""))
			if l.name == "admin.allowFrom" && len(l.ps) == 0 {
				want = true
			}
			if got := l.got(a); got != want {
				t.Fatalf("%s %v: %s gives %v, a scan of the list %v", l.name, l.ps, a, got, want)
			}
		}
	}
}

// BenchmarkRequestPath is what one request reads from a snapshot: zero allocations.
func BenchmarkRequestPath(b *testing.B) {
	r := NewReloader(func(c *Config, _ Meta) (*Config, error) { return c, nil }, nil, nil)
	r.cur.Store(decodeFile(b, "seckill.yaml"))
	ip := netip.MustParseAddr("198.51.100.7")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := r.Current()
			if c.ActivityKilled("flash-1001") || c.BlockedUser("u-1") || c.BlockedAddr(ip) ||
				!c.CanaryAdmits("flash-1001", "u-1") {
				b.Fatal("unexpected")
			}
		}
	})
}

func TestNullsReadAsEmpty(t *testing.T) {
	c, err := Decode([]byte("blacklist: {users: ~, ips: ~}\ntrustedProxies: ~\nadmin: {allowFrom: ~}\nactivities: ~\ncampaigns: ~"))
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	d.index([]byte("x"))
	c.index([]byte("x"))
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("nulls differ from defaults:\n%+v\n%+v", c, d)
	}
}

func TestValidUserID(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"alice", true},
		{"用户-1", true},
		{"é", true},
		{"a b", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"e\u0301", false},     // not NFC
		{"ali\u202ece", false}, // right-to-left override
		{"alice\u200b", false}, // zero width space
		{"\ufeffalice", false}, // byte order mark
		{" alice", false},
		{"alice ", false},
		{"alice\u00a0", false}, // no-break space, the same id in a JWT sub as in X-User-Id
		{"alice\u3000", false}, // ideographic space
		{"\u2003alice", false}, // em space
		{"a\tb", false},
		{"a\x7fb", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		if got := ValidUserID(tt.give); got != tt.want {
			t.Errorf("ValidUserID(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}
