package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     int
		wantOut  string
		wantErrS string
	}{
		{name: "help", args: []string{"--help"}, want: 0, wantOut: "--writer-rate  (SECKILL_WRITER_RATE, default 5000)"},
		{name: "short help", args: []string{"-h"}, want: 0, wantOut: "SECKILL_ADMIN_ADDR"},
		{name: "help names the user-hash key", args: []string{"--help"}, want: 0, wantOut: "SECKILL_USER_HASH_KEY      hex, at least 32 bytes"},
		{name: "bad variable", env: map[string]string{"SECKILL_WRITER_RATE": "fast"}, want: 2, wantErrS: `SECKILL_WRITER_RATE="fast": want an integer >= 0`},
		{name: "bad flag", args: []string{"--mysql-pool=abc"}, want: 2, wantErrS: `invalid value "abc" for flag -mysql-pool: want an integer >= 1`},
		{name: "short production token", env: map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:1", "SECKILL_ADMIN_TOKEN": "change-me"}, want: 2, wantErrS: "want at least 32"},
		{name: "partial backend set refused", env: map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:1", "SECKILL_ADMIN_TOKEN": strings.Repeat("a", 64)},
			args: []string{"--http-addr=127.0.0.1:0", "--admin-addr=off", "--data-dir=" + t.TempDir()}, want: 2, wantErrS: "SECKILL_MYSQL_DSN is unset while SECKILL_REDIS_ADDR is set: orders would go to a temporary SQLite deleted at exit; set it, or name the stand-in with SECKILL_STAND_INS=mysql"},
		{name: "production without a config", env: map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:1", "SECKILL_ADMIN_TOKEN": strings.Repeat("a", 64), "SECKILL_STAND_INS": "mysql,rocketmq"},
			args: []string{"--http-addr=127.0.0.1:0", "--admin-addr=off", "--data-dir=" + t.TempDir()}, want: 1, wantErrS: "the compiled-in default is used in the embedded mode only"},
		{name: "explicit config file missing", args: []string{"--config-file=/nonexistent/seckill.yaml", "--http-addr=127.0.0.1:0", "--admin-addr=", "--data-dir=" + t.TempDir()}, want: 1, wantErrS: "/nonexistent/seckill.yaml"},
		{name: "version", args: []string{"--version"}, want: 0, wantOut: "seckill "},
		{name: "config check shipped", args: []string{"config", "check", "../../config/seckill.yaml"}, want: 0, wantOut: "../../config/seckill.yaml: valid (version "},
		{name: "config check compose", args: []string{"config", "check", "../../docker/seckill-nacos.yaml"}, want: 0, wantOut: "valid"},
		{name: "config check bad", args: []string{"config", "check", "../../config/testdata/bad/ratio_high.yaml"}, want: 1, wantErrS: "activities.flash-1001.canaryRatio: 1.5 not in [0,1]"},
		{name: "config check missing", args: []string{"config", "check", "/nonexistent.yaml"}, want: 1, wantErrS: "/nonexistent.yaml"},
		{name: "config check usage", args: []string{"config", "check"}, want: 2, wantErrS: "usage: seckill config check FILE"},
		{name: "config check jwt with key", args: []string{"config", "check", "../../config/testdata/good/jwt.yaml"}, env: map[string]string{"SECKILL_JWT_HS256_SECRET": strings.Repeat("s", 32)}, want: 0, wantOut: "auth jwt"},
		{name: "config check jwt short key", args: []string{"config", "check", "../../config/testdata/good/jwt.yaml"}, env: map[string]string{"SECKILL_JWT_HS256_SECRET": "short"}, want: 1, wantErrS: "at least 32 bytes"},
		{name: "migrate without a DSN", args: []string{"migrate"}, want: 2, wantErrS: "set SECKILL_MYSQL_DSN or --mysql-dsn"},
		{name: "migrate bad DSN", args: []string{"migrate", "--mysql-dsn=mysql://x"}, want: 2, wantErrS: "want a MySQL DSN"},
		{name: "migrate unreachable", args: []string{"migrate", "--mysql-dsn=u:p@tcp(127.0.0.1:1)/d?timeout=1s"}, want: 1, wantErrS: "seckill: migrate:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := run(tt.args, func(k string) string { return tt.env[k] }, &out, &errb)
			if got != tt.want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tt.want, errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Fatalf("stdout lacks %q:\n%s", tt.wantOut, out.String())
			}
			if !strings.Contains(errb.String(), tt.wantErrS) {
				t.Fatalf("stderr lacks %q:\n%s", tt.wantErrS, errb.String())
			}
		})
	}
}

// TestConfigCheckBadFixtures: seckill config check refuses every bad fixture of the config
// package (exit 1, the reason on stderr) and accepts every good one that chooses an identity
// mode and the shipped configs: the same verdicts as a live edit.
func TestConfigCheckBadFixtures(t *testing.T) {
	bad, _ := filepath.Glob("../../config/testdata/bad/*.yaml")
	good, _ := filepath.Glob("../../config/testdata/good/*.yaml")
	if len(bad) < 30 || len(good) < 3 {
		t.Fatalf("fixtures not found: %d bad, %d good", len(bad), len(good))
	}
	good = append(good, "../../config/seckill.yaml", "../../config/loadtest.yaml", "../../docker/seckill-nacos.yaml")
	env := func(string) string { return "" }
	for _, p := range bad {
		var out, errb bytes.Buffer
		if got := run([]string{"config", "check", p}, env, &out, &errb); got != 1 || !strings.Contains(errb.String(), "config:") {
			t.Errorf("%s: exit %d, stderr %q; want 1 with the reason", p, got, errb.String())
		}
	}
	for _, p := range good {
		var out, errb bytes.Buffer
		if strings.HasSuffix(p, "good/unlimited.yaml") {
			// It decodes, but chooses no identity mode: a live edit is refused, and so is the check.
			if got := run([]string{"config", "check", p}, env, &out, &errb); got != 1 || !strings.Contains(errb.String(), "auth.mode is not set") {
				t.Errorf("%s: exit %d, stderr %q; want 1, auth.mode is not set", p, got, errb.String())
			}
			continue
		}
		if got := run([]string{"config", "check", p}, env, &out, &errb); got != 0 || !strings.Contains(out.String(), "valid") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0", p, got, out.String(), errb.String())
		}
	}
}

// A config publish that drops in transit says so on stderr without the Nacos access token.
func TestConfigPublishHidesToken(t *testing.T) {
	const token = "tok-must-not-leak-51c2"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nacos/v1/auth/users/login" {
			w.Write([]byte(`{"accessToken":"` + token + `","tokenTtl":18000}`))
			return
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	env := map[string]string{"SECKILL_NACOS_ADDR": strings.TrimPrefix(srv.URL, "http://"),
		"SECKILL_NACOS_USERNAME": "admin", "SECKILL_NACOS_PASSWORD": "pw"}
	var out, errb bytes.Buffer
	got := run([]string{"config", "publish", "../../config/seckill.yaml"}, func(k string) string { return env[k] }, &out, &errb)
	if got != 1 || !strings.Contains(errb.String(), "seckill: config publish: nacos ") {
		t.Fatalf("exit %d, stderr %q; want 1 and the Nacos failure", got, errb.String())
	}
	if strings.Contains(errb.String(), token) || !strings.Contains(errb.String(), "accessToken=REDACTED") {
		t.Fatalf("stderr %q: want the token replaced by REDACTED", errb.String())
	}
}
