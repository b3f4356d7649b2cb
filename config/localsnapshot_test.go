package config

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testwait"
	"golang.org/x/time/rate"
)

// startWorker returns the Nacos fetch worker of NacosSource src without a Nacos client: the
// test hands fetch the content a server would return.
func startWorker(t *testing.T, src *NacosSource, offer func(Payload)) *nacosWorker {
	t.Helper()
	src.defaults()
	w := &nacosWorker{src: src, log: slog.New(slog.DiscardHandler), offer: offer, lim: rate.NewLimiter(rate.Inf, 1)}
	if src.LocalSnapshotPath != "" {
		w.saver = newSnapshotSaver(src.LocalSnapshotPath, nil, w.log)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); w.saver.run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return w
}

// A content that decodes but fails to build (here: a build step refusing the kill switch,
// as a JWT key that cannot be loaded would) must not become the local snapshot, which is
// what a restart during a Nacos outage would run on.
func TestNacosSnapshotSavedOnlyAfterApply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap", "seckill.yaml")
	r := startReloader(t, func(c *Config, m Meta) (*snap, error) {
		if c.KillSwitch {
			return nil, errors.New("cannot build")
		}
		return buildSnap(c, m)
	}, nil)
	w := startWorker(t, &NacosSource{LocalSnapshotPath: path}, r.Offer)
	content := "limits: {user: {rate: 1, burst: 1}}\n"
	get := func() (string, error) { return content, nil }
	ctx := context.Background()

	w.fetch(ctx, get)
	testwait.Eventually(t, time.Second, func() bool { return r.Status().Ready }, "first content applied")
	testwait.Eventually(t, time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return string(b) == content
	}, "snapshot written")

	content = "killSwitch: true\n"
	w.fetch(ctx, get)
	testwait.Eventually(t, time.Second, func() bool { return strings.Contains(r.Status().LastError, "cannot build") }, "refusal")
	// A write racing the refusal would land within this bound.
	testwait.Never(t, 100*time.Millisecond, func() bool {
		b, _ := os.ReadFile(path)
		return string(b) != "limits: {user: {rate: 1, burst: 1}}\n"
	}, "a refused content became the local snapshot")

	content = "limits: {user: {rate: 2, burst: 2}}\n"
	w.fetch(ctx, get)
	testwait.Eventually(t, time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return string(b) == content
	}, "later good content saved")

}

// A fresh instance that finds no content in Nacos (data id missing or deleted) and has no
// local snapshot stays not ready: it never starts on the defaults (header mode, no limits
// set by the operator).
func TestNacosMissingContentFailsClosed(t *testing.T) {
	r := startReloader(t, buildSnap, nil)
	w := startWorker(t, &NacosSource{LocalSnapshotPath: filepath.Join(t.TempDir(), "none.yaml")}, r.Offer)
	for range 3 {
		w.fetch(context.Background(), func() (string, error) { return "", nil })
	}
	testwait.Eventually(t, time.Second, func() bool { return r.Status().LastError != "" }, "refusal recorded")
	if st := r.Status(); st.Ready || r.Current() != nil {
		t.Fatalf("ready without any configuration: %+v", st)
	}
	// A publish afterwards makes it ready.
	w.fetch(context.Background(), func() (string, error) { return "killSwitch: true\n", nil })
	testwait.Eventually(t, time.Second, func() bool { return r.Status().Ready }, "ready after a publish")
}
