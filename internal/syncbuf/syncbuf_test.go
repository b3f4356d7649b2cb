package syncbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestBufferTakesConcurrentWritesWhileRead(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if n, err := fmt.Fprintf(&b, "g%d line %d\n", g, i); err != nil || n == 0 {
					t.Errorf("write: %d %v", n, err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
	if !strings.Contains(b.String(), "g7 line 99\n") {
		t.Fatal("a line is missing")
	}
}

func TestRecordsAndCount(t *testing.T) {
	var b Buffer
	fmt.Fprintln(&b, `{"msg":"a failed","suppressed":3}`)
	fmt.Fprintln(&b, `{"msg":"a failed"}`)
	fmt.Fprintln(&b, `{"msg":"b"}`)
	recs := b.Records(t)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	if n, sum := Count(recs, "a failed", "suppressed"); n != 2 || sum != 3 {
		t.Fatalf("Count = %d, %v; want 2, 3", n, sum)
	}
	var empty Buffer
	if recs := empty.Records(t); len(recs) != 0 {
		t.Fatalf("an empty buffer has %d records", len(recs))
	}
}
