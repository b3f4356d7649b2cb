package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
)

// serve sends req through the instance's router in process, so a test can put on the request
// what an HTTP client would normalise away (header whitespace, remote addresses, zones).
func (ta *testApp) serve(t testing.TB, req *http.Request) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	ta.server.Handler.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header()}
	if raw := rec.Body.Bytes(); len(strings.TrimSpace(string(raw))) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %q", req.Method, req.URL, raw)
		}
	}
	return a
}

func must503(t *testing.T, what string, a answer, code string) {
	t.Helper()
	if a.status != http.StatusServiceUnavailable || a.body["code"] != code || a.header.Get("Retry-After") == "" || a.body["retryAfterSeconds"] == nil {
		t.Fatalf("%s: got %d %v (Retry-After %q), want 503 %s with Retry-After", what, a.status, a.body, a.header.Get("Retry-After"), code)
	}
}

// isPing reports whether cmd is a PING.
func isPing(_ context.Context, cmd redis.Cmder) bool { return cmd.Name() == "ping" }

// ginContext is a Gin context for req, for testing request helpers directly.
func ginContext(req *http.Request) (*gin.Context, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	c.Request = req
	return c, rec
}
