package app

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// /debug/pprof/cmdline shows the command line without the values of secret flags: a MySQL
// DSN given as a flag carries the password.
func TestRedactArgs(t *testing.T) {
	got := redactArgs([]string{"seckill", "--mysql-dsn", "u:hunter2@tcp(db)/s", "--http-addr=:8080",
		"-redis-password=hunter2", "--admin-token", "-abc", "--roles", "api", "--jwt-rs256-public-key-file=/k.pem", "--verbose"})
	want := []string{"seckill", "--mysql-dsn", "[redacted]", "--http-addr=:8080",
		"-redis-password=[redacted]", "--admin-token", "[redacted]", "--roles", "api", "--jwt-rs256-public-key-file=[redacted]", "--verbose"}
	if !slices.Equal(got, want) {
		t.Fatalf("redactArgs:\n got %q\nwant %q", got, want)
	}
}

// A CPU profile or trace longer than the admin listener's write timeout is refused with the
// bound (it would be cut off with nothing written); the command line answers.
func TestPprofBounds(t *testing.T) {
	ta := startApp(t, Options{}, testConfig)
	get := func(path string) (int, string) { return ta.page(t, path, testAdminToken) }
	for _, p := range []string{"/debug/pprof/profile?seconds=120", "/debug/pprof/trace?seconds=3600", "/debug/pprof/profile?seconds=x", "/debug/pprof/profile?seconds=0.5"} {
		if code, _ := get(p); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", p, code)
		}
	}
	if code, body := get("/debug/pprof/cmdline"); code != http.StatusOK || !strings.HasPrefix(body, os.Args[0]) {
		t.Errorf("cmdline: %d %q, want 200 and this process's command line", code, body)
	}
}
