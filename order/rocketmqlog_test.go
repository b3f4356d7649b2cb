package order

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// The library's info lines (an offset commit every 5 s) are dropped; warnings, errors and
// fatals come through as JSON with the library's fields as attributes.
func TestRocketMQLoggerKeepsWarningsOnly(t *testing.T) {
	var buf bytes.Buffer
	l := NewRocketMQLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	l.Info("update offset to broker success", map[string]any{"offset": 3})
	l.Debug("pull", nil)
	l.Warning("broker busy", map[string]any{"broker": "b1", "underlayError": errors.New("timeout")})
	l.Fatal("cannot go on", nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	var w, f map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil {
		t.Fatal(err)
	}
	if w["level"] != "WARN" || w["detail"] != "broker busy" || w["broker"] != "b1" || w["underlayError"] != "timeout" || w["component"] != "rocketmq-client" {
		t.Errorf("warning line %v", w)
	}
	if f["level"] != "ERROR" || f["detail"] != "cannot go on" {
		t.Errorf("fatal line %v", f)
	}
}
