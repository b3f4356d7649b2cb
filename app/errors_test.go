package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// jsonTrickyStrings are strings whose JSON encoding needs every escape encoding/json makes.
var jsonTrickyStrings = []string{
	"", "sold out", `say "no"`, `back\slash`, "<script>alert(1)</script>", "a & b > c < d",
	"ünïcödé ✓ 日本語 🎉", "line\nbreak\ttab\rcr\bbs\fff", "\x00\x01\x1f\x7f",
	"sep\u2028par\u2029end", "bad utf8 \xff\xfe end", "truncated \xe6\x97", "/slash/",
}

// TestAppendJSONStringMatchesEncodingJSON: the hand-written escaper writes what encoding/json
// writes, for tricky strings and for every single byte.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	cases := append([]string(nil), jsonTrickyStrings...)
	for c := 0; c < 256; c++ {
		cases = append(cases, "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// TestErrorBodyMatchesEncodingJSON: every error code, with every fixed field and with the
// rare extra ones, gets the body encoding/json gives the same fields as a map (what Gin's
// AbortWithStatusJSON wrote before), the JSON Content-Type, and Retry-After on 429 and 503.
func TestErrorBodyMatchesEncodingJSON(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	codes := []struct {
		status int
		code   string
	}{
		{400, CodeBadRequest}, {413, CodeTooLarge}, {401, CodeUnauthenticated}, {403, CodeForbidden},
		{403, CodeTokenRequired}, {404, CodeNotFound}, {405, CodeMethodNotAllowed}, {409, CodeConflict},
		{409, CodeAlreadyPurchased}, {410, CodeSoldOut}, {410, CodeClosed}, {425, CodeNotOpen},
		{429, CodeRateLimited}, {429, CodeNotAdmitted}, {503, CodeDisabled}, {503, CodeUnavailable},
		{503, CodeOutcomeUnknown}, {500, CodeInternal},
	}
	type variant struct {
		name  string
		build func(e *apiError, s string) *apiError
		want  func(s string) map[string]any
	}
	variants := []variant{
		{"plain", func(e *apiError, s string) *apiError { return e }, func(string) map[string]any { return map[string]any{} }},
		{"dimension", func(e *apiError, s string) *apiError { return e.withDimension(s) },
			func(s string) map[string]any { return map[string]any{"dimension": s} }},
		{"all fixed", func(e *apiError, s string) *apiError {
			return e.withDimension("ip").withIdempotencyKey(s).withOpensAt("2026-12-01T04:00:00.000Z").
				withPerUserLimit(7).withReservationID(s + "-r")
		}, func(s string) map[string]any {
			return map[string]any{"dimension": "ip", "idempotencyKey": s, "opensAt": "2026-12-01T04:00:00.000Z",
				"perUserLimit": 7, "reservationId": s + "-r"}
		}},
		{"extra", func(e *apiError, s string) *apiError {
			return e.withPerUserLimit(-3).with("ready", false).with("reason", s).with("configSource", "file")
		}, func(s string) map[string]any {
			return map[string]any{"perUserLimit": -3, "ready": false, "reason": s, "configSource": "file"}
		}},
	}
	waits := []time.Duration{0, 300 * time.Millisecond, 2500 * time.Millisecond, 30 * time.Second, 10 * time.Minute}
	for _, cd := range codes {
		for _, v := range variants {
			for i, msg := range jsonTrickyStrings {
				wait := waits[i%len(waits)]
				e := v.build(newError(cd.status, cd.code, msg).after(wait), msg)
				w := httptest.NewRecorder()
				c, _ := gin.CreateTestContext(w)
				writeError(c, e)

				want := v.want(msg)
				want["code"], want["message"] = cd.code, msg
				retry := ""
				if cd.status == http.StatusTooManyRequests || cd.status == http.StatusServiceUnavailable {
					s := 1
					if wait > 0 {
						s = retrySeconds(wait)
					}
					want["retryAfterSeconds"] = s
					retry = strconv.Itoa(s)
				}
				wantBody, err := json.Marshal(want)
				if err != nil {
					t.Fatal(err)
				}
				name := cd.code + "/" + v.name + "/" + strconv.Quote(msg)
				if w.Code != cd.status {
					t.Errorf("%s: status %d, want %d", name, w.Code, cd.status)
				}
				if got := w.Body.String(); got != string(wantBody) {
					t.Errorf("%s:\n got %s\nwant %s", name, got, wantBody)
				}
				if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
					t.Errorf("%s: Content-Type %q", name, ct)
				}
				if got := w.Header().Values("Retry-After"); (retry == "" && len(got) != 0) || (retry != "" && (len(got) != 1 || got[0] != retry)) {
					t.Errorf("%s: Retry-After %q, want %q", name, got, retry)
				}
				if !c.IsAborted() {
					t.Errorf("%s: context not aborted", name)
				}
			}
		}
	}
}

// TestAppendErrorAllocatesNothing: a 429 body with its dimension is written into a buffer with
// no heap allocation.
func TestAppendErrorAllocatesNothing(t *testing.T) {
	e := newError(http.StatusTooManyRequests, CodeRateLimited, "too many requests").after(2 * time.Second).withDimension("activity")
	buf := make([]byte, 0, 512)
	n := testing.AllocsPerRun(100, func() {
		b, err := appendError(buf[:0], e, 2)
		if err != nil || len(b) == 0 {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("appendError: %v allocations, want 0", n)
	}
}

// countingWriter is a ResponseWriter that keeps only the status, with a header map reused
// from one request to the next, so that a handler's own allocations can be counted.
type countingWriter struct {
	h    http.Header
	code int
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *countingWriter) WriteHeader(code int)        { w.code = code }

// allocsPerRequest serves reqs[i] (one per run) through h and returns the heap allocations
// per request; every answer must have status want.
func allocsPerRequest(t *testing.T, h http.Handler, reqs []*http.Request, want int) float64 {
	t.Helper()
	w := &countingWriter{h: http.Header{}}
	i := 0
	n := testing.AllocsPerRun(len(reqs)-1, func() {
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, reqs[i])
		if w.code != want {
			t.Fatalf("request %d: status %d, want %d", i, w.code, want)
		}
		i++
	})
	return n
}

// TestRejectionAllocationsWithinHello is goal 4 of issue 12 in process: a 410 SOLD_OUT and a
// 429 RATE_LIMITED (the activity's leased budget) cost at most 10% more heap allocations in
// the handler chain than Gin hello-world answering a small JSON through the same harness.
func TestRejectionAllocationsWithinHello(t *testing.T) {
	limited := uniq(t, "alloc-rl")
	opts := realOptions(t)
	opts.Roles = "api"
	ta := startApp(t, opts, testConfig+"activities: {"+limited+": {limits: {rate: 1, burst: 1}}}\n")
	soldOut := uniq(t, "alloc-so")
	ta.createActivity(t, soldOut, 1, 1, 1, time.Now().Add(-time.Minute))
	ta.createActivity(t, limited, 1000, 1, 1, time.Now().Add(-time.Minute))
	if a := ta.reserve(t, soldOut, "alloc-buyer", ""); a.status != http.StatusAccepted {
		t.Fatalf("selling the unit: %d %v", a.status, a.body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, ok := ta.inv.Activity(soldOut); ok && v.SoldOut {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sell-out not known locally within 5 s")
		}
		ta.reserve(t, soldOut, "alloc-late", "")
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; ; i++ {
		if a := ta.reserve(t, limited, "alloc-warm-"+strconv.Itoa(i), ""); a.status == http.StatusTooManyRequests {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no 429 within 5 s")
		}
	}

	const runs = 400
	requests := func(method, path string) []*http.Request {
		reqs := make([]*http.Request, runs+1)
		for i := range reqs {
			r := httptest.NewRequest(method, path, nil)
			r.RemoteAddr = "127.0.0.1:40000"
			r.Header.Set("X-User-Id", "alloc-u-"+strconv.Itoa(i))
			reqs[i] = r
		}
		return reqs
	}
	gin.SetMode(gin.ReleaseMode)
	hello := gin.New()
	hello.GET("/hello", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"message": "hello"}) })
	router := ta.api.router()

	helloN := allocsPerRequest(t, hello, requests("GET", "/hello"), http.StatusOK)
	soldN := allocsPerRequest(t, router, requests("POST", "/api/v1/activities/"+soldOut+"/reservations"), http.StatusGone)
	// The budget refills one token a second: keep this run well under a second.
	limitedN := allocsPerRequest(t, router, requests("POST", "/api/v1/activities/"+limited+"/reservations"), http.StatusTooManyRequests)
	t.Logf("heap allocations per request in the handler chain: hello %.1f, 410 %.1f, 429 %.1f", helloN, soldN, limitedN)
	if soldN > helloN*1.1 {
		t.Errorf("410: %.1f allocations per request, over 1.1 × hello's %.1f", soldN, helloN)
	}
	if limitedN > helloN*1.1 {
		t.Errorf("429: %.1f allocations per request, over 1.1 × hello's %.1f", limitedN, helloN)
	}
}
