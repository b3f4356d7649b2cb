package driver

import (
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/report"
)

// user is one simulated user. Its fields are owned by the one worker that serves it, and read
// by the report only after every worker has ended.
type user struct {
	idx int
	id  string
	bot bool
	jwt string

	due time.Time // when its next request may go

	attempt   int    // 1-based number of the current attempt
	key       string // Idempotency-Key of the current attempt
	retries   int    // requests of the current attempt after its first
	ambiguous bool   // the current attempt had an answer that may hide a reservation

	rids       []string // reservations this user holds, as told by the service
	unresolved int      // attempts that ended without knowing whether they reserved
	final      string   // how the user ended: a report.End* value; "" while active
}

func (u *user) newAttempt(run string) {
	u.attempt++
	u.key = fmt.Sprintf("k-%s-%d-%d", run, u.idx, u.attempt)
	u.retries = 0
	u.ambiguous = false
}

func (u *user) holds(rid string) bool {
	for _, x := range u.rids {
		if x == rid {
			return true
		}
	}
	return false
}

type userQueue []*user

func (q userQueue) Len() int { return len(q) }
func (q userQueue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].idx < q[j].idx
}
func (q userQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *userQueue) Push(x any)   { *q = append(*q, x.(*user)) }
func (q *userQueue) Pop() any {
	old := *q
	u := old[len(old)-1]
	*q = old[:len(old)-1]
	return u
}

// decide records res and moves u on: it says whether u sends again, and after how long.
//
// Real users: 202/200 ends the attempt (the next attempt, if any, starts at once with a new
// key); 409 and 410 end the session; 429 and 503 are retried with the same key after
// Retry-After (capped by MaxRetryWait, plus up to 10 % jitter); transport errors and other 5xx
// after an exponential backoff from 100 ms, with the same key; 425 after Retry-After or
// 100 ms. Bots do the same but never wait, and start a new attempt after every success.
func (r *Driver) decide(u *user, res result) (time.Duration, bool) {
	r.record(u, res)
	cfg := &r.cfg
	switch {
	case res.status >= 200 && res.status < 300:
		u.ambiguous = false
		if u.bot || u.attempt < cfg.Attempts {
			u.newAttempt(cfg.RunID)
			return 0, true
		}
		u.final = report.EndReserved
		return 0, false
	case res.status == http.StatusConflict:
		u.ambiguous = false
		u.final = report.EndLimit
		return 0, false
	case res.status == http.StatusGone:
		u.endAttempt()
		u.final = report.EndSoldOut
		if res.code == "CLOSED" {
			u.final = report.EndClosed
		}
		return 0, false
	}

	var wait time.Duration
	switch {
	case res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable:
		wait = time.Second
		if res.hasRetryAfter {
			wait = res.retryAfter
		}
	case res.status == http.StatusTooEarly:
		wait = 100 * time.Millisecond
		if res.hasRetryAfter {
			wait = res.retryAfter
		}
	case res.status == 0 || res.status >= 500:
		// The request may have reserved: only a later 2xx or 409 can tell. A refused
		// connection never reached the service.
		if res.code != "refused" {
			u.ambiguous = true
		}
		wait = 100 * time.Millisecond << min(u.retries, 10)
	default: // any other 4xx: the request is wrong, retrying will not help
		u.endAttempt()
		u.final = report.EndRejected
		return 0, false
	}
	if !cfg.Retry || (cfg.MaxRetries > 0 && u.retries >= cfg.MaxRetries) {
		u.endAttempt()
		u.final = report.EndGaveUp
		return 0, false
	}
	u.retries++
	if u.bot {
		return 0, true
	}
	wait = min(wait, cfg.MaxRetryWait)
	if wait > 0 {
		wait += time.Duration(mrand.Int64N(int64(wait)/10 + 1))
	}
	return wait, true
}

func (u *user) endAttempt() {
	if u.ambiguous {
		u.unresolved++
		u.ambiguous = false
	}
}
