package app

import (
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/order"
)

// NewLogger returns the process's one log stream: JSON lines on w from level up.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// InstallLibraryLoggers routes the client libraries that log through package-level loggers of
// their own into log, so the process writes one JSON stream: go-redis (repeats rate-limited),
// rocketmq-client-go (logrus text otherwise, an info line per offset commit) and nacos-sdk-go
// (zap text with ANSI colours otherwise); the latter two at warn and above only. Call it once,
// before the first client is built.
func InstallLibraryLoggers(log *slog.Logger) {
	redis.SetLogger(order.NewRedisLogger(log))
	rlog.SetLogger(order.NewRocketMQLogger(log))
	config.InstallNacosLogger(log)
}

// version is the release and revision the VCS revision, set at link time (make build, and the
// Dockerfile, stamp both: go build -ldflags "-X github.com/seckill/seckill/app.version=v1.2.3
// -X github.com/seckill/seckill/app.revision=<commit>"); empty: what the Go tool stamped,
// "(devel)" and the checkout's commit for a go build in a checkout, no revision in a build
// context without .git (a Docker build).
var version, revision string

// BuildInfo is what was built: the release, the VCS revision and time the Go tool stamped
// ("" when it stamped none, e.g. go run), whether the tree had local changes, the Go version.
type BuildInfo struct {
	Version, Revision, Time, GoVersion string
	Modified                           bool
}

// Build reads the binary's build information.
func Build() BuildInfo {
	b := BuildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "unknown"
		}
		return b
	}
	if b.Version == "" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Revision == "" {
				b.Revision = s.Value
			}
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the line --version prints.
func (b BuildInfo) String() string {
	s := "seckill " + b.Version
	if b.Revision != "" {
		s += " revision " + b.Revision
		if b.Modified {
			s += " (modified)"
		}
	}
	if b.Time != "" {
		s += " built from a commit of " + b.Time
	}
	return s + " " + b.GoVersion
}

// registerBuildInfo exports seckill_build_info{version,revision,goversion} 1.
func registerBuildInfo(reg prometheus.Registerer, b BuildInfo) error {
	rev := b.Revision
	if b.Modified {
		rev += "-modified"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seckill_build_info", Help: "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": rev, "goversion": b.GoVersion},
	})
	g.Set(1)
	return reg.Register(g)
}
