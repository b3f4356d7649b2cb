// Command ginhello is the HTTP ceiling of docs/BENCHMARKS.md: Gin in release mode answering
// GET /hello with a small JSON body, nothing else (no middleware, no logging). Whatever the
// seckill service does per request costs on top of this.
//
//	go run ./internal/ginhello --addr 127.0.0.1:18090
//	wrk -t2 -c64 -d10s http://127.0.0.1:18090/hello
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/gin-gonic/gin"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address (loopback)")
	flag.Parse()
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/hello", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"message": "hello"})
	})
	log.Printf("ginhello listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, r))
}
