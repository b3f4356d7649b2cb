package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
)

func startFileSource(t *testing.T, path string) *Reloader[snap] {
	t.Helper()
	r := startReloader(t, buildSnap, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- (&FileSource{Path: path}).Run(ctx, r.Offer) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("FileSource.Run: %v", err)
		}
	})
	select {
	case <-r.Ready():
	case err := <-errc:
		t.Fatalf("FileSource.Run: %v", err)
	case <-time.After(2 * time.Second):
		t.Fatal("file source: not ready")
	}
	return r
}

func TestFileSourceEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seckill.yaml")
	write := func(doc string) {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("limits: {user: {rate: 1, burst: 1}}")
	r := startFileSource(t, path)
	if r.Status().Source != SourceFile || r.Current().userRate != 1 {
		t.Fatalf("status %+v", r.Status())
	}

	tests := []struct {
		name  string
		doc   string
		apply func(doc string)
	}{
		{"in place", "limits: {user: {rate: 2, burst: 2}}", write},
		{"write temp and rename", "limits: {user: {rate: 3, burst: 3}}", func(doc string) {
			tmp := filepath.Join(dir, ".seckill.yaml.swp")
			if err := os.WriteFile(tmp, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncate then write", "limits: {user: {rate: 4, burst: 4}}", func(doc string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(doc)
			f.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := versionOf(t, tt.doc)
			start := time.Now()
			tt.apply(tt.doc)
			testwait.Eventually(t, time.Second, func() bool { return r.Status().Version == want }, "edit applied")
			t.Logf("applied in %v", time.Since(start))
		})
	}

	// A bad edit keeps the last good snapshot; a fix is picked up.
	before := r.Current()
	write("limits: {user: {rate: -1, burst: 1}}")
	testwait.Eventually(t, time.Second, func() bool { return r.Status().LastError != "" }, "bad edit refused")
	if r.Current() != before {
		t.Fatal("bad edit replaced the snapshot")
	}
	// The file briefly missing is not fatal.
	os.Remove(path)
	time.Sleep(3 * FileDebounce)
	write("limits: {user: {rate: 6, burst: 6}}")
	testwait.Eventually(t, time.Second, func() bool { return r.Current().userRate == 6 }, "recreated file applied")
}

func TestFileSourceMissingAtStart(t *testing.T) {
	err := (&FileSource{Path: filepath.Join(t.TempDir(), "nope.yaml")}).Run(context.Background(), func(Payload) {})
	if err == nil {
		t.Fatal("missing file accepted")
	}
}

// The watched path replaced by something that is not a regular file (a FIFO, whose read would
// block the source forever; a link to /dev/zero, whose read never ends) or by a huge file is
// skipped with a log line: a later good edit is still picked up.
func TestFileSourceRefusesNonRegularAndHugeFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seckill.yaml")
	if err := os.WriteFile(path, []byte("killSwitch: false"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startFileSource(t, path)
	replace := func(make func(tmp string) error) {
		t.Helper()
		tmp := filepath.Join(dir, ".next")
		os.Remove(tmp)
		if err := make(tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * FileDebounce)
	}
	replace(func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) })
	replace(func(tmp string) error { return os.Symlink("/dev/zero", tmp) })
	replace(func(tmp string) error {
		return os.WriteFile(tmp, make([]byte, MaxDocumentBytes+1), 0o644)
	})
	replace(func(tmp string) error { return os.WriteFile(tmp, []byte("killSwitch: true"), 0o644) })
	testwait.Eventually(t, 2*time.Second, func() bool { return r.Current().cfg.KillSwitch }, "good edit after the bad files")
}

// A first payload whose build overran the reload bound (a loaded machine, not a bad edit) is
// tried again: the file does not change, yet the instance becomes ready without an edit.
func TestFirstPayloadRefusedByTimeoutIsRetried(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seckill.yaml")
	if err := os.WriteFile(path, []byte("killSwitch: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var builds atomic.Int32
	r := NewReloader(func(c *Config, meta Meta) (*snap, error) {
		if builds.Add(1) == 1 {
			time.Sleep(300 * time.Millisecond) // the first build overruns the bound
		}
		return buildSnap(c, meta)
	}, nil, nil)
	r.timeout = 100 * time.Millisecond
	r.retryIn.Min = 50 * time.Millisecond
	runFromFile(t, r, path)
	select {
	case <-r.Ready():
	case <-time.After(3 * time.Second):
		t.Fatalf("a first payload refused by the build timeout was never retried: %+v (builds %d)", r.Status(), builds.Load())
	}
	if st := r.Status(); !st.Config.KillSwitch || !strings.Contains(st.LastError, "took longer than") || !st.LastErrorSuperseded {
		t.Fatalf("status after the retry: %+v", st)
	}
}

// A later edit whose build overran the bound (a loaded or paused instance) is tried again too:
// its source offers the same content no more, so the edit (here a kill switch) stayed
// unapplied on this instance while every other applied it.
func TestALaterPayloadRefusedByTimeoutIsRetried(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seckill.yaml")
	if err := os.WriteFile(path, []byte("killSwitch: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var slow atomic.Bool
	r := NewReloader(func(c *Config, meta Meta) (*snap, error) {
		if c.KillSwitch && slow.CompareAndSwap(true, false) {
			time.Sleep(300 * time.Millisecond) // the edit's first build overruns the bound
		}
		return buildSnap(c, meta)
	}, nil, nil)
	r.timeout = 100 * time.Millisecond
	r.retryIn.Min = 50 * time.Millisecond
	runFromFile(t, r, path)
	select {
	case <-r.Ready():
	case <-time.After(3 * time.Second):
		t.Fatal("the first payload was not applied")
	}
	slow.Store(true)
	if err := os.WriteFile(path, []byte("killSwitch: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st := r.Status(); st.Config.KillSwitch {
			if !strings.Contains(st.LastError, "took longer than") || !st.LastErrorSuperseded {
				t.Fatalf("status after the retry: %+v", st)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("an edit refused by the build timeout was never applied: %+v (slow build still pending: %v)", r.Status(), slow.Load())
		}
	}
}

// Each edit's retries start at the shortest delay: an edit that timed out again and again
// left the delay doubled, and a later edit refused by the timeout once (a kill switch in a
// load spike) then waited that long for its first retry.
func TestATimedOutEditsRetriesStartAgainAtTheShortestDelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seckill.yaml")
	if err := os.WriteFile(path, []byte("killSwitch: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var slow sync.Map // content's canary ratio -> builds left to overrun
	r := NewReloader(func(c *Config, meta Meta) (*snap, error) {
		key := c.Version()
		if v, ok := slow.Load(key); ok && v.(int) > 0 {
			slow.Store(key, v.(int)-1)
			time.Sleep(150 * time.Millisecond)
		}
		return buildSnap(c, meta)
	}, nil, nil)
	r.timeout = 50 * time.Millisecond
	r.retryIn.Min, r.retryIn.Max = 50*time.Millisecond, 3*time.Second
	runFromFile(t, r, path)
	select {
	case <-r.Ready():
	case <-time.After(3 * time.Second):
		t.Fatal("the first payload was not applied")
	}
	edit := func(content string, overruns int) time.Duration {
		t.Helper()
		c, err := Decode([]byte(content))
		if err != nil {
			t.Fatal(err)
		}
		slow.Store(c.Version(), overruns)
		start := time.Now()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for deadline := start.Add(10 * time.Second); r.Status().Version != c.Version(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the edit %q was never applied: %+v", content, r.Status())
			}
		}
		return time.Since(start)
	}
	edit("killSwitch: true\n", 5) // retried after 50, 100, 200, 400, 800 ms
	if took := edit("killSwitch: false\n", 1); took > time.Second {
		t.Fatalf("an edit refused once by the timeout was applied after %v: its retry waited the last edit's doubled delay", took)
	}
}

// runFromFile runs r fed by the file at path until the test ends.
func runFromFile(t *testing.T, r *Reloader[snap], path string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { r.Run(ctx); done <- struct{}{} }()
	go func() { (&FileSource{Path: path}).Run(ctx, r.Offer); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
}
