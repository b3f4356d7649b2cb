package load

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fake is a tiny stand-in for the reservation endpoint: a stock counter, a per-user limit,
// idempotency keys, and optional 429s. It logs every request so tests can compare the load
// tool's view with the server's.
type fake struct {
	mu    sync.Mutex
	stock int64
	limit int

	// rateLimitFirst answers the first n requests of every user 429 with retryAfter.
	rateLimitFirst int
	retryAfter     string
	// always429 answers every request 429 with retryAfter; disabled answers 503 DISABLED (a
	// kill switch) with retryAfter.
	always429 bool
	disabled  bool
	// dropFirst makes the first request of every user fail at the transport level; when
	// reserveThenDrop, it reserves first, so the client cannot know it reserved.
	dropFirst       bool
	reserveThenDrop bool
	// Bugs to detect.
	ignoreLimit   bool // never answers 409
	sameRID       bool // gives every reservation the same id
	negRemaining  bool // GET answers remaining -1
	noRetryHeader bool // 429 without Retry-After
	onReserve     func(rid, user string, qty int)
	// holdUntilPolled makes every reservation wait (at most pollHold) until the poller's
	// second GET of the activity has arrived: the poller sends one GET at a time, so by then
	// its first answer is in its report. Without it a rush that ends before the first answer
	// (a loaded machine) cancels that poll and leaves the remaining checks nothing to judge.
	holdUntilPolled bool
	gets            int           // GETs of the activity received
	polled          chan struct{} // closed at the second GET of the activity

	held   map[string]int    // user -> units
	last   map[string]string // user -> last reservation id
	idem   map[string]string // user + "\x00" + key -> reservation id
	seen   map[string]int    // user -> requests
	seq    int
	log    []fakeReq
	counts map[fakeOutcome]int64
	rids   map[string]string // reservation id -> user
}

// fakeOutcome is one kind of answer of the fake: status and error code.
type fakeOutcome struct {
	status int
	code   string
}

type fakeReq struct {
	user, key string
	at        time.Time // when the handler started
	status    int
}

func newFake(stock int64, limit int) *fake {
	return &fake{
		stock: stock, limit: limit, retryAfter: "1",
		held: map[string]int{}, last: map[string]string{}, idem: map[string]string{},
		seen: map[string]int{}, counts: map[fakeOutcome]int64{}, rids: map[string]string{},
		polled: make(chan struct{}),
	}
}

// pollHold bounds the wait of holdUntilPolled; a poller that never answers makes the run go
// on without it, and the remaining checks then fail with their own reason.
const pollHold = 20 * time.Second

func (f *fake) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/activities/{id}/reservations", f.reserve)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"ready": true}) })
	mux.HandleFunc("GET /api/v1/activities/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		if f.gets++; f.gets == 2 {
			close(f.polled)
		}
		rem := f.stock
		if f.negRemaining {
			rem = -1
		}
		f.mu.Unlock()
		status := "OPEN"
		if rem <= 0 {
			status = "SOLD_OUT"
		}
		writeJSON(w, 200, map[string]any{"activityId": r.PathValue("id"), "status": status, "remaining": rem})
	})
	return mux
}

func (f *fake) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fake) reserve(w http.ResponseWriter, r *http.Request) {
	if f.holdUntilPolled {
		select {
		case <-f.polled:
		case <-time.After(pollHold):
		}
	}
	at := time.Now()
	user, key := r.Header.Get("X-User-Id"), r.Header.Get("Idempotency-Key")
	var body struct{ Quantity int }
	json.NewDecoder(r.Body).Decode(&body)

	f.mu.Lock()
	f.seen[user]++
	n := f.seen[user]
	status, code, rid := 0, "", ""
	drop := false
	retry := false
	ik := user + "\x00" + key
	switch {
	case f.dropFirst && n == 1 && !f.reserveThenDrop:
		drop = true
	case f.disabled:
		status, code, retry = 503, "DISABLED", true
	case f.always429 || n <= f.rateLimitFirst:
		status, code, retry = 429, "RATE_LIMITED", true
	case f.idem[ik] != "":
		status, rid = 200, f.idem[ik]
	case !f.ignoreLimit && f.held[user]+body.Quantity > f.limit:
		status, code, rid = 409, "ALREADY_PURCHASED", f.last[user]
	case f.stock < int64(body.Quantity):
		status, code = 410, "SOLD_OUT"
	default:
		f.stock -= int64(body.Quantity)
		f.held[user] += body.Quantity
		f.seq++
		rid = fmt.Sprintf("%s.0.0.%d", r.PathValue("id"), f.seq)
		if f.sameRID {
			rid = "dup.0.0.1"
		}
		f.idem[ik], f.last[user], f.rids[rid] = rid, rid, user
		status = 202
		if f.onReserve != nil {
			f.onReserve(rid, user, body.Quantity)
		}
		if f.dropFirst && n == 1 {
			drop = true
		}
	}
	f.log = append(f.log, fakeReq{user: user, key: key, at: at, status: status})
	if !drop {
		f.counts[fakeOutcome{status, code}]++
	}
	f.mu.Unlock()

	if drop {
		// Break the connection without an answer: the client sees a transport error.
		hj, _ := w.(http.Hijacker)
		c, _, err := hj.Hijack()
		if err == nil {
			c.Close()
		}
		return
	}
	ans := map[string]any{}
	if rid != "" {
		ans["reservationId"], ans["activityId"], ans["status"] = rid, r.PathValue("id"), "PENDING"
	}
	if code != "" {
		ans["code"], ans["message"] = code, code
	}
	if retry {
		secs, _ := strconv.ParseFloat(f.retryAfter, 64)
		ans["retryAfterSeconds"] = secs
		if !f.noRetryHeader {
			w.Header().Set("Retry-After", f.retryAfter)
		}
	}
	writeJSON(w, status, ans)
}

// snapshot copies the log and counts.
func (f *fake) snapshot() ([]fakeReq, map[fakeOutcome]int64, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	counts := make(map[fakeOutcome]int64, len(f.counts))
	for k, v := range f.counts {
		counts[k] = v
	}
	held := make(map[string]int, len(f.held))
	for k, v := range f.held {
		held[k] = v
	}
	return append([]fakeReq(nil), f.log...), counts, held
}

// byUser groups the log per user, in arrival order.
func byUser(log []fakeReq) map[string][]fakeReq {
	m := map[string][]fakeReq{}
	for _, r := range log {
		m[r.user] = append(m[r.user], r)
	}
	return m
}
