package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/seckill/seckill/cmd/seckill-load/driver"
	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
	"github.com/seckill/seckill/internal/syncbuf"
)

// hangBound is how long a run may take before the test calls it a hang.
const hangBound = 60 * time.Second

func run(t *testing.T, cfg scenario.Config) *report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	defer cancel()
	if cfg.Activity == "" {
		cfg.Activity = "flash-1"
	}
	if cfg.Duration == 0 && cfg.MaxRequests == 0 {
		cfg.Duration = hangBound / 2
	}
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if time.Since(start) >= hangBound {
		t.Fatalf("Run took %v: hang", time.Since(start))
	}
	return rep
}

func wantCheck(t *testing.T, rep *report.Report, name, status string) {
	t.Helper()
	c, ok := rep.Check(name)
	if !ok {
		t.Fatalf("no check %s in %+v", name, rep.Checks)
	}
	if c.Status != status {
		t.Fatalf("check %s = %s (%s), want %s", name, c.Status, c.Detail, status)
	}
}

// assertCountsMatch compares the tool's outcomes with the server's, exactly.
func assertCountsMatch(t *testing.T, rep *report.Report, f *fake) {
	t.Helper()
	log, counts, _ := f.snapshot()
	var server int64
	for k, n := range counts {
		server += n
		if got := rep.OutcomeCount(k.status, k.code); got != n {
			t.Errorf("outcome %d %q: tool %d, server %d", k.status, k.code, got, n)
		}
	}
	var httpAnswers int64
	for _, o := range rep.Outcomes {
		if o.Status != 0 {
			httpAnswers += o.Count
		}
	}
	if httpAnswers != server {
		t.Errorf("tool counted %d HTTP answers, server sent %d", httpAnswers, server)
	}
	if rep.Requests != int64(len(log)) {
		t.Errorf("tool reports %d requests, server received %d", rep.Requests, len(log))
	}
}

func TestRushCountsMatchServerExactly(t *testing.T) {
	f := newFake(50, 1)
	f.rateLimitFirst = 1 // every user's first request is 429 Retry-After: 1
	srv := f.serve(t)
	const maxWait = 50 * time.Millisecond
	rep := run(t, scenario.Config{
		Targets: []string{srv.URL}, Users: 200, Bots: 0.1, Connections: 16, Retry: true,
		MaxRetryWait: maxWait, Stock: 50, PerUserLimit: 1,
		PollEvery: 20 * time.Millisecond, Ramp: 20 * time.Millisecond,
	})

	assertCountsMatch(t, rep, f)
	log, _, held := f.snapshot()
	if rep.Reservations.Distinct != 50 || rep.Reservations.Units != 50 || rep.Users.WithReservation != 50 {
		t.Errorf("reservations %+v, users with one %d; want 50 each", rep.Reservations, rep.Users.WithReservation)
	}
	if len(held) != rep.Users.WithReservation {
		t.Errorf("server has %d buyers, tool %d", len(held), rep.Users.WithReservation)
	}
	if rep.Users.Bots != 20 || rep.Config.Bots != 20 {
		t.Errorf("bots %d, want 20", rep.Users.Bots)
	}
	if rep.Users.Ended[report.EndUnfinished] != 0 {
		t.Errorf("%d users unfinished; every user should end with 202, 409 or 410", rep.Users.Ended[report.EndUnfinished])
	}
	for _, name := range []string{"client.stock", "client.per_user_limit", "client.duplicate_reservation",
		"client.protocol", "remaining.never_negative", "remaining.zero_after_sold_out"} {
		wantCheck(t, rep, name, report.Pass)
	}
	if !rep.Passed || rep.Remaining.Min != 0 {
		t.Errorf("passed %v, remaining min %d", rep.Passed, rep.Remaining.Min)
	}
	if l := rep.Latency[report.ClassAccepted]; l.Count != uint64(rep.Reservations.Answers2xx) || l.P50Ms <= 0 || l.MaxMs < l.P99Ms {
		t.Errorf("accepted latency %+v", l)
	}
	if rep.Latency[report.ClassRejected+"/RATE_LIMITED"].Count != uint64(rep.OutcomeCount(429, "RATE_LIMITED")) {
		t.Errorf("latency of rejected/RATE_LIMITED counts %d", rep.Latency[report.ClassRejected+"/RATE_LIMITED"].Count)
	}

	bots := map[string]bool{}
	for _, id := range driver.New(scenario.Config{RunID: rep.RunID, Users: 200, Bots: 0.1}).Bots() {
		bots[id] = true
	}
	for user, reqs := range byUser(log) {
		for i := 1; i < len(reqs); i++ {
			prev, cur := reqs[i-1], reqs[i]
			switch prev.status {
			case 429:
				if cur.key != prev.key {
					t.Fatalf("%s retried a 429 with key %q, first %q", user, cur.key, prev.key)
				}
				if gap := cur.at.Sub(prev.at); !bots[user] && gap < maxWait {
					t.Fatalf("%s retried %v after a 429 with Retry-After 1 s capped at %v", user, gap, maxWait)
				}
			case 202, 200:
				if cur.key == prev.key {
					t.Fatalf("%s reused key %q for a new attempt", user, cur.key)
				}
			}
		}
	}
}

func TestRetryAfterIsHonouredUpToTheCap(t *testing.T) {
	tests := []struct {
		retryAfter string
		maxWait    time.Duration
		want       time.Duration
	}{
		{"1", 5 * time.Second, time.Second},
		{"30", 150 * time.Millisecond, 150 * time.Millisecond},
	}
	for _, tt := range tests {
		f := newFake(10, 1)
		f.rateLimitFirst, f.retryAfter = 2, tt.retryAfter
		srv := f.serve(t)
		rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 2, Connections: 2, Retry: true, MaxRetryWait: tt.maxWait, PollEvery: -1})
		log, _, _ := f.snapshot()
		for user, reqs := range byUser(log) {
			if len(reqs) != 3 || reqs[2].status != 202 {
				t.Fatalf("%s: %d requests, want 429, 429, 202", user, len(reqs))
			}
			for i := 1; i < 3; i++ {
				if gap := reqs[i].at.Sub(reqs[i-1].at); gap < tt.want {
					t.Errorf("Retry-After %s, cap %v: retry after %v, want >= %v", tt.retryAfter, tt.maxWait, gap, tt.want)
				}
				if reqs[i].key != reqs[0].key {
					t.Errorf("retry with key %q, want %q", reqs[i].key, reqs[0].key)
				}
			}
		}
		if rep.Reservations.Distinct != 2 {
			t.Errorf("reservations %d, want 2", rep.Reservations.Distinct)
		}
	}
}

func TestBotsHammerWhileRealUsersWait(t *testing.T) {
	f := newFake(10, 1)
	f.always429, f.retryAfter = true, "60"
	srv := f.serve(t)
	// Real users must wait 60 s after their first 429: in a 300 ms run they send one request
	// each. Bots ignore Retry-After and keep sending. The run must end on time, not wait.
	rep := run(t, scenario.Config{
		Targets: []string{srv.URL}, Users: 20, Bots: 0.5, Connections: 20, Retry: true,
		MaxRetryWait: time.Minute, Duration: 300 * time.Millisecond, PollEvery: -1,
	})
	log, _, _ := f.snapshot()
	bots := map[string]bool{}
	for _, id := range driver.New(scenario.Config{RunID: rep.RunID, Users: 20, Bots: 0.5}).Bots() {
		bots[id] = true
	}
	nBots := 0
	for user, reqs := range byUser(log) {
		if bots[user] {
			nBots++
			if len(reqs) < 2 {
				t.Errorf("bot %s sent %d requests, want many", user, len(reqs))
			}
		} else if len(reqs) != 1 {
			t.Errorf("real user %s sent %d requests within a 60 s Retry-After", user, len(reqs))
		}
	}
	if nBots != 10 {
		t.Errorf("%d bots sent requests, want 10", nBots)
	}
	if rep.Users.Ended[report.EndUnfinished] != 20 {
		t.Errorf("unfinished users %d, want 20", rep.Users.Ended[report.EndUnfinished])
	}
	assertCountsMatch(t, rep, f)
}

func TestMaxRequestsBoundsTheRun(t *testing.T) {
	f := newFake(1000, 1)
	f.always429, f.retryAfter = true, "0"
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 100, Bots: 1, Connections: 8, Retry: true, MaxRequests: 37, PollEvery: -1})
	log, _, _ := f.snapshot()
	if len(log) != 37 || rep.Requests != 37 {
		t.Fatalf("server got %d requests, tool reports %d, want 37", len(log), rep.Requests)
	}
}

func TestNoRetryGivesUp(t *testing.T) {
	f := newFake(10, 1)
	f.always429 = true
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 5, Connections: 5, Retry: false, PollEvery: -1})
	if rep.Requests != 5 || rep.Users.Ended[report.EndGaveUp] != 5 {
		t.Fatalf("requests %d, gave up %d; want 5 and 5", rep.Requests, rep.Users.Ended[report.EndGaveUp])
	}
}

func TestTransportErrorsAreRetriedWithTheSameKey(t *testing.T) {
	for _, reserveFirst := range []bool{false, true} {
		f := newFake(100, 1)
		f.dropFirst, f.reserveThenDrop = true, reserveFirst
		srv := f.serve(t)
		rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 10, Connections: 4, Retry: true,
			MaxRetryWait: 20 * time.Millisecond, Stock: 100, PerUserLimit: 1, PollEvery: -1})
		log, _, held := f.snapshot()
		for user, reqs := range byUser(log) {
			if len(reqs) != 2 || reqs[0].key != reqs[1].key {
				t.Fatalf("reserveFirst=%v: %s: %+v, want one retry with the same key", reserveFirst, user, reqs)
			}
		}
		// When the dropped request had reserved, the retry is a replay (200) of the same id.
		wantStatus := 202
		if reserveFirst {
			wantStatus = 200
		}
		if got := rep.OutcomeCount(wantStatus, ""); got != 10 {
			t.Errorf("reserveFirst=%v: %d answers %d, want 10", reserveFirst, got, wantStatus)
		}
		var errs int64
		for _, o := range rep.Outcomes {
			if o.Status == 0 {
				errs += o.Count
			}
		}
		if errs != 10 || rep.Latency[report.ClassError].Count != 10 {
			t.Errorf("transport errors %d, want 10", errs)
		}
		if rep.Reservations.Distinct != len(held) || rep.Reservations.UnresolvedAttempts != 0 || !rep.Passed {
			t.Errorf("reserveFirst=%v: distinct %d, server %d, unresolved %d, passed %v",
				reserveFirst, rep.Reservations.Distinct, len(held), rep.Reservations.UnresolvedAttempts, rep.Passed)
		}
	}
}

func TestBrokenServersFailTheChecks(t *testing.T) {
	tests := []struct {
		name  string
		bug   func(*fake)
		check string
	}{
		{"over the per-user limit", func(f *fake) { f.ignoreLimit = true }, "client.per_user_limit"},
		{"one id for every reservation", func(f *fake) { f.sameRID = true }, "client.duplicate_reservation"},
		{"negative remaining", func(f *fake) { f.negRemaining = true }, "remaining.never_negative"},
		{"429 without Retry-After", func(f *fake) { f.rateLimitFirst, f.noRetryHeader = 1, true }, "client.protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(30, 1)
			f.holdUntilPolled = true
			tt.bug(f)
			srv := f.serve(t)
			rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 10, Attempts: 3, Connections: 4, Retry: true,
				MaxRetryWait: 10 * time.Millisecond, Stock: 30, PerUserLimit: 1, PollEvery: 10 * time.Millisecond})
			wantCheck(t, rep, tt.check, report.Fail)
			if rep.Passed {
				t.Fatal("report passed with a broken server")
			}
			// The remaining check fails for the bug, not for want of an answer.
			if f.negRemaining && (!rep.Remaining.Observed || rep.Remaining.Min != -1) {
				t.Fatalf("remaining report %+v, want -1 observed", rep.Remaining)
			}
		})
	}
	// The same run against a correct server passes: the failures above come from the bugs.
	// The rush is short (10 users, no sell-out, so no wait for remaining 0): the fake holds
	// it until the poller has had an answer, whatever the load of the machine.
	f := newFake(30, 1)
	f.holdUntilPolled = true
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 10, Attempts: 3, Connections: 4, Retry: true,
		Stock: 30, PerUserLimit: 1, PollEvery: 10 * time.Millisecond})
	if !rep.Passed {
		t.Fatalf("correct server failed: %+v", rep.Checks)
	}
	if rep.Users.Ended[report.EndLimit] != 10 {
		t.Errorf("users ended at the limit %d, want 10 (second attempt gets 409)", rep.Users.Ended[report.EndLimit])
	}
}

func TestSeveralTargetsShareTheLoad(t *testing.T) {
	f := newFake(40, 1)
	a, b := f.serve(t), f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{a.URL, b.URL}, Users: 100, Connections: 8, Stock: 40, PerUserLimit: 1, PollEvery: 10 * time.Millisecond})
	assertCountsMatch(t, rep, f)
	if len(rep.Targets) != 2 || rep.Targets[0].Requests == 0 || rep.Targets[1].Requests == 0 ||
		rep.Targets[0].Requests+rep.Targets[1].Requests != rep.Requests {
		t.Fatalf("targets %+v for %d requests", rep.Targets, rep.Requests)
	}
	if rep.Reservations.Distinct != 40 || !rep.Passed {
		t.Fatalf("distinct %d passed %v", rep.Reservations.Distinct, rep.Passed)
	}
}

func TestCreatePostsTheActivity(t *testing.T) {
	f := newFake(5, 2)
	var mu sync.Mutex
	var got map[string]any
	var auth string
	mux := http.NewServeMux()
	mux.Handle("/api/", f.handler())
	mux.Handle("/readyz", f.handler())
	mux.HandleFunc("POST /admin/v1/activities", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auth = r.Header.Get("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		writeJSON(w, 201, got)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	run(t, scenario.Config{Targets: []string{srv.URL}, Activity: "new-1", Users: 3, Create: true, AdminToken: "s3cret",
		Stock: 5, PerUserLimit: 2, Shards: 4, OpensIn: -time.Second, PollEvery: -1})
	mu.Lock()
	defer mu.Unlock()
	if auth != "Bearer s3cret" {
		t.Errorf("Authorization %q", auth)
	}
	opens, _ := got["opensAt"].(string)
	if _, err := time.Parse(time.RFC3339, opens); err != nil || got["activityId"] != "new-1" ||
		got["stock"] != 5.0 || got["perUserLimit"] != 2.0 || got["shards"] != 4.0 {
		t.Errorf("posted %v", got)
	}
	got = nil
	mu.Unlock()

	// Without --opens-in no opensAt is sent: a second run re-posts the same definition, which
	// the service answers 200 (the existing opening stands), never 409.
	run(t, scenario.Config{Targets: []string{srv.URL}, Activity: "new-1", Users: 3, Create: true, AdminToken: "s3cret",
		Stock: 5, PerUserLimit: 2, Shards: 4, PollEvery: -1})
	mu.Lock()
	if _, sent := got["opensAt"]; sent {
		t.Errorf("opensAt sent without --opens-in: %v", got)
	}

	// A refused creation stops the run before the rush.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			writeJSON(w, 200, map[string]any{"ready": true})
			return
		}
		writeJSON(w, 401, map[string]string{"code": "UNAUTHENTICATED"})
	}))
	t.Cleanup(bad.Close)
	_, err := Run(context.Background(), scenario.Config{Targets: []string{bad.URL}, Activity: "a", Users: 1, MaxRequests: 1,
		Create: true, AdminToken: "x", Stock: 1, PerUserLimit: 1})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Run with a refused create: %v", err)
	}
}

func TestJSONReportFieldNames(t *testing.T) {
	f := newFake(3, 1)
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 10, Stock: 3, PerUserLimit: 1, PollEvery: 10 * time.Millisecond})
	path := filepath.Join(t.TempDir(), "report.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"runId", "activityId", "startedAt", "durationSeconds", "requests", "throughputRps",
		"targets", "config", "outcomes", "latency", "users", "reservations", "remaining", "orders", "checks", "passed"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	acc, _ := m["latency"].(map[string]any)["accepted"].(map[string]any)
	for _, k := range []string{"count", "p50Ms", "p95Ms", "p99Ms", "maxMs"} {
		if _, ok := acc[k]; !ok {
			t.Errorf("latency.accepted lacks %q: %v", k, acc)
		}
	}
	if m["passed"] != true || m["reservations"].(map[string]any)["distinct"] != 3.0 {
		t.Errorf("passed %v, reservations %v", m["passed"], m["reservations"])
	}
	var text strings.Builder
	rep.WriteText(&text)
	skipped := 0
	for _, c := range rep.Checks {
		if c.Status == report.Skip {
			skipped++
		}
	}
	verdict := "PASS: every invariant held"
	if skipped > 0 { // a PASS never hides the checks it could not make
		verdict = fmt.Sprintf("PASS, %d skipped: every invariant checked held", skipped)
	}
	for _, want := range []string{"outcomes:", "202", "410", "SOLD_OUT", "latency (ms):", "accepted", "PASS client.stock", verdict} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestProgressLines(t *testing.T) {
	f := newFake(1000, 1)
	f.always429, f.retryAfter = true, "0.01"
	srv := f.serve(t)
	pr, pw := io.Pipe()
	defer pr.Close()
	lines := make(chan string, 1)
	go func() {
		b := make([]byte, 4096)
		n, _ := pr.Read(b)
		lines <- string(b[:n])
		io.Copy(io.Discard, pr)
	}()
	run(t, scenario.Config{Targets: []string{srv.URL}, Users: 4, Retry: true, Duration: 300 * time.Millisecond,
		Progress: 50 * time.Millisecond, Log: pw, PollEvery: -1})
	pw.Close()
	line := <-lines
	for _, want := range []string{"requests=", "rps=", "2xx=", "410=", "429=", "disabled=", "errors="} {
		if !strings.Contains(line, want) {
			t.Fatalf("progress line %q lacks %q", line, want)
		}
	}
}

func TestHeadersChannelAndJWT(t *testing.T) {
	f := newFake(10, 1)
	inner := f.handler()
	var mu sync.Mutex
	var problems []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			user := r.Header.Get("X-User-Id")
			tok, err := jwt.Parse(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
				func(*jwt.Token) (any, error) { return []byte("k3y"), nil },
				jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired())
			mu.Lock()
			if err != nil {
				problems = append(problems, "jwt: "+err.Error())
			} else if sub, _ := tok.Claims.GetSubject(); sub != user {
				problems = append(problems, "sub "+sub+" for user "+user)
			}
			if r.Header.Get("X-Channel") != "app" || r.Header.Get("Content-Type") != "application/json" {
				problems = append(problems, "headers "+r.Header.Get("X-Channel")+" "+r.Header.Get("Content-Type"))
			}
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 5, Channel: "app", JWTSecret: "k3y", Quantity: 1, PollEvery: -1})
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 || rep.Reservations.Distinct != 5 {
		t.Fatalf("problems %v, reservations %d", problems, rep.Reservations.Distinct)
	}
}

func TestQuantityCountsUnits(t *testing.T) {
	f := newFake(10, 2)
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 8, Quantity: 2, Stock: 10, PerUserLimit: 2, PollEvery: -1})
	if rep.Reservations.Distinct != 5 || rep.Reservations.Units != 10 || rep.OutcomeCount(410, "SOLD_OUT") != 3 {
		t.Fatalf("reservations %+v, outcomes %+v", rep.Reservations, rep.Outcomes)
	}
	wantCheck(t, rep, "client.stock", report.Pass)
	wantCheck(t, rep, "client.per_user_limit", report.Pass)

	// The same 2-unit reservations against a limit of 1 break it.
	f = newFake(10, 2)
	srv = f.serve(t)
	rep = run(t, scenario.Config{Targets: []string{srv.URL}, Users: 2, Quantity: 2, Stock: 10, PerUserLimit: 1, PollEvery: -1})
	wantCheck(t, rep, "client.per_user_limit", report.Fail)
}

// TestShortRunShowsProgressAndWhyItEnded: a rush shorter than the progress period still
// writes a progress line, at its end, and the line and the report say why it ended before
// --duration (every user was done), by --duration, or by --max-requests.
func TestShortRunShowsProgressAndWhyItEnded(t *testing.T) {
	tests := []struct {
		name     string
		cfg      scenario.Config
		fake     func(*fake)
		want     string
		wantLine string
	}{
		{name: "users done", cfg: scenario.Config{Users: 5, Duration: time.Minute},
			want: report.EndedUsersDone, wantLine: "(end: every user was done before --duration 1m0s; more --users or --attempts make a longer run)"},
		{name: "duration", cfg: scenario.Config{Users: 2, Duration: 300 * time.Millisecond},
			fake: func(f *fake) { f.always429, f.retryAfter = true, "0.01" }, want: report.EndedDuration, wantLine: "(end: --duration 300ms passed)"},
		{name: "max requests", cfg: scenario.Config{Users: 2, MaxRequests: 20},
			fake: func(f *fake) { f.always429, f.retryAfter = true, "0.01" }, want: report.EndedMaxRequests, wantLine: "(end: --max-requests sent)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(100, 1)
			if tt.fake != nil {
				tt.fake(f)
			}
			srv := f.serve(t)
			var log syncbuf.Buffer
			cfg := tt.cfg
			cfg.Targets, cfg.Retry, cfg.Progress, cfg.Log, cfg.PollEvery = []string{srv.URL}, true, time.Hour, &log, -1
			rep := run(t, cfg)
			if rep.Ended != tt.want {
				t.Errorf("ended %q, want %q", rep.Ended, tt.want)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "requests=") || !strings.HasSuffix(lines[0], tt.wantLine) {
				t.Fatalf("progress %q: want one line ending %q", log.String(), tt.wantLine)
			}
			if want := fmt.Sprintf("requests=%d ", rep.Requests); !strings.Contains(lines[0], want) {
				t.Errorf("last progress line %q lacks %q", lines[0], want)
			}
			var text strings.Builder
			rep.WriteText(&text)
			if !strings.Contains(text.String(), "  ended: ") {
				t.Errorf("text report names no end:\n%s", text.String())
			}
		})
	}
}

// TestDisabledIsNotAnError: 503 DISABLED (the activity's kill switch) is an answer of the
// service, counted apart in the progress line, not among the errors.
func TestDisabledIsNotAnError(t *testing.T) {
	f := newFake(10, 1)
	f.disabled, f.retryAfter = true, "0.01"
	srv := f.serve(t)
	var log syncbuf.Buffer
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 3, Retry: true, MaxRequests: 30,
		Progress: time.Hour, Log: &log, PollEvery: -1})
	n := rep.OutcomeCount(503, "DISABLED")
	if n == 0 {
		t.Fatalf("no 503 DISABLED counted: %+v", rep.Outcomes)
	}
	if want := fmt.Sprintf("disabled=%d errors=0", n); !strings.Contains(log.String(), want) {
		t.Fatalf("progress %q lacks %q", log.String(), want)
	}
}

// A second run against an activity an earlier run sold out measures nothing (every answer a
// 410): the tool refuses it with the reason instead of reporting PASS.
func TestRunRefusesASoldOutActivity(t *testing.T) {
	f := newFake(5, 1)
	srv := f.serve(t)
	cfg := scenario.Config{Targets: []string{srv.URL}, Activity: "flash-1", Users: 20, Connections: 4, Stock: 5, PerUserLimit: 1, Duration: hangBound / 2}
	run(t, cfg)
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "nothing left to sell") {
		t.Fatalf("a second run on the sold-out activity: %v, want a refusal naming it", err)
	}
}
