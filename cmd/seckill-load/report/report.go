// Package report is the load tool's report: what a run saw (outcomes, latency per class,
// users, reservations, the remaining-stock poller, the orders in MySQL), the invariant
// checks with their verdict, and its two forms, text for people and JSON (--json) for
// machines. Histogram is the latency histogram behind the percentiles.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Latency classes of Report.Latency. Rejected, 5xx and error classes also exist per code, as
// "rejected/SOLD_OUT", "5xx/UNAVAILABLE", "error/timeout" (the HTTP status stands in for a
// missing code).
const (
	ClassAll      = "all"
	ClassAccepted = "accepted" // 2xx
	ClassRejected = "rejected" // 4xx
	Class5xx      = "5xx"
	ClassError    = "error" // no HTTP answer: timeout, refused, reset, other
)

// Check statuses.
const (
	Pass = "PASS"
	Fail = "FAIL"
	Skip = "SKIP"
)

// How a user's session ended: the keys of UsersReport.Ended.
const (
	EndReserved   = "reserved"      // made all its attempts, each reserved
	EndLimit      = "limit_reached" // got 409 ALREADY_PURCHASED
	EndSoldOut    = "sold_out"      // got 410 SOLD_OUT
	EndClosed     = "closed"        // got 410 CLOSED
	EndRejected   = "rejected"      // got another 4xx
	EndGaveUp     = "gave_up"       // retries exhausted or retry off
	EndUnfinished = "unfinished"    // still trying when the run stopped
)

// Why a rush ended: the values of Report.Ended.
const (
	EndedUsersDone   = "users_done"   // every user made its attempts (before --duration)
	EndedDuration    = "duration"     // --duration passed
	EndedMaxRequests = "max_requests" // --max-requests were sent
	EndedInterrupted = "interrupted"  // the run was cancelled (SIGINT, SIGTERM)
)

// EndedText says in words why a rush ended; limit is the run's --duration (0 = none).
func EndedText(ended string, limit time.Duration) string {
	switch ended {
	case EndedUsersDone:
		if limit > 0 {
			return fmt.Sprintf("every user was done before --duration %v; more --users or --attempts make a longer run", limit)
		}
		return "every user was done"
	case EndedDuration:
		return fmt.Sprintf("--duration %v passed", limit)
	case EndedMaxRequests:
		return "--max-requests sent"
	case EndedInterrupted:
		return "interrupted"
	}
	return ended
}

// Report is the result of one run; its JSON form (--json) is the machine-readable report.
// Field names are stable:
//
//	runId, activityId          the run's id (users are u-<runId>-<i>) and the activity
//	startedAt                  RFC 3339 start of the rush
//	durationSeconds            rush duration (first request to last answer)
//	ended                      why the rush ended: users_done (every user made its
//	                           attempts), duration, max_requests, interrupted
//	requests                   reservation requests answered (or failed at transport level)
//	throughputRps              requests / durationSeconds
//	targets[]                  {url, requests} requests sent to each instance
//	config                     {users, bots, connections, attempts, quantity, channel,
//	                            durationLimitSeconds, maxRequests, rampSeconds, retry,
//	                            maxRetryWaitSeconds, stock, perUserLimit}
//	outcomes[]                 {status, code, count}: status 0 is a transport error whose code
//	                           is timeout|refused|reset|other; code is the body's "code", "" for 2xx
//	latency{class}             {count, minMs, meanMs, p50Ms, p95Ms, p99Ms, maxMs} per class:
//	                           all, accepted, rejected, rejected/<code>, 5xx, 5xx/<code>,
//	                           error, error/<kind>; percentiles are nearest-rank, within 0.8 %
//	users                      {total, bots, withReservation, ended{reserved|limit_reached|
//	                            sold_out|closed|rejected|gave_up|unfinished: n}}
//	reservations               {answers2xx, distinct, units, unresolvedAttempts,
//	                            missingReservationId, missingRetryAfter}
//	remaining                  {polls, errors, observed, min, last}: the GET poller's view
//	orders                     {checked, count, units, compensations} (MySQL, when given)
//	checks[]                   {name, status: PASS|FAIL|SKIP, detail}
//	passed                     false when any check failed
//	warnings[]                 what the run did not measure (most requests rate-limited,
//	                           most requests without an answer)
type Report struct {
	RunID           string                    `json:"runId"`
	Activity        string                    `json:"activityId"`
	StartedAt       time.Time                 `json:"startedAt"`
	DurationSeconds float64                   `json:"durationSeconds"`
	Ended           string                    `json:"ended"`
	Requests        int64                     `json:"requests"`
	ThroughputRPS   float64                   `json:"throughputRps"`
	Targets         []TargetReport            `json:"targets"`
	Config          ConfigReport              `json:"config"`
	Outcomes        []Outcome                 `json:"outcomes"`
	Latency         map[string]LatencySummary `json:"latency"`
	Users           UsersReport               `json:"users"`
	Reservations    ReservationsReport        `json:"reservations"`
	Remaining       RemainingReport           `json:"remaining"`
	Orders          OrdersReport              `json:"orders"`
	// Sale is the service's own report of the activity (GET /admin/v1/activities/{id}/report),
	// read after the checks when an admin token is given; nil otherwise.
	Sale   map[string]any `json:"sale,omitempty"`
	Checks []Check        `json:"checks"`
	Passed bool           `json:"passed"`
	// Warnings say what the run did not measure, e.g. that most requests were rate-limited;
	// they do not fail the run.
	Warnings []string `json:"warnings"`
}

// TargetReport is the share of one instance.
type TargetReport struct {
	URL      string `json:"url"`
	Requests int64  `json:"requests"`
}

// ConfigReport echoes the parameters of the run.
type ConfigReport struct {
	Users                int     `json:"users"`
	Bots                 int     `json:"bots"`
	Connections          int     `json:"connections"`
	Attempts             int     `json:"attempts"`
	Quantity             int     `json:"quantity"`
	Channel              string  `json:"channel"`
	DurationLimitSeconds float64 `json:"durationLimitSeconds"`
	MaxRequests          int64   `json:"maxRequests"`
	RampSeconds          float64 `json:"rampSeconds"`
	Retry                bool    `json:"retry"`
	MaxRetryWaitSeconds  float64 `json:"maxRetryWaitSeconds"`
	Stock                int64   `json:"stock"`
	PerUserLimit         int     `json:"perUserLimit"`
}

// Outcome counts the answers with one status and code.
type Outcome struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Count  int64  `json:"count"`
}

// LatencySummary describes the latencies of one class, in milliseconds.
type LatencySummary struct {
	Count  uint64  `json:"count"`
	MinMs  float64 `json:"minMs"`
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
}

// UsersReport tells how the users fared.
type UsersReport struct {
	Total           int            `json:"total"`
	Bots            int            `json:"bots"`
	WithReservation int            `json:"withReservation"`
	Ended           map[string]int `json:"ended"`
}

// ReservationsReport counts the reservations the service answered.
type ReservationsReport struct {
	Answers2xx int64 `json:"answers2xx"`
	// Distinct reservation ids given to the users (by 2xx, or named by a 409), and their units.
	Distinct int   `json:"distinct"`
	Units    int64 `json:"units"`
	// UnresolvedAttempts ended after a timeout or 5xx without learning whether they reserved:
	// each may hide one reservation the tool does not know.
	UnresolvedAttempts   int   `json:"unresolvedAttempts"`
	MissingReservationID int64 `json:"missingReservationId"`
	MissingRetryAfter    int64 `json:"missingRetryAfter"`
}

// RemainingReport is what the poller of GET /api/v1/activities/{id} saw.
type RemainingReport struct {
	Polls    int64 `json:"polls"`
	Errors   int64 `json:"errors"`
	Observed bool  `json:"observed"` // at least one answer carried "remaining"
	Min      int64 `json:"min"`
	Last     int64 `json:"last"` // the smallest of each target's latest value
}

// OrdersReport is what MySQL held once the writer drained.
type OrdersReport struct {
	Checked       bool  `json:"checked"`
	Count         int64 `json:"count"`
	Units         int64 `json:"units"`
	Compensations int64 `json:"compensations"`
}

// Check is one invariant check.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool { return !r.Passed }

// Check returns the check of that name, and whether it exists.
func (r *Report) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// OutcomeCount is the number of answers with that status and code.
func (r *Report) OutcomeCount(status int, code string) int64 {
	for _, o := range r.Outcomes {
		if o.Status == status && o.Code == code {
			return o.Count
		}
	}
	return 0
}

// Add appends a check whose detail is format with args.
func (r *Report) Add(name, status, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)})
}

// Finish sets the verdict (Passed: no check failed) and the warnings. Call it once, after the
// last Add.
func (r *Report) Finish() {
	r.Passed = true
	for _, c := range r.Checks {
		if c.Status == Fail {
			r.Passed = false
		}
	}
	r.Warnings = r.warnings()
}

// mostly is the share of requests past which a kind of answer dominates what a run measured.
const mostly = 0.5

// warnings names kinds of answer that made up most of the requests.
func (r *Report) warnings() []string {
	var total, limited, transport int64
	for _, o := range r.Outcomes {
		total += o.Count
		switch {
		case o.Status == http.StatusTooManyRequests:
			limited += o.Count
		case o.Status == 0:
			transport += o.Count
		}
	}
	w := []string{}
	if total == 0 {
		return w
	}
	if float64(limited) > mostly*float64(total) {
		w = append(w, fmt.Sprintf("%.0f%% of requests (%d of %d) were rate-limited (429): this run measured the limiter, "+
			"not the reservation path; for a load test run the service with config/loadtest.yaml (or raise limits.ip, limits.user) "+
			"or spread users over more client addresses", 100*float64(limited)/float64(total), limited, total))
	}
	if float64(transport) > mostly*float64(total) {
		w = append(w, fmt.Sprintf("%.0f%% of requests (%d of %d) got no HTTP answer (timeouts, refused or reset connections)",
			100*float64(transport)/float64(total), transport, total))
	}
	return w
}

// Summarize describes h, which holds microseconds, in milliseconds.
func Summarize(h *Histogram) LatencySummary {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencySummary{
		Count: h.Count(), MinMs: ms(h.Min()), MeanMs: h.Mean() / 1000,
		P50Ms: ms(h.Quantile(0.50)), P95Ms: ms(h.Quantile(0.95)), P99Ms: ms(h.Quantile(0.99)), MaxMs: ms(h.Max()),
	}
}

// WriteJSON writes the report, indented, to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "seckill-load run %s, activity %s\n", r.RunID, r.Activity)
	fmt.Fprintf(w, "  %d users (%d bots), %d connections, %d requests in %.2fs = %.0f req/s\n",
		r.Users.Total, r.Users.Bots, r.Config.Connections, r.Requests, r.DurationSeconds, r.ThroughputRPS)
	if r.Ended != "" {
		fmt.Fprintf(w, "  ended: %s\n", EndedText(r.Ended, time.Duration(r.Config.DurationLimitSeconds*float64(time.Second))))
	}
	if len(r.Targets) > 1 {
		for _, t := range r.Targets {
			fmt.Fprintf(w, "  target %s: %d requests\n", t.URL, t.Requests)
		}
	}

	fmt.Fprintln(w, "\noutcomes:")
	for _, o := range r.Outcomes {
		status := fmt.Sprint(o.Status)
		if o.Status == 0 {
			status = "transport error"
		}
		fmt.Fprintf(w, "  %-16s %-20s %10d\n", status, o.Code, o.Count)
	}
	r.writeLatency(w)
	r.writeUsers(w)
	if r.Sale != nil {
		writeSale(w, r.Sale)
	}
	r.writeChecks(w)
}

// writeLatency writes the latency section: one line per request class, in class order.
func (r *Report) writeLatency(w io.Writer) {
	fmt.Fprintln(w, "\nlatency (ms):")
	fmt.Fprintf(w, "  %-28s %9s %9s %9s %9s %9s\n", "class", "count", "p50", "p95", "p99", "max")
	classes := make([]string, 0, len(r.Latency))
	for c := range r.Latency {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		l := r.Latency[c]
		fmt.Fprintf(w, "  %-28s %9d %9.2f %9.2f %9.2f %9.2f\n", c, l.Count, l.P50Ms, l.P95Ms, l.P99Ms, l.MaxMs)
	}
}

// writeUsers writes the users section (how users ended, in order), then the reservations
// and, when observed or checked, the remaining stock and the orders in MySQL.
func (r *Report) writeUsers(w io.Writer) {
	fmt.Fprintln(w, "\nusers:")
	fmt.Fprintf(w, "  with a reservation: %d\n", r.Users.WithReservation)
	ends := make([]string, 0, len(r.Users.Ended))
	for e := range r.Users.Ended {
		ends = append(ends, e)
	}
	sort.Strings(ends)
	for _, e := range ends {
		fmt.Fprintf(w, "  ended %-14s %d\n", e+":", r.Users.Ended[e])
	}
	rs := r.Reservations
	fmt.Fprintf(w, "reservations: %d distinct (%d units) from %d 2xx answers; %d unresolved attempts\n",
		rs.Distinct, rs.Units, rs.Answers2xx, rs.UnresolvedAttempts)
	if r.Remaining.Observed {
		fmt.Fprintf(w, "remaining: min %d, last %d (%d polls, %d errors)\n",
			r.Remaining.Min, r.Remaining.Last, r.Remaining.Polls, r.Remaining.Errors)
	}
	if r.Orders.Checked {
		fmt.Fprintf(w, "orders in MySQL: %d (%d units), %d compensated\n", r.Orders.Count, r.Orders.Units, r.Orders.Compensations)
	}
}

// writeChecks writes the checks, the warnings and the verdict last: PASS (with the count
// skipped) or FAIL with the checks that failed, and a pointer to the warnings if any.
func (r *Report) writeChecks(w io.Writer) {
	fmt.Fprintln(w, "\nchecks:")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "  %-4s %-32s %s\n", c.Status, c.Name, c.Detail)
	}
	skipped := 0
	for _, c := range r.Checks {
		if c.Status == Skip {
			skipped++
		}
	}
	verdict := "PASS: every invariant held"
	if skipped > 0 {
		verdict = fmt.Sprintf("PASS, %d skipped: every invariant checked held", skipped)
	}
	if !r.Passed {
		var failed []string
		for _, c := range r.Checks {
			if c.Status == Fail {
				failed = append(failed, c.Name)
			}
		}
		verdict = "FAIL: " + strings.Join(failed, ", ")
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "\nWARNING: %s\n", warn)
	}
	if len(r.Warnings) > 0 && r.Passed {
		verdict += " (but read the WARNING above: the run may not have measured what you meant)"
	}
	fmt.Fprintf(w, "\n%s\n", verdict)
}

// writeSale prints the service's sale report: the funnel the service counted.
func writeSale(w io.Writer, s map[string]any) {
	num := func(m map[string]any, k string) string {
		if v, ok := m[k]; ok && v != nil {
			return plain(v)
		}
		return "-"
	}
	sub := func(k string) map[string]any { m, _ := s[k].(map[string]any); return m }
	fmt.Fprintln(w, "\nthe service's sale report (GET /admin/v1/activities/{id}/report):")
	fmt.Fprintf(w, "  attempts %v, accepted %v, refused %v; units sold %v to %v distinct buyers (MySQL)\n",
		num(s, "attempts"), num(sub("answers"), "accepted"), num(s, "refusedTotal"), num(sub("orders"), "units"), num(sub("orders"), "distinctBuyers"))
	fmt.Fprintf(w, "  distinct users tried %v, bought %v (HyperLogLog, standard error %v)\n",
		num(sub("distinctUsers"), "tried"), num(sub("distinctUsers"), "bought"), num(sub("distinctUsers"), "standardError"))
	peak := "-"
	if p := sub("peakSecond"); p != nil {
		peak = fmt.Sprintf("%s (%s attempts, %s accepted)", num(p, "at"), num(p, "attempts"), num(p, "accepted"))
	}
	fmt.Fprintf(w, "  opened %v, first accepted %v, last %v, sold out after %v ms; peak second %s\n",
		num(s, "opensAt"), num(s, "firstAccepted"), num(s, "lastAccepted"), num(s, "timeToSellOutMs"), peak)
	refused := sub("refused")
	layers := make([]string, 0, len(refused))
	for l, n := range refused {
		if n != float64(0) {
			layers = append(layers, l)
		}
	}
	sort.Strings(layers)
	for _, l := range layers {
		fmt.Fprintf(w, "  refused by %-16s %10s\n", l+":", plain(refused[l]))
	}
	conv := sub("conversion")
	fmt.Fprintf(w, "  conversion %s orders per attempt, %s per user who tried; block rate %s; compensated %s, drift %s\n",
		percent(conv["ordersPerAttempt"]), percent(conv["ordersPerTriedUser"]), percent(s["blockRate"]), num(s, "compensated"), num(s, "drift"))
}

// plain prints a JSON value for a person: whole numbers without a fraction, others with four
// significant digits, text as it is.
func plain(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strconv.FormatFloat(x, 'g', 4, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// percent prints a ratio as a percentage with one decimal, "-" when there is none.
func percent(v any) string {
	x, ok := v.(float64)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(100*x, 'f', 1, 64) + " %"
}
