package config

import (
	"context"
	"log/slog"
	"sync"
)

// snapshotSaver writes the last applied Nacos content to the local snapshot file on its own
// goroutine, so that the Reloader's Applied callback never waits for the disk. Only the
// newest content offered to save is written; an older one still pending is dropped.
type snapshotSaver struct {
	path string
	m    *Metrics
	log  *slog.Logger

	mu      sync.Mutex
	pending []byte // guarded by mu
	wake    chan struct{}
}

func newSnapshotSaver(path string, m *Metrics, log *slog.Logger) *snapshotSaver {
	return &snapshotSaver{path: path, m: m, log: log, wake: make(chan struct{}, 1)}
}

// save queues data to be written and returns at once. Safe for concurrent use.
func (s *snapshotSaver) save(data []byte) {
	s.mu.Lock()
	s.pending = data
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run writes queued content until ctx is done, then writes what is still pending and returns.
func (s *snapshotSaver) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			s.flush()
			return
		case <-s.wake:
			s.flush()
		}
	}
}

func (s *snapshotSaver) flush() {
	s.mu.Lock()
	data := s.pending
	s.pending = nil
	s.mu.Unlock()
	if data == nil {
		return
	}
	if err := writeFileAtomic(s.path, data); err != nil {
		s.m.sourceError(SourceCache)
		s.log.Warn("config: writing the local snapshot failed", "path", s.path, "err", err)
	}
}
