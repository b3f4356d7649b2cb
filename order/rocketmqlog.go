package order

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// RocketMQLogger routes rocketmq-client-go's log lines through slog, keeping its warnings and
// errors (msg "rocketmq client", the library's text in "detail", its fields as attributes)
// and dropping debug and info: the library logs every offset commit at info, about two lines
// a second. Install it once per process, before the first client is built:
//
//	rlog.SetLogger(order.NewRocketMQLogger(log))
type RocketMQLogger struct{ log *slog.Logger }

var _ rlog.Logger = RocketMQLogger{}

// NewRocketMQLogger returns a RocketMQLogger writing to log.
func NewRocketMQLogger(log *slog.Logger) RocketMQLogger {
	return RocketMQLogger{log: log.With("component", "rocketmq-client")}
}

func (l RocketMQLogger) emit(level slog.Level, msg string, fields map[string]any) {
	if level < slog.LevelWarn || !l.log.Enabled(context.Background(), level) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2+2*len(keys))
	args = append(args, "detail", msg)
	for _, k := range keys {
		v := fields[k]
		if err, ok := v.(error); ok {
			v = err.Error()
		} else if _, ok := v.(fmt.Stringer); ok {
			v = fmt.Sprint(v)
		}
		args = append(args, k, v)
	}
	l.log.Log(context.Background(), level, "rocketmq client", args...)
}

func (l RocketMQLogger) Debug(msg string, fields map[string]any) {
	l.emit(slog.LevelDebug, msg, fields)
}
func (l RocketMQLogger) Info(msg string, fields map[string]any) { l.emit(slog.LevelInfo, msg, fields) }
func (l RocketMQLogger) Warning(msg string, fields map[string]any) {
	l.emit(slog.LevelWarn, msg, fields)
}
func (l RocketMQLogger) Error(msg string, fields map[string]any) {
	l.emit(slog.LevelError, msg, fields)
}

// Fatal logs at error level: the library calls it for states it cannot go on from, and this
// process decides itself whether to stop.
func (l RocketMQLogger) Fatal(msg string, fields map[string]any) {
	l.emit(slog.LevelError, msg, fields)
}

// Level is ignored: the slog handler's level decides.
func (l RocketMQLogger) Level(string) {}

// OutputPath is ignored: lines go to the slog handler.
func (l RocketMQLogger) OutputPath(string) error { return nil }
