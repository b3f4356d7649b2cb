// Package syncbuf has Buffer, the one text buffer that goroutines write to (a logger, a
// process's output) while a test reads it. It imports nothing of the service.
package syncbuf

import (
	"strings"
	"sync"
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
