package order

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/seckill/seckill/internal/logrepeat"
)

// RedisLogger routes the go-redis client's own log lines ("redis: connection pool: failed to
// dial ...") through slog as warnings with msg "redis client" and the text in "detail", at
// most one line per format string per 10 s (a logrepeat.Log keyed by the format). Install it
// once per process, before the first client is used:
//
//	redis.SetLogger(order.NewRedisLogger(log))
type RedisLogger struct {
	r *logrepeat.Log
}

// NewRedisLogger returns a RedisLogger writing to log.
func NewRedisLogger(log *slog.Logger) *RedisLogger {
	if log == nil {
		log = slog.Default()
	}
	return &RedisLogger{r: logrepeat.New(log.With("component", "redis-client"), 0)}
}

// Printf implements the go-redis logging interface.
func (l *RedisLogger) Printf(_ context.Context, format string, v ...any) {
	detail := strings.TrimSpace(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
	l.r.Warn(format, "redis client", "detail", detail)
}
