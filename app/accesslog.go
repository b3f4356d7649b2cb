package app

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
)

// accessLog returns a middleware that logs one info line per request (msg "http request"):
// listener, method, route pattern (never the raw path: it carries ids), status, duration in
// seconds, bytes written and the connection's remote address. It is off unless
// SECKILL_ACCESS_LOG is set: a flash crowd would write a line per rejected request.
func accessLog(log *slog.Logger, listener string) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		log.Info("http request", "listener", listener, "method", c.Request.Method, "route", route,
			"status", c.Writer.Status(), "seconds", time.Since(start).Seconds(),
			"bytes", c.Writer.Size(), "remote", c.Request.RemoteAddr)
	}
}
