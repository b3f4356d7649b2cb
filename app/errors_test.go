package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
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
		{400, CodeBadRequest}, {413, CodeTooLarge}, {401, CodeUnauthenticated}, {403, admission.CodeForbidden},
		{403, admission.CodeTokenRequired}, {404, CodeNotFound}, {405, CodeMethodNotAllowed}, {409, CodeConflict},
		{409, admission.CodeAlreadyPurchased}, {410, admission.CodeSoldOut}, {410, admission.CodeClosed}, {425, admission.CodeNotOpen},
		{429, admission.CodeRateLimited}, {429, admission.CodeNotAdmitted}, {503, admission.CodeDisabled}, {503, admission.CodeUnavailable},
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
			return e.withDimension("ip").withIdempotencyKey(s).withOpensAt(time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)).
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
	e := newError(http.StatusTooManyRequests, admission.CodeRateLimited, "too many requests").after(2 * time.Second).withDimension("activity")
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

// TestReservedBodyMatchesEncodingJSON: the hand-written 202 body is byte for byte what Gin's
// c.JSON wrote for the map of its fields, and the answer carries Gin's JSON content type.
func TestReservedBodyMatchesEncodingJSON(t *testing.T) {
	tests := []struct{ rid, aid string }{
		{"act-1.0.3.42", "act-1"},
		{"a.1.2.3", "A_b-9"},
		{`we"ird<&>\` + "\u2028\x01\xff", "x"},
	}
	gin.SetMode(gin.ReleaseMode)
	for _, tt := range tests {
		want, err := json.Marshal(gin.H{"reservationId": tt.rid, "activityId": tt.aid, "status": "PENDING"})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendReserved(nil, tt.rid, tt.aid); string(got) != string(want) {
			t.Errorf("appendReserved(%q, %q) = %s, want %s", tt.rid, tt.aid, got, want)
		}
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		writeReserved(c, tt.rid, tt.aid)
		ref := httptest.NewRecorder()
		rc, _ := gin.CreateTestContext(ref)
		rc.JSON(http.StatusAccepted, gin.H{"reservationId": tt.rid, "activityId": tt.aid, "status": "PENDING"})
		if w.Code != ref.Code || w.Body.String() != ref.Body.String() || w.Header().Get("Content-Type") != ref.Header().Get("Content-Type") {
			t.Errorf("writeReserved: %d %q %q, c.JSON: %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String(),
				ref.Code, ref.Header().Get("Content-Type"), ref.Body.String())
		}
	}
}

// TestPanicAfterAnswerWritesNothingMore: a handler that panics after writing its answer gets
// no error body appended to it (the client would read two JSON documents).
func TestPanicAfterAnswerWritesNothingMore(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	a := &api{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := gin.New()
	r.Use(a.recover)
	r.GET("/late", func(c *gin.Context) {
		c.JSON(http.StatusOK, gin.H{"ok": true})
		panic("after the answer")
	})
	r.GET("/early", func(c *gin.Context) { panic("before the answer") })
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/late", nil))
	if w.Code != http.StatusOK || w.Body.String() != `{"ok":true}` {
		t.Fatalf("late panic: %d %q, want 200 {\"ok\":true}", w.Code, w.Body.String())
	}
	w = httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/early", nil))
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), CodeInternal) {
		t.Fatalf("early panic: %d %q, want 500 %s", w.Code, w.Body.String(), CodeInternal)
	}
}

// TestAdmissionErrorMapping: every error of the admission step maps to the error model in one
// place: a rejection with its fields, a fault of the reservation script to OUTCOME_UNKNOWN
// (may have run) or UNAVAILABLE (surely not sent), any other fault to UNAVAILABLE.
func TestAdmissionErrorMapping(t *testing.T) {
	a := &api{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	opens := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		give    error
		want    string // the body
		outcome string // the funnel's name of the outcome of a reservation attempt so answered
	}{
		{"rate limited", &admission.Rejection{Status: 429, Code: admission.CodeRateLimited, Message: "too many requests",
			RetryAfter: 1500 * time.Millisecond, Dimension: "activity"},
			`{"code":"RATE_LIMITED","dimension":"activity","message":"too many requests","retryAfterSeconds":2}`, "rate_activity"},
		{"not open", &admission.Rejection{Status: 425, Code: admission.CodeNotOpen, Message: "the activity is not open yet", OpensAt: opens},
			`{"code":"NOT_OPEN","message":"the activity is not open yet","opensAt":"2026-12-01T08:00:00.000Z"}`, "not_open"},
		{"already purchased, no id", &admission.Rejection{Status: 409, Code: admission.CodeAlreadyPurchased, Message: "the per-user limit is reached"},
			`{"code":"ALREADY_PURCHASED","message":"the per-user limit is reached","reservationId":""}`, "user_limit"},
		{"wrapped rejection", fmt.Errorf("x: %w", &admission.Rejection{Status: 410, Code: admission.CodeSoldOut, Message: "sold out"}),
			`{"code":"SOLD_OUT","message":"sold out"}`, "sold_out"},
		{"script may have run", &admission.Fault{Err: context.DeadlineExceeded, IdempotencyKey: "srv-k"},
			`{"code":"OUTCOME_UNKNOWN","idempotencyKey":"srv-k","message":"the reservation may or may not have been made: retry with the same Idempotency-Key","retryAfterSeconds":1}`, "outcome_unknown"},
		// The key comes with it: a waiting-room pass may be bound to it.
		{"script not sent", &admission.Fault{Err: redis.ErrPoolTimeout, IdempotencyKey: "srv-k"},
			`{"code":"UNAVAILABLE","idempotencyKey":"srv-k","message":"stock service unavailable, retry shortly","retryAfterSeconds":1}`, "unavailable"},
		{"read failed", &admission.Fault{Err: io.EOF},
			`{"code":"UNAVAILABLE","message":"stock service unavailable, retry shortly","retryAfterSeconds":1}`, "unavailable"},
		{"cancelled", &admission.Fault{Err: context.Canceled},
			`{"code":"UNAVAILABLE","message":"request cancelled","retryAfterSeconds":1}`, "unavailable"},
	}
	gin.SetMode(gin.ReleaseMode)
	for _, tt := range tests {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		a.answerError(c, tt.give)
		if got := w.Body.String(); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
		// The same answer to a reservation attempt, which takes its outcome.
		w = httptest.NewRecorder()
		c, _ = gin.CreateTestContext(w)
		var st reqState
		a.refuse(c, &st, tt.give)
		if got := w.Body.String(); got != tt.want {
			t.Errorf("%s, refused attempt: %s, want %s", tt.name, got, tt.want)
		}
		if got := st.fo.funnelName(); got != tt.outcome {
			t.Errorf("%s: outcome %s, want %s", tt.name, got, tt.outcome)
		}
	}
}

// TestFunnelCountsEveryAttempt: an attempt that reached admission is counted as answered
// whatever happened after: one that never got its outcome decided (a panic before answered,
// such as one while reading a replayed reservation) and a replay whose answer a panic's 500
// replaced both count unavailable, so the funnel's answers add up to its attempts. Any other
// outcome is counted as decided (an accepted one sold its units whatever the answer).
func TestFunnelCountsEveryAttempt(t *testing.T) {
	tests := []struct {
		name   string
		give   outcome
		status int
		want   outcome
	}{
		{"panic before the outcome", oNone, http.StatusInternalServerError, oUnavailable},
		{"replay replaced by a panic's 500", oReplayed, http.StatusInternalServerError, oUnavailable},
		{"replay answered", oReplayed, http.StatusOK, oReplayed},
		{"accepted, then a panic", oAccepted, http.StatusInternalServerError, oAccepted},
		{"accepted", oAccepted, http.StatusAccepted, oAccepted},
		{"sold out", oSoldOut, http.StatusGone, oSoldOut},
	}
	for _, tt := range tests {
		st := &reqState{fo: tt.give}
		if got := st.funnelOutcome(tt.status); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got.funnelName(), tt.want.funnelName())
		}
	}
}
