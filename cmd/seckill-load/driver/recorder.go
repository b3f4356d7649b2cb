package driver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/report"
)

// record counts res in the progress counters and the recorder.
func (r *Driver) record(u *user, res result) {
	r.completed.Add(1)
	switch {
	case res.status >= 200 && res.status < 300:
		r.nAccepted.Add(1)
	case res.status == http.StatusGone:
		r.n410.Add(1)
	case res.status == http.StatusTooManyRequests:
		r.n429.Add(1)
	case res.status == http.StatusServiceUnavailable && res.code == "DISABLED":
		r.nDisabled.Add(1)
	case res.status == 0 || res.status >= 500:
		r.nErrors.Add(1)
	}
	// A 2xx or a 409 names a reservation of this user; keep it once.
	if (res.status >= 200 && res.status < 300 || res.status == http.StatusConflict) && res.rid != "" && !u.holds(res.rid) {
		u.rids = append(u.rids, res.rid)
	}
	r.rec.add(u, res)
}

// progress writes a line every cfg.Progress until ctx ends.
func (r *Driver) progress(ctx context.Context, start time.Time) {
	t := time.NewTicker(r.cfg.Progress)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			at := now.Sub(start)
			n := r.completed.Load()
			r.progressLine(at, at-r.lastProgress, n-r.lastCompleted, "")
			r.lastProgress, r.lastCompleted = at, n
		}
	}
}

// progressLine writes one progress line at time at since the start, with the rate of the
// requests answered over the last span; ended, when set, is why the rush stopped.
func (r *Driver) progressLine(at, span time.Duration, answered int64, ended string) {
	rps := 0.0
	if span > 0 {
		rps = float64(answered) / span.Seconds()
	}
	tail := ""
	if ended != "" {
		tail = " (end: " + report.EndedText(ended, r.cfg.Duration) + ")"
	}
	fmt.Fprintf(r.cfg.Log, "[%6.1fs] requests=%d rps=%.0f 2xx=%d 410=%d 429=%d disabled=%d errors=%d%s\n",
		at.Seconds(), r.completed.Load(), rps, r.nAccepted.Load(), r.n410.Load(), r.n429.Load(), r.nDisabled.Load(), r.nErrors.Load(), tail)
}

// recorder holds what every worker reports, under one lock.
type recorder struct {
	mu       sync.Mutex
	outcomes map[outcomeKey]int64
	latency  map[string]*report.Histogram
	// owners maps every reservation id the service answered to the user and key it went to.
	owners            map[string]ridOwner
	duplicates        []string // reservation ids answered to two users or two attempts
	missingRID        int64    // 2xx or 409 answers without a reservationId
	missingRetryAfter int64    // 429 or 503 answers without Retry-After or retryAfterSeconds
}

type outcomeKey struct {
	status int
	code   string
}

type ridOwner struct {
	user, key string
}

func (rc *recorder) init() {
	rc.outcomes = make(map[outcomeKey]int64)
	rc.latency = make(map[string]*report.Histogram)
	rc.owners = make(map[string]ridOwner)
}

func (rc *recorder) hist(class string) *report.Histogram {
	h := rc.latency[class]
	if h == nil {
		h = &report.Histogram{}
		rc.latency[class] = h
	}
	return h
}

func (rc *recorder) add(u *user, res result) {
	us := res.latency.Microseconds()
	code := res.code
	if code == "" && res.status >= 300 {
		code = strconv.Itoa(res.status)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.outcomes[outcomeKey{res.status, res.code}]++
	rc.hist(report.ClassAll).Record(us)
	switch {
	case res.status == 0:
		rc.hist(report.ClassError).Record(us)
		rc.hist(report.ClassError + "/" + code).Record(us)
	case res.status < 300:
		rc.hist(report.ClassAccepted).Record(us)
	case res.status < 500:
		rc.hist(report.ClassRejected).Record(us)
		rc.hist(report.ClassRejected + "/" + code).Record(us)
	default:
		rc.hist(report.Class5xx).Record(us)
		rc.hist(report.Class5xx + "/" + code).Record(us)
	}

	switch {
	case res.status >= 200 && res.status < 300:
		if res.rid == "" {
			rc.missingRID++
			return
		}
		o, seen := rc.owners[res.rid]
		switch {
		case !seen:
			rc.owners[res.rid] = ridOwner{u.id, u.key}
		case o.user != u.id || (o.key != u.key && o.key != ""):
			rc.duplicates = append(rc.duplicates, res.rid)
		}
	case res.status == http.StatusConflict:
		if res.rid == "" {
			rc.missingRID++
			return
		}
		// A 409 names the user's existing reservation: it must be this user's. The key it was
		// made with is unknown (empty) when it is first learned this way.
		if o, seen := rc.owners[res.rid]; !seen {
			rc.owners[res.rid] = ridOwner{user: u.id}
		} else if o.user != u.id {
			rc.duplicates = append(rc.duplicates, res.rid)
		}
	case res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable:
		if !res.retryAfterBoth {
			rc.missingRetryAfter++
		}
	}
}
