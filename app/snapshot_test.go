package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/testwait"
)

// GET /admin/v1/config says when the last refusal happened and whether a later edit
// superseded it; an empty edit is refused and does not lift a kill switch.
func TestAdminConfigLastErrorAt(t *testing.T) {
	ta := startApp(t, Options{}, testConfig+"killSwitch: true\n")
	ta.setConfig(t, strings.Replace(testConfig, "user:     {rate: 1000, burst: 1000}", "user:     {rate: -1, burst: 1}", 1)+"killSwitch: true\n")
	a := ta.admin(t, "GET", "/admin/v1/config", "")
	if e, _ := a.body["lastError"].(string); !strings.Contains(e, "limits.user.rate") || a.body["lastErrorAt"] == nil || a.body["lastErrorSuperseded"] != false {
		t.Fatalf("after a refused edit: %v", a.body)
	}
	errAt := a.body["lastErrorAt"]

	ta.setConfig(t, testConfig+"killSwitch: true\nactivities: {x: {canaryRatio: 0.5}}\n")
	a = ta.admin(t, "GET", "/admin/v1/config", "")
	if a.body["lastErrorAt"] != errAt || a.body["lastErrorSuperseded"] != true || a.body["lastError"] == nil {
		t.Fatalf("after a later good edit: %v", a.body)
	}

	// An editor that truncates the file and stops there.
	if err := os.WriteFile(ta.cfgPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ta.setConfig(t, "  \n")
	st := ta.cfg.Status()
	if st.Config == nil || !st.Config.KillSwitch || st.LastErrorSuperseded {
		t.Fatalf("an empty edit changed the running config: %+v", st)
	}
}

// A config edit cannot make the service read a file or an environment variable: the JWT key
// material is given at start-up only. The edits go through the watched file.
func TestConfigEditCannotChooseKeyMaterial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ta := startApp(t, Options{}, testConfig)
	lastError := func(auth string) string {
		t.Helper()
		ta.setConfig(t, withAuth(auth))
		st := ta.cfg.Status()
		if st.LastErrorSuperseded || st.Config.Auth.Mode == config.AuthJWT {
			t.Fatalf("edit %s applied: %+v", auth, st)
		}
		return st.LastError
	}

	// PATH is a known string: a secret read from it makes every forged token valid.
	if e := lastError("{mode: jwt, jwtHS256SecretEnv: PATH}"); !strings.Contains(e, "start-up") {
		t.Fatalf("lastError %q does not point to the start-up option", e)
	}
	// Whether a path exists must not show in lastError.
	exists := lastError("{mode: jwt, jwtRS256PublicKeyFile: /etc/hostname}")
	missing := lastError("{mode: jwt, jwtRS256PublicKeyFile: /nonexistent/key.pem}")
	if strings.ReplaceAll(exists, "/etc/hostname", "P") != strings.ReplaceAll(missing, "/nonexistent/key.pem", "P") ||
		strings.Contains(exists, "/etc/hostname") {
		t.Fatalf("lastError differs by file existence:\n%q\n%q", exists, missing)
	}
	// A FIFO is refused at once, and a kill switch right after it is applied.
	start := time.Now()
	lastError("{mode: jwt, jwtRS256PublicKeyFile: " + fifo + "}")
	ta.setConfig(t, testConfig+"killSwitch: true\n")
	if !ta.cfg.Status().Config.KillSwitch || time.Since(start) > 2*time.Second {
		t.Fatalf("kill switch behind a FIFO edit: %v, %+v", time.Since(start), ta.cfg.Status())
	}
	// jwt mode without a key given at start-up is refused.
	if e := lastError("{mode: jwt}"); !strings.Contains(e, "start-up") {
		t.Fatalf("jwt without a start-up key: %q", e)
	}
}

// The HS256 secret given at start-up verifies tokens when the configuration selects jwt mode.
func TestJWTKeyFromStartup(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	ta := startApp(t, Options{JWTHS256Secret: secret}, withAuth("{mode: jwt}"))
	if st := ta.cfg.Status(); st.Config.Auth.Mode != config.AuthJWT {
		t.Fatalf("jwt config refused: %+v", st)
	}
	snap := ta.cfg.Current()
	tok := signHS(t, secret, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Minute).Unix()})
	if sub, ok := snap.auth.verify(tok); !ok || sub != "alice" {
		t.Fatalf("verify = %q, %v", sub, ok)
	}
}

func signHS(t *testing.T, secret string, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The start-up key material is read once, bounded, and checked.
func TestLoadAuthKeys(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(notPEM, []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("s", 32)
	tests := []struct {
		give Options
		want string // "" = no error
	}{
		{Options{}, ""},
		{Options{JWTHS256Secret: long}, ""},
		{Options{JWTHS256Secret: "short"}, "at least 32 bytes"},
		{Options{JWTHS256Secret: long, JWTRS256PublicKeyFile: notPEM}, "not both"},
		{Options{JWTRS256PublicKeyFile: fifo}, "not a regular file"},
		{Options{JWTRS256PublicKeyFile: "/dev/zero"}, "not a regular file"},
		{Options{JWTRS256PublicKeyFile: notPEM}, "PEM"},
	}
	for _, tt := range tests {
		_, err := loadAuthKeys(tt.give)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("loadAuthKeys(%+v) = %v, want %q", tt.give, err, tt.want)
		}
	}
	o, err := ParseOptions([]string{"--jwt-rs256-public-key-file", "/k.pem"}, func(k string) string {
		if k == "SECKILL_JWT_HS256_SECRET" {
			return "from-env"
		}
		return ""
	}, io.Discard)
	if err != nil || o.JWTRS256PublicKeyFile != "/k.pem" || o.JWTHS256Secret != "from-env" {
		t.Fatalf("ParseOptions = %+v, %v", o, err)
	}
}

// The JWT verifier refuses what issue 14 found accepted: a future iat, an exp far out, a
// missing iss/aud when configured, and a sub that is not a clean NFC string.
func TestJWTVerifierRefusals(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	cfg, err := config.Decode([]byte("auth: {mode: jwt, issuer: shop, audience: seckill, leeway: 5s, maxTokenAge: 1h}"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := authKeys{hsSecret: []byte(secret)}.buildSnapshot(cfg, config.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "alice", "iss": "shop", "aud": "seckill",
			"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(10 * time.Minute).Unix()}
	}
	with := func(k string, v any) jwt.MapClaims {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name    string
		give    jwt.MapClaims
		wantSub string // "" = refused
	}{
		{"good", good(), "alice"},
		{"no iat", with("iat", nil), "alice"},
		{"iat within leeway", with("iat", now.Add(3*time.Second).Unix()), "alice"},
		{"unicode NFC", with("sub", "用户-é"), "用户-é"},
		{"iat in the future", with("iat", now.Add(time.Hour).Unix()), ""},
		{"exp 100 years out", with("exp", now.AddDate(100, 0, 0).Unix()), ""},
		{"exp beyond maxTokenAge", with("exp", now.Add(2*time.Hour).Unix()), ""},
		{"iat older than maxTokenAge", with("iat", now.Add(-2*time.Hour).Unix()), ""},
		{"no exp", with("exp", nil), ""},
		{"no iss", with("iss", nil), ""},
		{"wrong iss", with("iss", "other"), ""},
		{"no aud", with("aud", nil), ""},
		{"wrong aud", with("aud", "other"), ""},
		{"sub with U+202E", with("sub", "ali\u202ece"), ""},
		{"sub with U+200B", with("sub", "alice\u200b"), ""},
		{"sub with U+FEFF", with("sub", "\ufeffalice"), ""},
		{"sub not NFC", with("sub", "e\u0301"), ""},
		{"sub leading space", with("sub", " alice"), ""},
		{"sub trailing space", with("sub", "alice "), ""},
		{"sub empty", with("sub", ""), ""},
	}
	for _, tt := range tests {
		sub, ok := snap.auth.verify(signHS(t, secret, tt.give))
		if sub != tt.wantSub || ok != (tt.wantSub != "") {
			t.Errorf("%s: verify = %q, %v; want %q", tt.name, sub, ok, tt.wantSub)
		}
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		give, want string
		ok         bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"Bearer  abc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got, ok := bearerToken(tt.give); got != tt.want || ok != tt.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.ok)
		}
	}
}

// The storefront takes the scheme in any case (RFC 9110 section 11.1).
func TestLowerCaseBearerAccepted(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	ta := startApp(t, Options{JWTHS256Secret: secret}, withAuth("{mode: jwt}"))
	tok := signHS(t, secret, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Minute).Unix()})
	for _, scheme := range []string{"Bearer", "bearer"} {
		a := ta.do(t, "GET", "/api/v1/reservations/r-unknown", map[string]string{"Authorization": scheme + " " + tok}, "")
		if a.status != 404 {
			t.Errorf("scheme %q: %d %v, want 404 (authenticated, no such reservation)", scheme, a.status, a.body)
		}
	}
}

// Header mode believes X-User-Id as sent, so it must be chosen explicitly, with the
// statement that a gateway authenticates users and overwrites the header. A configuration
// that chooses no mode is refused: the instance stays not ready rather than trusting the
// header by default.
func TestHeaderModeMustBeExplicit(t *testing.T) {
	build := authKeys{}.buildSnapshot
	tests := []struct {
		give string
		want string // "" = built
	}{
		{"auth: {mode: header, trustedGateway: true}", ""},
		{"killSwitch: false", "auth.mode is not set"},
		{"auth: {leeway: 1s}", "auth.mode is not set"},
		{"auth: {mode: header}", "auth.trustedGateway"},
		{"auth: {mode: header, trustedGateway: false}", "auth.trustedGateway"},
	}
	for _, tt := range tests {
		cfg, err := config.Decode([]byte(tt.give))
		if err == nil {
			_, err = build(cfg, config.Meta{})
		}
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.give, err, tt.want)
		}
	}
}

// A fresh instance whose configuration names no identity mode is not ready (503).
func TestNoAuthModeNotReady(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seckill.yaml")
	if err := os.WriteFile(path, []byte("killSwitch: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{ConfigFile: path, HTTPAddr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"),
		Roles: "api", MySQLPool: 1, WriterRate: 1, InstanceID: "noauth", AdminToken: "test-admin-token"}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, opts, discardLog())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done; a.Close() }()
	ta := &testApp{App: a, base: "http://" + a.Addr()}
	testwait.Eventually(t, 5*time.Second, func() bool { return ta.cfg.Status().LastError != "" }, "the refusal of the configuration")
	if st := ta.cfg.Status(); st.Ready || !strings.Contains(st.LastError, "auth.mode is not set") {
		t.Fatalf("status %+v", st)
	}
	if r := ta.do(t, "GET", "/readyz", nil, ""); r.status != 503 {
		t.Fatalf("readyz %d %v", r.status, r.body)
	}
}

// withAuth is testConfig with its auth line replaced.
func withAuth(auth string) string {
	return strings.Replace(testConfig, "auth: {mode: header, trustedGateway: true}", "auth: "+auth, 1)
}

// The identity mode is fixed once a configuration was applied: an edit from jwt to header
// with trustedGateway (which would let any caller claim any user with X-User-Id) is refused
// as a whole, the jwt configuration keeps serving, and lastError says a restart is needed.
// Other keys of a later edit still apply live. The edits go through the watched file.
func TestIdentityModeIsFixedAfterStart(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	ta := startApp(t, Options{JWTHS256Secret: secret}, withAuth("{mode: jwt}"))
	before := ta.cfg.Status().Version

	ta.setConfig(t, testConfig+"killSwitch: true\n") // header + trustedGateway, plus a live key
	st := ta.cfg.Status()
	if st.Version != before || st.Config.Auth.Mode != config.AuthJWT || st.Config.KillSwitch ||
		!strings.Contains(st.LastError, "restart") || !strings.Contains(st.LastError, "auth.mode") {
		t.Fatalf("jwt -> header edit: version %s (was %s), mode %s, killSwitch %v, lastError %q",
			st.Version, before, st.Config.Auth.Mode, st.Config.KillSwitch, st.LastError)
	}
	// The storefront still wants a bearer token: X-User-Id alone is not an identity.
	if a := ta.do(t, "GET", "/api/v1/reservations/r-unknown", map[string]string{"X-User-Id": "alice"}, ""); a.status != 401 {
		t.Fatalf("X-User-Id after the refused edit: %d %v, want 401", a.status, a.body)
	}
	// A later edit that keeps the mode applies.
	ta.setConfig(t, withAuth("{mode: jwt}")+"killSwitch: true\n")
	if st := ta.cfg.Status(); !st.Config.KillSwitch || st.Config.Auth.Mode != config.AuthJWT {
		t.Fatalf("an edit keeping the mode was not applied: %+v", st)
	}

	// header + trustedGateway is fixed in the same way: a switch to jwt is refused too.
	hb := startApp(t, Options{JWTHS256Secret: secret}, testConfig)
	hb.setConfig(t, withAuth("{mode: jwt}"))
	if st := hb.cfg.Status(); st.Config.Auth.Mode != config.AuthHeader || !st.Config.Auth.TrustedGateway ||
		!strings.Contains(st.LastError, "restart") {
		t.Fatalf("header -> jwt edit: %+v", st)
	}
}
