package inventory

import (
	"strconv"
	"strings"
	"testing"
)

// The order of two generation marks (rollback.go): what a caller that recorded known does on
// a shard found holding got.
func TestMarkAfter(t *testing.T) {
	for _, c := range []struct {
		known, got string
		inHistory  bool
		want       markOrder
	}{
		{"g", "g", false, markLater},
		{"g", "g#1.tX.1", false, markLater},         // the generation itself: every mark descends
		{"g#2", "g#3.tY.1", false, markLater},       // a mark of the release before: counts decide
		{"g#2", "g#1.tY.1", false, markLost},        // lower
		{"g#1.tX.1", "g#1.tY.1", true, markLost},    // the same count by another debit: X's was lost
		{"g#1.tX.1", "g#2.tY.1", true, markLater},   // raised since X's (in the history)
		{"g#1.tX.1", "g#2.tY.1", false, markUnsure}, // not read: the history decides
		{"g#1.tX.1", "g", true, markLost},
		{"g#1.tX.1", "rolledback", false, markForeign},
		{"g#1.tX.1", "h#4.tX.9", false, markForeign},
	} {
		if got := markAfter(c.known, c.got, c.inHistory); got != c.want {
			t.Errorf("markAfter(%q, %q, %v) = %d, want %d", c.known, c.got, c.inHistory, got, c.want)
		}
	}
}

// A raised mark's parts come back as the debit wrote them (inventory_transfer.lua:
// "<gen>#<n>.<transfer id>"), whatever the id holds, and no input makes splitMark fail.
func FuzzSplitMark(f *testing.F) {
	for _, s := range []string{"", "g", "g#1", "g#0", "g#-1", "g#2.t1.ab.3", "g#x.y", "#3.a", "g#3.", "g#3#4.x.y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, m string) {
		base, n, id := splitMark(m)
		if n < 0 {
			t.Fatalf("splitMark(%q): count %d", m, n)
		}
		if n == 0 && (base != m || id != "") {
			t.Fatalf("splitMark(%q) = %q, 0, %q: a mark without a count is its own generation", m, base, id)
		}
		if n > 0 && !strings.Contains(base, "#") {
			want := base + "#" + strconv.FormatInt(n, 10)
			if id != "" {
				want += "." + id
			}
			if b2, n2, id2 := splitMark(want); b2 != base || n2 != n || id2 != id {
				t.Fatalf("splitMark(%q) = %q %d %q, its re-join %q splits as %q %d %q", m, base, n, id, want, b2, n2, id2)
			}
		}
	})
}
