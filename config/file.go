package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FileDebounce is how long FileSource waits after the last change event before re-reading.
const FileDebounce = 50 * time.Millisecond

// FileSource offers the content of a YAML file, at start and after every change. It watches
// the file's directory, so both in-place edits and editors' write-a-temp-file-and-rename
// (and symlink swaps) are seen.
type FileSource struct {
	Path    string
	Log     *slog.Logger // nil: discard
	Metrics *Metrics     // nil: not counted
}

// Run reads the file, offers it, and then offers it again after each change until ctx is
// done (it then returns nil). A missing or unreadable file at start is an error; later read
// errors (e.g. the file briefly missing during a rename) are logged and the next change is
// awaited. offer must not block for long.
func (s *FileSource) Run(ctx context.Context, offer func(Payload)) error {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path, err := filepath.Abs(s.Path)
	if err != nil {
		return fmt.Errorf("config: file source: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("config: file source: %w", err)
	}
	defer w.Close()
	// Watch before the first read so that no change between the two is missed.
	if err := w.Add(filepath.Dir(path)); err != nil {
		return fmt.Errorf("config: file source: watch %s: %w", filepath.Dir(path), err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: file source: %w", err)
	}
	var seq uint64
	seq++
	offer(Payload{Data: data, Source: SourceFile, Seq: seq})
	last := data

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("config: file source: watcher closed")
			}
			_ = ev // any event in the directory may change what Path resolves to
			debounce.Reset(FileDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("config: file source: watcher closed")
			}
			s.Metrics.sourceError(SourceFile)
			log.Warn("config: file watch error", "path", path, "err", err)
			// Overflow may have dropped events: re-read to be safe.
			debounce.Reset(FileDebounce)
		case <-debounce.C:
			data, err := os.ReadFile(path)
			if err != nil {
				s.Metrics.sourceError(SourceFile)
				log.Warn("config: file read failed, keeping the current configuration", "path", path, "err", err)
				continue
			}
			if bytes.Equal(data, last) {
				continue
			}
			last = data
			seq++
			offer(Payload{Data: data, Source: SourceFile, Seq: seq})
		}
	}
}
