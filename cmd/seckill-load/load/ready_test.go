package load

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/scenario"
)

// TestDeadOrUnreadyTargetStopsTheRun: nothing listening, or an instance that is not ready,
// is an error before the rush, not a report of transport errors that "passes".
func TestDeadOrUnreadyTargetStopsTheRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, map[string]any{"ready": false, "reason": "no configuration loaded"})
	}))
	t.Cleanup(unready.Close)
	f := newFake(10, 1)
	good := f.serve(t)
	tests := []struct {
		name    string
		targets []string
		want    string
	}{
		{"nothing listening", []string{dead}, "is not answering"},
		{"not ready", []string{unready.URL}, "is not ready: GET /readyz answered 503"},
		{"second target dead", []string{good.URL, dead}, dead + " is not answering"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			rep, err := Run(context.Background(), scenario.Config{Targets: tt.targets, Activity: "a", Users: 5, Duration: 10 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: report %v, error %v; want an error containing %q", rep != nil, err, tt.want)
			}
			if took := time.Since(start); took > 6*time.Second {
				t.Fatalf("took %v to give up, want a fast failure", took)
			}
		})
	}
	if got, _, _ := f.snapshot(); len(got) != 0 {
		t.Fatalf("%d reservation requests sent although a target was dead", len(got))
	}
}

// TestMostlyRateLimitedRunWarns: a run whose answers are mostly 429 says so in the report, so a
// PASS of the invariants is not read as a measured reservation path; a normal run does not.
func TestMostlyRateLimitedRunWarns(t *testing.T) {
	f := newFake(10, 1)
	f.always429 = true
	srv := f.serve(t)
	rep := run(t, scenario.Config{Targets: []string{srv.URL}, Users: 20, Connections: 4, Retry: false, PollEvery: -1})
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "100% of requests (20 of 20) were rate-limited") {
		t.Fatalf("warnings %q, want one about rate limiting", rep.Warnings)
	}
	var out bytes.Buffer
	rep.WriteText(&out)
	if !strings.Contains(out.String(), "WARNING: 100% of requests") || !strings.Contains(out.String(), "config/loadtest.yaml") {
		t.Fatalf("text report lacks the warning:\n%s", out.String())
	}

	ok := newFake(100, 1)
	okSrv := ok.serve(t)
	rep = run(t, scenario.Config{Targets: []string{okSrv.URL}, Users: 20, Connections: 4, Stock: 100, PerUserLimit: 1, PollEvery: -1})
	if len(rep.Warnings) != 0 {
		t.Fatalf("normal run warned: %q", rep.Warnings)
	}
	out.Reset()
	rep.WriteText(&out)
	if strings.Contains(out.String(), "WARNING") {
		t.Fatalf("normal run's report warns:\n%s", out.String())
	}
}

// readyThen answers GET /readyz itself and passes every other request on.
type readyThen struct{ next http.RoundTripper }

func (r readyThen) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/readyz" {
		rec := httptest.NewRecorder()
		writeJSON(rec, 200, map[string]any{"ready": true})
		resp := rec.Result()
		resp.Request = req
		return resp, nil
	}
	return r.next.RoundTrip(req)
}
