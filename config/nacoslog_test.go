package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// The library's info lines and its routine warnings (a missing failover cache file, a closed
// connection) are dropped; its real warnings and errors come through as JSON.
func TestNacosLoggerKeepsWarningsOnly(t *testing.T) {
	var buf bytes.Buffer
	l := NewNacosLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	l.Info("config changed")
	l.Debugf("x %d", 1)
	l.Warnf("read Config Content failed. cause file doesn't exist, file path: %s", "/x_failover")
	l.Error("connectionId 1 received error event, isRunning:false, isAbandon=false")
	l.Warn("server ", "unreachable")
	l.Errorf("login failed: %d", 403)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	for i, want := range []struct{ level, detail string }{{"WARN", "server unreachable"}, {"ERROR", "login failed: 403"}} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatal(err)
		}
		if m["level"] != want.level || m["detail"] != want.detail || m["msg"] != "nacos client" || m["component"] != "nacos-client" {
			t.Errorf("line %d = %v, want %+v", i, m, want)
		}
	}
}
