package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
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

// Run reads the file (a regular file of at most MaxDocumentBytes), offers it, and then offers it again after each change until ctx is
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
	data, err := ReadRegularFile(path, MaxDocumentBytes)
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
			data, err := ReadRegularFile(path, MaxDocumentBytes)
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

// ReadRegularFile reads the regular file at path, refusing anything else (a FIFO, whose
// read would block; a device such as /dev/zero, whose read never ends) and any file over max
// bytes. Opening never blocks.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, over the limit of %d", path, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: over the limit of %d bytes", path, max)
	}
	return data, nil
}
