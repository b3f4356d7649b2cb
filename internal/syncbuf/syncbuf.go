// Package syncbuf has Buffer, the one text buffer that goroutines write to (a logger, a
// process's output) while a test reads it. It imports nothing of the service.
package syncbuf

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Buffer collects what is written to it. Write and String are safe for concurrent use; the
// zero value is an empty buffer ready for use.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Records decodes every non-empty line written as a JSON log record (slog's JSONHandler); a
// line that is not JSON fails t.
func (b *Buffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		out = append(out, rec)
	}
	return out
}

// Count is how many of recs carry the message msg, and the sum of their number field (a
// record without it adds 0).
func Count(recs []map[string]any, msg, field string) (n int, sum float64) {
	for _, r := range recs {
		if r["msg"] == msg {
			n++
			v, _ := r[field].(float64)
			sum += v
		}
	}
	return n, sum
}
