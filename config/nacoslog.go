package config

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	nacoslogger "github.com/nacos-group/nacos-sdk-go/v2/common/logger"
)

// NacosLogger routes nacos-sdk-go's log lines through slog, keeping its warnings and errors
// (msg "nacos client", the text in "detail") and dropping its debug and info lines: the
// library logs every request at info. It satisfies the library's Logger interface.
type NacosLogger struct{ log *slog.Logger }

var _ nacoslogger.Logger = NacosLogger{}

// NewNacosLogger returns a NacosLogger writing to log.
func NewNacosLogger(log *slog.Logger) NacosLogger {
	return NacosLogger{log: log.With("component", "nacos-client")}
}

// InstallNacosLogger makes the library log through log. Creating a nacos-sdk-go client
// replaces the library's logger with a file logger of its own, so the config source and the
// registry install it again after each client they create (under nacosClientMu). Call it once
// at process start too: the library's own default writes coloured text to stdout.
func InstallNacosLogger(log *slog.Logger) { nacoslogger.SetLogger(NewNacosLogger(log)) }

// nacosRoutine are texts the library logs as warnings or errors for normal events: the
// failover and encryption-key cache files it looks for on every read (we run without them)
// and the connection errors of a client being closed. They are logged at debug.
var nacosRoutine = []string{"file doesn't exist", "file not exist", "isRunning:false"}

func (l NacosLogger) emit(level slog.Level, text string) {
	for _, r := range nacosRoutine {
		if strings.Contains(text, r) {
			level = slog.LevelDebug
		}
	}
	if level < slog.LevelWarn || !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, "nacos client", "detail", strings.TrimSpace(text))
}

func (l NacosLogger) Info(args ...any)             { l.emit(slog.LevelInfo, fmt.Sprint(args...)) }
func (l NacosLogger) Warn(args ...any)             { l.emit(slog.LevelWarn, fmt.Sprint(args...)) }
func (l NacosLogger) Error(args ...any)            { l.emit(slog.LevelError, fmt.Sprint(args...)) }
func (l NacosLogger) Debug(args ...any)            { l.emit(slog.LevelDebug, fmt.Sprint(args...)) }
func (l NacosLogger) Infof(f string, args ...any)  { l.emit(slog.LevelInfo, fmt.Sprintf(f, args...)) }
func (l NacosLogger) Warnf(f string, args ...any)  { l.emit(slog.LevelWarn, fmt.Sprintf(f, args...)) }
func (l NacosLogger) Errorf(f string, args ...any) { l.emit(slog.LevelError, fmt.Sprintf(f, args...)) }
func (l NacosLogger) Debugf(f string, args ...any) { l.emit(slog.LevelDebug, fmt.Sprintf(f, args...)) }
