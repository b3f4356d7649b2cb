// Package config owns the hot-reloadable configuration of seckill (docs/API.md section 6): the
// schema, strict decoding with defaults in one place, whole-document validation, the single
// reload path (Reloader) and the sources that feed it (a watched file, Nacos, and the local
// snapshot of the last good Nacos content), plus the Nacos naming registration used to count
// healthy instances.
//
// A *Config is immutable once Decode returns it: every reader may share it without locks.
// Callers must not modify its fields.
package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"gopkg.in/yaml.v3"

	"github.com/seckill/seckill/internal/keyspace"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// Duration is a time.Duration written as a Go duration string ("60s", "1s") in YAML and JSON.
// Bare numbers are rejected so that "window: 60" cannot silently mean 60 nanoseconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String returns the Go duration string of d.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML accepts only a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.ShortTag() != "!!str") {
		return fmt.Errorf("line %d: want a duration string such as \"1s\", got %q", n.Line, n.Value)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as a duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Window is a sliding-window limit: at most Max events within Window. Max 0 disables it.
type Window struct {
	Window Duration `yaml:"window" json:"window"`
	Max    int      `yaml:"max" json:"max"`
}

// Limits holds the default thresholds of every rate-limit dimension (docs/API.md section 3 step 5).
type Limits struct {
	Global     tokenbucket.Limit            `yaml:"global" json:"global"`
	Campaign   tokenbucket.Limit            `yaml:"campaign" json:"campaign"` // default for each campaign
	Activity   tokenbucket.Limit            `yaml:"activity" json:"activity"` // default for each activity
	User       tokenbucket.Limit            `yaml:"user" json:"user"`         // per user within an activity
	IP         tokenbucket.Limit            `yaml:"ip" json:"ip"`
	UserWindow Window                       `yaml:"userWindow" json:"userWindow"`
	Channels   map[string]tokenbucket.Limit `yaml:"channels" json:"channels"` // given = replaces the default set
	// Tokens is the budget of grab-token requests per client IP (prefix), local to each
	// instance; TokensPerUser caps the grab tokens one user may mint per activity within a
	// token's lifetime (5 minutes), across instances.
	Tokens        tokenbucket.Limit `yaml:"tokens" json:"tokens"`
	TokensPerUser int               `yaml:"tokensPerUser" json:"tokensPerUser"`
	// Reads is the budget of reads that may cost a Redis call (a reservation, an activity
	// this instance does not know), per client IP (prefix) and per user, local to each instance.
	Reads tokenbucket.Limit `yaml:"reads" json:"reads"`
	// IPv6Prefix is how many leading bits of an IPv6 address name one client for the per-IP
	// limits (a subscriber usually holds a whole /64); 1..128.
	IPv6Prefix int `yaml:"ipv6Prefix" json:"ipv6Prefix"`
}

// Fallback configures the local limiter used while Redis is slow or down.
type Fallback struct {
	RedisSlowMs        int               `yaml:"redisSlowMs" json:"redisSlowMs"`
	SlowCallsToDegrade int               `yaml:"slowCallsToDegrade" json:"slowCallsToDegrade"`
	ProbeEvery         Duration          `yaml:"probeEvery" json:"probeEvery"`
	Global             tokenbucket.Limit `yaml:"global" json:"global"` // divided by the healthy instances
}

// Activity holds per-activity overrides; a nil field means "use the default".
type Activity struct {
	KillSwitch  *bool              `yaml:"killSwitch,omitempty" json:"killSwitch,omitempty"`
	CanaryRatio *float64           `yaml:"canaryRatio,omitempty" json:"canaryRatio,omitempty"` // 0..1, default 1
	Shards      *int               `yaml:"shards,omitempty" json:"shards,omitempty"`           // 1..1024, default: count at creation
	Limits      *tokenbucket.Limit `yaml:"limits,omitempty" json:"limits,omitempty"`           // default limits.activity
	// WaitingRoom puts the activity's sale behind a waiting room (docs/API.md section 6);
	// nil or enabled false: none.
	WaitingRoom *WaitingRoom `yaml:"waitingRoom,omitempty" json:"waitingRoom,omitempty"`
}

// Orders of a waiting room's line.
const (
	// OrderFIFO serves places in the order they were taken, joins before the opening included.
	OrderFIFO = "fifo"
	// OrderShuffle serves the places taken before the opening (the prequeue) in a random
	// order drawn at the opening, then the later ones first come first served.
	OrderShuffle = "shuffle"
)

// WaitingRoom configures an activity's waiting room. Absent keys take the values of
// DefaultWaitingRoom (set by Decode); Validate checks them.
type WaitingRoom struct {
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Rate is how many places the inlet lets in per second (admitted passes in any 1 s span,
	// over every instance), > 0.
	Rate float64 `yaml:"rate" json:"rate"`
	// Heartbeat is how long a place survives without a poll: a place whose owner has not
	// polled within it is skipped when the inlet reaches it. 2s..10m.
	Heartbeat Duration `yaml:"heartbeat" json:"heartbeat"`
	// PassTTL is how long a pass may be used after its turn came. 5s..30m.
	PassTTL Duration `yaml:"passTTL" json:"passTTL"`
	// StockFactor bounds the unused passes alive at once to StockFactor x the units left. 0.1..10.
	StockFactor float64 `yaml:"stockFactor" json:"stockFactor"`
	// Order is OrderFIFO or OrderShuffle.
	Order string `yaml:"order" json:"order"`
	// Prequeue is how long before the opening places may be taken. 0..24h.
	Prequeue Duration `yaml:"prequeue" json:"prequeue"`
}

// DefaultWaitingRoom is the waiting room of an activity whose waitingRoom block sets only
// what differs: the one place its defaults live.
func DefaultWaitingRoom() WaitingRoom {
	return WaitingRoom{Rate: 100, Heartbeat: Duration(20 * time.Second), PassTTL: Duration(time.Minute),
		StockFactor: 1.2, Order: OrderShuffle, Prequeue: Duration(10 * time.Minute)}
}

// UnmarshalYAML decodes a waitingRoom block over DefaultWaitingRoom, strictly (an unknown key
// is an error, as everywhere in the document).
func (w *WaitingRoom) UnmarshalYAML(n *yaml.Node) error {
	type plain WaitingRoom
	p := plain(DefaultWaitingRoom())
	var raw bytes.Buffer
	enc := yaml.NewEncoder(&raw)
	if err := enc.Encode(n); err != nil {
		return err
	}
	dec := yaml.NewDecoder(&raw)
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("line %d: waitingRoom: %s", n.Line, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	*w = WaitingRoom(p)
	return nil
}

// Campaign holds per-campaign overrides.
type Campaign struct {
	Limits *tokenbucket.Limit `yaml:"limits,omitempty" json:"limits,omitempty"` // default limits.campaign
}

// Blacklist lists blocked user ids and blocked IP addresses or CIDR prefixes.
type Blacklist struct {
	Users []string `yaml:"users" json:"users"`
	IPs   []string `yaml:"ips" json:"ips"`
}

// Auth modes. There is no default: a configuration that sets none is valid as a document,
// but the service refuses to run on it (see AuthChosen).
const (
	AuthHeader = "header" // identity from X-User-Id, believed as sent (needs TrustedGateway)
	AuthJWT    = "jwt"    // identity from a verified bearer JWT
)

// Auth configures request identity (docs/API.md section 4). It never names key material: the JWT
// secret or public key is given at start-up (SECKILL_JWT_HS256_SECRET or
// --jwt-rs256-public-key-file), so that an edit cannot make the service read a file or an
// environment variable of its choosing.
type Auth struct {
	Mode string `yaml:"mode" json:"mode"` // AuthHeader or AuthJWT; "" = not chosen
	// TrustedGateway states that a gateway in front of the service authenticates every
	// request and overwrites X-User-Id: header mode requires it, jwt mode refuses it.
	TrustedGateway bool `yaml:"trustedGateway,omitempty" json:"trustedGateway"`

	Issuer   string   `yaml:"issuer,omitempty" json:"issuer,omitempty"`     // required iss when set
	Audience string   `yaml:"audience,omitempty" json:"audience,omitempty"` // required aud when set
	Leeway   Duration `yaml:"leeway" json:"leeway"`                         // clock skew allowed on exp/nbf/iat, 0..5m
	// MaxTokenAge bounds a token's life: its exp may be at most MaxTokenAge ahead, its iat
	// (when present) at most MaxTokenAge behind (each plus Leeway). 1s..720h, default 24h.
	MaxTokenAge Duration `yaml:"maxTokenAge" json:"maxTokenAge"`

	// JWTHS256SecretEnv and JWTRS256PublicKeyFile were live keys naming key material; they
	// are refused with a pointer to the start-up options.
	JWTHS256SecretEnv     string `yaml:"jwtHS256SecretEnv,omitempty" json:"-"`
	JWTRS256PublicKeyFile string `yaml:"jwtRS256PublicKeyFile,omitempty" json:"-"`
}

// Admin configures the admin API. The admin token is not here: it comes from the environment.
type Admin struct {
	// AllowFrom lists the CIDR prefixes (or single addresses) the admin API accepts
	// connections from; empty means any address (the bearer token still applies).
	AllowFrom []string `yaml:"allowFrom" json:"allowFrom"`
}

// Config is one immutable configuration snapshot. Build it with Decode (or Default); after
// that it is safe for concurrent use by any number of readers and must not be modified.
type Config struct {
	KillSwitch     bool                `yaml:"killSwitch" json:"killSwitch"`
	Limits         Limits              `yaml:"limits" json:"limits"`
	Fallback       Fallback            `yaml:"fallback" json:"fallback"`
	Activities     map[string]Activity `yaml:"activities" json:"activities"`
	Campaigns      map[string]Campaign `yaml:"campaigns" json:"campaigns"`
	Blacklist      Blacklist           `yaml:"blacklist" json:"blacklist"`
	Auth           Auth                `yaml:"auth" json:"auth"`
	TrustedProxies []string            `yaml:"trustedProxies" json:"trustedProxies"`
	Admin          Admin               `yaml:"admin" json:"admin"`

	version      string
	blockedUsers map[string]struct{}
	blocked      prefixSet // blacklist.ips
	trusted      prefixSet
	adminAllow   prefixSet
}

// Default returns a new Config holding docs/API.md section 6's defaults: the only place defaults live.
// Its version is the version of an empty document.
func Default() *Config {
	c := &Config{
		Limits: Limits{
			Global:     tokenbucket.Limit{Rate: 50000, Burst: 100000},
			Campaign:   tokenbucket.Limit{Rate: 30000, Burst: 60000},
			Activity:   tokenbucket.Limit{Rate: 20000, Burst: 40000},
			User:       tokenbucket.Limit{Rate: 2, Burst: 4},
			IP:         tokenbucket.Limit{Rate: 20, Burst: 40},
			UserWindow: Window{Window: Duration(60 * time.Second), Max: 10},
			Channels: map[string]tokenbucket.Limit{
				"web": {Rate: 20000, Burst: 40000},
				"app": {Rate: 30000, Burst: 60000},
			},
			Tokens:        tokenbucket.Limit{Rate: 5, Burst: 10},
			TokensPerUser: 5,
			Reads:         tokenbucket.Limit{Rate: 50, Burst: 100},
			IPv6Prefix:    64,
		},
		Fallback: Fallback{
			RedisSlowMs:        20,
			SlowCallsToDegrade: 20,
			ProbeEvery:         Duration(time.Second),
			Global:             tokenbucket.Limit{Rate: 20000, Burst: 40000},
		},
		Activities:     map[string]Activity{},
		Campaigns:      map[string]Campaign{},
		Blacklist:      Blacklist{Users: []string{}, IPs: []string{}},
		Auth:           Auth{MaxTokenAge: Duration(24 * time.Hour)},
		TrustedProxies: []string{},
		Admin:          Admin{AllowFrom: []string{}},
	}
	c.index(nil) // the defaults are valid: TestDefaultValid guards them
	return c
}

// Sentinel errors; Decode's errors wrap exactly one of them.
var (
	// ErrSyntax marks a document that is not valid YAML for the schema (broken YAML, unknown
	// key, wrong type, several documents).
	ErrSyntax = errors.New("config: syntax")
	// ErrInvalid marks a well-formed document whose values fail validation.
	ErrInvalid = errors.New("config: invalid")
)

// FieldError is one validation problem, named by its field path
// (e.g. "activities.flash-1001.canaryRatio").
type FieldError struct {
	Path string
	Msg  string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Msg }

// ValidationError lists every problem found in one document. It matches ErrInvalid with
// errors.Is.
type ValidationError struct {
	Problems []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return "config: invalid: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// errEmpty refuses a document with no content: a truncated file or a console publish of
// nothing must not reset every key (kill switches included) to its default.
var errEmpty = fmt.Errorf("%w: the document is empty (an empty edit would reset every key to its default)", ErrInvalid)

// Decode parses data strictly (unknown keys, duplicate keys, wrong types and several
// documents are errors wrapping ErrSyntax), starting from Default(): an absent key keeps its
// default. An empty, whitespace-only or comment-only document, or one over MaxDocumentBytes,
// is refused (ErrInvalid). A map given in the document (limits.channels,
// activities, campaigns) replaces the default map as a whole. Decode then validates the
// whole document (errors wrap ErrInvalid and name each offending field) and returns an
// immutable Config whose Version is a hash of data.
func Decode(data []byte) (*Config, error) {
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("%w: the document has %d bytes, over the limit of %d", ErrInvalid, len(data), MaxDocumentBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmpty
	}
	c := Default()
	c.Limits.Channels = nil // nil after decoding = key absent = keep the default set
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); errors.Is(err, io.EOF) {
		return nil, errEmpty // only comments
	} else if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSyntax, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: want exactly one YAML document", ErrSyntax)
	}
	if c.Limits.Channels == nil {
		c.Limits.Channels = Default().Limits.Channels
	}
	if c.Activities == nil {
		c.Activities = map[string]Activity{}
	}
	if c.Campaigns == nil {
		c.Campaigns = map[string]Campaign{}
	}
	for _, l := range []*[]string{&c.Blacklist.Users, &c.Blacklist.IPs, &c.TrustedProxies, &c.Admin.AllowFrom} {
		if *l == nil {
			*l = []string{} // "key: ~" reads as an empty list, never null, in JSON and YAML
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.index(data)
	return c, nil
}

// Version returns a short content hash (16 hex chars of SHA-256) of the document c was
// decoded from.
func (c *Config) Version() string { return c.version }

// index stamps c's version and builds its lookup tables from the validated fields.
func (c *Config) index(data []byte) {
	sum := sha256.Sum256(data)
	c.version = hex.EncodeToString(sum[:8])
	c.blockedUsers = make(map[string]struct{}, len(c.Blacklist.Users))
	for _, u := range c.Blacklist.Users {
		c.blockedUsers[u] = struct{}{}
	}
	c.blocked = newPrefixSet(mustPrefixes(c.Blacklist.IPs))
	c.trusted = newPrefixSet(mustPrefixes(c.TrustedProxies))
	c.adminAllow = newPrefixSet(mustPrefixes(c.Admin.AllowFrom))
}

// Validate checks every field and the relations between fields; it returns a
// *ValidationError listing all problems, or nil.
func (c *Config) Validate() error {
	var v validator
	v.limits(&c.Limits)
	v.fallback(&c.Fallback)
	v.activities(c.Activities)
	for _, id := range slices.Sorted(maps.Keys(c.Campaigns)) {
		p := "campaigns." + id
		v.id(p, id)
		if l := c.Campaigns[id].Limits; l != nil {
			v.limit(p+".limits", *l)
		}
	}
	v.blacklist(&c.Blacklist)
	v.prefixes("trustedProxies", c.TrustedProxies)
	v.prefixes("admin.allowFrom", c.Admin.AllowFrom)
	v.auth(&c.Auth)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// limits checks the limits section, recording its problems in field order; it keeps no
// state beyond v.problems.
func (v *validator) limits(l *Limits) {
	v.limit("limits.global", l.Global)
	v.limit("limits.campaign", l.Campaign)
	v.limit("limits.activity", l.Activity)
	v.limit("limits.user", l.User)
	v.limit("limits.ip", l.IP)
	if w := l.UserWindow.Window; w <= 0 || w.D() > MaxRefill {
		v.addf("limits.userWindow.window", "%s not in (0s, %s]", w, MaxRefill)
	}
	if m := l.UserWindow.Max; m < 0 || m > MaxBurst {
		v.addf("limits.userWindow.max", "%d not in 0..%d", m, MaxBurst)
	}
	v.limit("limits.tokens", l.Tokens)
	v.limit("limits.reads", l.Reads)
	if l.TokensPerUser < 1 || l.TokensPerUser > 1000 {
		v.addf("limits.tokensPerUser", "%d not in 1..1000", l.TokensPerUser)
	}
	if l.IPv6Prefix < 1 || l.IPv6Prefix > 128 {
		v.addf("limits.ipv6Prefix", "%d not in 1..128", l.IPv6Prefix)
	}
	for _, name := range slices.Sorted(maps.Keys(l.Channels)) {
		p := "limits.channels." + name
		v.id(p, name)
		v.limit(p, l.Channels[name])
	}
}

// fallback checks the fallback section, recording its problems in field order.
func (v *validator) fallback(f *Fallback) {
	if f.RedisSlowMs < 1 {
		v.addf("fallback.redisSlowMs", "%d must be >= 1", f.RedisSlowMs)
	}
	if f.SlowCallsToDegrade < 1 {
		v.addf("fallback.slowCallsToDegrade", "%d must be >= 1", f.SlowCallsToDegrade)
	}
	if f.ProbeEvery < minProbeEvery || f.ProbeEvery > maxProbeEvery {
		// One Redis probe per period per instance: a tiny period would hammer a Redis
		// that is already struggling, a long one would keep the looser local limits in
		// force long after Redis came back.
		v.addf("fallback.probeEvery", "%s not in %s..%s", f.ProbeEvery, minProbeEvery, maxProbeEvery)
	}
	v.limit("fallback.global", f.Global)
}

// activities checks every activity's overrides, in the order of their ids, recording the
// problems of each under its path.
func (v *validator) activities(acts map[string]Activity) {
	for _, id := range slices.Sorted(maps.Keys(acts)) {
		a, p := acts[id], "activities."+id
		v.id(p, id)
		if a.CanaryRatio != nil {
			if r := *a.CanaryRatio; math.IsNaN(r) || r < 0 || r > 1 {
				v.addf(p+".canaryRatio", "%v not in [0,1]", r)
			}
		}
		if a.Shards != nil && (*a.Shards < 1 || *a.Shards > keyspace.MaxShards) {
			v.addf(p+".shards", "%d not in 1..%d", *a.Shards, keyspace.MaxShards)
		}
		if a.Limits != nil {
			v.limit(p+".limits", *a.Limits)
		}
		if w := a.WaitingRoom; w != nil {
			v.waitingRoom(p+".waitingRoom", *w)
		}
	}
}

// blacklist checks every blacklisted user id and IP prefix, recording a problem per entry
// that would never match, users first.
func (v *validator) blacklist(b *Blacklist) {
	for i, u := range b.Users {
		if !ValidUserID(u) {
			v.addf(fmt.Sprintf("blacklist.users[%d]", i), "%q is not 1 to %d bytes of printable UTF-8 (NFC, no format characters, no leading or trailing space)", u, keyspace.MaxUserID)
		}
	}
	for i, s := range b.IPs {
		if _, err := parsePrefix(s); err != nil {
			v.addf(fmt.Sprintf("blacklist.ips[%d]", i), "%q is not an IP address or CIDR prefix", s)
		}
	}
}

// auth checks the auth section: no key material in the live configuration, a known mode
// with the gateway trust it needs, and leeway and token age within their bounds.
func (v *validator) auth(a *Auth) {
	if a.JWTHS256SecretEnv != "" {
		v.addf("auth.jwtHS256SecretEnv", "not a live key: give the HS256 secret at start-up (SECKILL_JWT_HS256_SECRET)")
	}
	if a.JWTRS256PublicKeyFile != "" {
		v.addf("auth.jwtRS256PublicKeyFile", "not a live key: give the RS256 public key file at start-up (--jwt-rs256-public-key-file)")
	}
	switch a.Mode {
	case "":
	case AuthHeader:
		if !a.TrustedGateway {
			v.addf("auth.trustedGateway", "header mode believes X-User-Id as sent: set trustedGateway: true "+
				"to state that a gateway authenticates every request and overwrites the header, or use mode jwt")
		}
	case AuthJWT:
		if a.TrustedGateway {
			v.addf("auth.trustedGateway", "only meaningful with mode header")
		}
	default:
		v.addf("auth.mode", "%q is not one of header, jwt", a.Mode)
	}
	if a.Leeway < 0 || a.Leeway.D() > MaxLeeway {
		v.addf("auth.leeway", "%s not in 0s..%s", a.Leeway, MaxLeeway)
	}
	if a.MaxTokenAge.D() < time.Second || a.MaxTokenAge.D() > MaxTokenAge {
		v.addf("auth.maxTokenAge", "%s not in 1s..%s", a.MaxTokenAge, MaxTokenAge)
	}
}

// Bounds of the JWT time checks.
const (
	MaxLeeway   = 5 * time.Minute
	MaxTokenAge = 30 * 24 * time.Hour
)

// MaxDocumentBytes is the size limit of a configuration document.
const MaxDocumentBytes = 256 << 10

type validator struct{ problems []FieldError }

func (v *validator) addf(path, format string, args ...any) {
	v.problems = append(v.problems, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Bounds of a token-bucket limit and of the per-user window: what the Lua scripts can count
// (a Lua number holds integers exactly up to 2^53 and tostring keeps 14 digits) and expire
// (a bucket's key lives for a full refill, burst/rate seconds, passed to SET PX as an
// integer). Far beyond any real sale: the defaults are 50,000/s and a burst of 100,000.
const (
	MinRate   = 0.001         // tokens per second of a limited dimension: one per 1,000 s
	MaxRate   = 1e9           // tokens per second
	MaxBurst  = 1_000_000_000 // tokens
	MaxRefill = 7 * 24 * time.Hour
)

func (v *validator) limit(path string, l tokenbucket.Limit) {
	switch {
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0):
		v.addf(path+".rate", "%v is not a finite number", l.Rate)
	case l.Rate < 0:
		v.addf(path+".rate", "%v must be >= 0", l.Rate)
	case l.Rate > 0 && l.Rate < MinRate:
		v.addf(path+".rate", "%v must be 0 (off) or at least %v", l.Rate, MinRate)
	case l.Rate > MaxRate:
		v.addf(path+".rate", "%v must be at most %v", l.Rate, MaxRate)
	case l.Rate > 0 && l.Burst < 1:
		v.addf(path+".burst", "%d must be >= 1 when rate > 0", l.Burst)
	case l.Burst < 0:
		v.addf(path+".burst", "%d must be >= 0", l.Burst)
	case l.Burst > MaxBurst:
		v.addf(path+".burst", "%d must be at most %d", l.Burst, MaxBurst)
	case l.Rate > 0 && float64(l.Burst)/l.Rate > MaxRefill.Seconds():
		v.addf(path, "a full refill (burst/rate) takes %.0f s, over the %s a bucket is kept", float64(l.Burst)/l.Rate, MaxRefill)
	}
}

// Bounds of a waiting room's settings.
const (
	MaxWaitingRoomRate = 100000
	minHeartbeat       = 2 * time.Second
	maxHeartbeat       = 10 * time.Minute
	minPassTTL         = 5 * time.Second
	maxPassTTL         = 30 * time.Minute
	maxPrequeue        = 24 * time.Hour
)

func (v *validator) waitingRoom(path string, w WaitingRoom) {
	if math.IsNaN(w.Rate) || w.Rate < 1 || w.Rate > MaxWaitingRoomRate {
		v.addf(path+".rate", "%v not in 1..%d", w.Rate, MaxWaitingRoomRate)
	}
	if d := w.Heartbeat.D(); d < minHeartbeat || d > maxHeartbeat {
		v.addf(path+".heartbeat", "%s not in %s..%s", w.Heartbeat, minHeartbeat, maxHeartbeat)
	}
	if d := w.PassTTL.D(); d < minPassTTL || d > maxPassTTL {
		v.addf(path+".passTTL", "%s not in %s..%s", w.PassTTL, minPassTTL, maxPassTTL)
	}
	if f := w.StockFactor; math.IsNaN(f) || f < 0.1 || f > 10 {
		v.addf(path+".stockFactor", "%v not in 0.1..10", f)
	}
	if w.Order != OrderFIFO && w.Order != OrderShuffle {
		v.addf(path+".order", "%q is not one of fifo, shuffle", w.Order)
	}
	if d := w.Prequeue.D(); d < 0 || d > maxPrequeue {
		v.addf(path+".prequeue", "%s not in 0s..%s", w.Prequeue, maxPrequeue)
	}
}

func (v *validator) id(path, id string) {
	if !keyspace.ValidName(id) {
		v.addf(path, "id %q does not match [A-Za-z0-9_-]{1,64}", id)
	}
}

func (v *validator) prefixes(path string, list []string) {
	for i, s := range list {
		if _, err := parsePrefix(s); err != nil {
			v.addf(fmt.Sprintf("%s[%d]", path, i), "%q is not a CIDR prefix or IP address", s)
		}
	}
}

// parsePrefix parses a CIDR prefix or a single address (as a /32 or /128), unmapping
// IPv4-in-IPv6 so that both spellings of an IPv4 address match.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func mustPrefixes(list []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		p, _ := parsePrefix(s) // validated
		out = append(out, p)
	}
	return out
}

// ValidUserID reports whether u is a valid user id: 1 to keyspace.MaxUserID (128) bytes of printable UTF-8 in
// Unicode normal form C, without format characters (such as U+202E or U+200B, which make two
// ids look alike) and without leading or trailing spaces.
func ValidUserID(u string) bool {
	if len(u) < 1 || len(u) > keyspace.MaxUserID || !utf8.ValidString(u) || strings.TrimFunc(u, unicode.IsSpace) != u {
		return false // leading or trailing space of any kind (U+00A0, U+3000 too)
	}
	for _, r := range u {
		if !isPrint(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return norm.NFC.IsNormalString(u)
}

func isPrint(r rune) bool { return r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0) }

// ErrNoAuthMode is returned by AuthChosen for a configuration that sets no auth.mode.
var ErrNoAuthMode = errors.New("auth.mode is not set: choose jwt, or header with auth.trustedGateway: true " +
	"(a gateway authenticates users and overwrites X-User-Id); the service does not trust X-User-Id by default")

// AuthChosen returns ErrNoAuthMode unless c chooses an identity mode. The service refuses to
// run on a configuration without one, rather than fall back to trusting X-User-Id.
func (c *Config) AuthChosen() error {
	if c.Auth.Mode == "" {
		return ErrNoAuthMode
	}
	return nil
}

// minProbeEvery and maxProbeEvery bound fallback.probeEvery.
const (
	minProbeEvery = Duration(100 * time.Millisecond)
	maxProbeEvery = Duration(time.Minute)
)

// identityFixed returns an error when next changes the identity keys of c (auth.mode,
// auth.trustedGateway). The identity mode is fixed once a configuration was applied, so that
// an edit can never turn a jwt deployment into one that believes X-User-Id as sent.
func (c *Config) identityFixed(next *Config) error {
	var changed []string
	if c.Auth.Mode != next.Auth.Mode {
		changed = append(changed, fmt.Sprintf("auth.mode %q -> %q", c.Auth.Mode, next.Auth.Mode))
	}
	if c.Auth.TrustedGateway != next.Auth.TrustedGateway {
		changed = append(changed, fmt.Sprintf("auth.trustedGateway %v -> %v", c.Auth.TrustedGateway, next.Auth.TrustedGateway))
	}
	if changed == nil {
		return nil
	}
	return fmt.Errorf("config: the identity mode is fixed at start-up (%s): restore it in the edit, "+
		"or restart the instances to change the identity mode", strings.Join(changed, ", "))
}

// CanaryRatio returns the share of users admitted to activity id, in [0,1]; default 1.
func (c *Config) CanaryRatio(id string) float64 {
	if a, ok := c.Activities[id]; ok && a.CanaryRatio != nil {
		return *a.CanaryRatio
	}
	return 1
}

// CanaryAdmits reports whether user is inside activity id's canary ratio. The decision is a
// stable hash of (activity, user), so it is sticky per user and the same on every instance,
// and a user admitted at ratio r stays admitted at any ratio above r.
func (c *Config) CanaryAdmits(activityID, userID string) bool {
	r := c.CanaryRatio(activityID)
	if r >= 1 {
		return true
	}
	if r <= 0 {
		return false
	}
	return CanaryPoint(activityID, userID) < r
}

// CanaryPoint maps (activity, user) to a stable point in [0,1) (FNV-1a 64).
func CanaryPoint(activityID, userID string) float64 {
	h := fnv.New64a()
	io.WriteString(h, activityID)
	h.Write([]byte{0})
	io.WriteString(h, userID)
	// FNV-1a's high bits barely depend on the last bytes, so ids that differ at the end
	// (user-1, user-2, ...) would cluster: finish with the murmur3 64-bit mixer.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

// ActivityKilled reports whether reservations of activity id are disabled, by the global
// kill switch or the activity's own.
func (c *Config) ActivityKilled(id string) bool {
	if c.KillSwitch {
		return true
	}
	a, ok := c.Activities[id]
	return ok && a.KillSwitch != nil && *a.KillSwitch
}

// WaitingRoom returns the waiting room of activity id and whether it is on.
func (c *Config) WaitingRoom(id string) (WaitingRoom, bool) {
	if a, ok := c.Activities[id]; ok && a.WaitingRoom != nil && a.WaitingRoom.Enabled {
		return *a.WaitingRoom, true
	}
	return WaitingRoom{}, false
}

// ShardsOverride returns the shard count configured for activity id, if any.
func (c *Config) ShardsOverride(id string) (int, bool) {
	if a, ok := c.Activities[id]; ok && a.Shards != nil {
		return *a.Shards, true
	}
	return 0, false
}

// BlockedUser reports whether user id u is blacklisted.
func (c *Config) BlockedUser(u string) bool {
	_, ok := c.blockedUsers[u]
	return ok
}

// BlockedIP reports whether the textual address ip is blacklisted; an unparsable ip is not.
func (c *Config) BlockedIP(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	return c.BlockedAddr(a)
}

// BlockedAddr reports whether address a is blacklisted (exactly or by a CIDR prefix).
func (c *Config) BlockedAddr(a netip.Addr) bool {
	return c.blocked.contains(a.Unmap().WithZone(""))
}

// TrustedProxy reports whether a connection from a is from a trusted proxy, whose
// X-Forwarded-For may be believed.
func (c *Config) TrustedProxy(a netip.Addr) bool {
	return c.trusted.contains(a.Unmap().WithZone(""))
}

// AdminAllowed reports whether the admin API accepts a connection from a.
func (c *Config) AdminAllowed(a netip.Addr) bool {
	return c.adminAllow.empty() || c.adminAllow.contains(a.Unmap().WithZone(""))
}
