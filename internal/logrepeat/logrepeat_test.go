package logrepeat

import (
	"log/slog"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/syncbuf"
)

// countMsg counts the records with msg and sums their "suppressed".
func countMsg(recs []map[string]any, msg string) (n int, suppressed float64) {
	return syncbuf.Count(recs, msg, "suppressed")
}

// TestCounts checks the limiter itself with a fake clock: one line per interval per
// key, the next line carrying the count of the repeats it dropped, and one recovery line.
func TestCounts(t *testing.T) {
	var buf syncbuf.Buffer
	now := time.Unix(1000, 0)
	rl := New(slog.New(slog.NewJSONHandler(&buf, nil)), 10*time.Second)
	rl.SetClock(func() time.Time { return now })
	for i := 0; i < 50; i++ { // 5 s of failures at 10 a second
		rl.Warn("a", "a failed", "i", i)
		now = now.Add(100 * time.Millisecond)
	}
	rl.Warn("b", "b failed")
	now = now.Add(6 * time.Second)
	rl.Warn("a", "a failed")
	rl.OK("a", "a works again")
	rl.OK("b", "b works again")
	rl.OK("a", "a works again")
	recs := buf.Records(t)
	if n, s := countMsg(recs, "a failed"); n != 2 || s != 49 {
		t.Fatalf("%d lines with %v suppressed for a, want 2 with 49", n, s)
	}
	if n, _ := countMsg(recs, "b failed"); n != 1 {
		t.Fatalf("%d lines for b, want 1", n)
	}
	if n, _ := countMsg(recs, "a works again"); n != 1 {
		t.Fatalf("%d recovery lines for a, want 1", n)
	}
	if n, _ := countMsg(recs, "b works again"); n != 1 {
		t.Fatalf("%d recovery lines for b, want 1", n)
	}
}
