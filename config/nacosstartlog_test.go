package config

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/time/rate"

	"github.com/seckill/seckill/internal/syncbuf"
)

// TestNacosStartLogSaysWhatItFound: a first fetch that Nacos answers with no content logs
// "no content in nacos", never "nacos unreachable" (a fresh data id is not an outage); a
// first fetch that fails logs the failure and "nacos unreachable", and never "no content".
func TestNacosStartLogSaysWhatItFound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		get       func() (string, error)
		want, not string
	}{
		{"answered empty", func() (string, error) { return "", nil }, "no content in nacos", "unreachable"},
		{"unreachable", func() (string, error) { return "", errors.New("connection refused") }, "nacos unreachable", "no content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncbuf.Buffer
			src := &NacosSource{LocalSnapshotPath: filepath.Join(t.TempDir(), "none.yaml")}
			src.defaults()
			w := &nacosWorker{src: src, log: slog.New(slog.NewTextHandler(&out, nil)), offer: func(Payload) {},
				lim: rate.NewLimiter(rate.Inf, 1)}
			// As NacosSource.Run starts: the first fetch, then the snapshot if Nacos did not answer.
			if reached, _ := w.fetch(context.Background(), tc.get); !reached {
				w.offerSnapshot(false)
			}
			if s := out.String(); !strings.Contains(s, tc.want) || strings.Contains(s, tc.not) {
				t.Fatalf("start log %q: want %q, never %q", s, tc.want, tc.not)
			}
		})
	}
}
