package load

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// maxBody bounds what is read of one answer.
const maxBody = 64 << 10

// Run plays the flash crowd described by cfg, then runs the invariant checks and returns the
// report. It returns an error only when the run could not be made (bad config, the activity
// could not be created, a checker could not connect); failed invariants are in the report.
// Cancelling ctx stops the rush early as if Duration had passed; requests in flight finish.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RunID == "" {
		var b [4]byte
		rand.Read(b[:])
		cfg.RunID = hex.EncodeToString(b[:])
	}
	r := newRunner(cfg)
	defer r.close()
	return r.run(ctx)
}

type runner struct {
	cfg       Config
	client    *http.Client
	transport *http.Transport // nil when cfg.Transport was given
	body      []byte
	users     []*user

	sent      atomic.Int64 // requests started, for MaxRequests
	next      atomic.Uint64
	perTarget []atomic.Int64

	// Progress counters.
	completed atomic.Int64
	nAccepted atomic.Int64
	n410      atomic.Int64
	n429      atomic.Int64
	nErrors   atomic.Int64

	rec recorder
}

func newRunner(cfg Config) *runner {
	r := &runner{cfg: cfg, perTarget: make([]atomic.Int64, len(cfg.Targets))}
	rt := cfg.Transport
	if rt == nil {
		r.transport = &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        cfg.Connections * len(cfg.Targets),
			MaxIdleConnsPerHost: cfg.Connections,
			MaxConnsPerHost:     cfg.Connections,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
		rt = r.transport
	}
	r.client = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	r.body, _ = json.Marshal(map[string]int{"quantity": cfg.Quantity})
	r.users = make([]*user, cfg.Users)
	bots := 0
	for i := range r.users {
		// Spread the bots evenly: user i is a bot when floor((i+1)*F) > floor(i*F).
		bot := int(float64(i+1)*cfg.Bots) > int(float64(i)*cfg.Bots)
		if bot {
			bots++
		}
		r.users[i] = &user{idx: i, id: fmt.Sprintf("u-%s-%d", cfg.RunID, i), bot: bot}
	}
	r.rec.init()
	return r
}

func (r *runner) close() {
	if r.transport != nil {
		r.transport.CloseIdleConnections()
	}
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	cfg := r.cfg
	checks, err := newCheckers(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer checks.close()
	if err := r.checkReady(ctx); err != nil {
		return nil, err
	}
	if cfg.Create {
		if err := r.createActivity(ctx); err != nil {
			return nil, err
		}
	}

	pollCtx, stopPoll := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPoll()
	poll := newPoller(r.cfg, checks.redis)
	checks.poller = poll
	var bg sync.WaitGroup
	if cfg.PollEvery > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			poll.run(pollCtx)
		}()
	}

	rushCtx, stopRush := context.WithCancel(ctx)
	defer stopRush()
	if cfg.Duration > 0 {
		rushCtx, stopRush = context.WithTimeout(rushCtx, cfg.Duration)
		defer stopRush()
	}
	start := time.Now()
	progCtx, stopProgress := context.WithCancel(context.Background())
	if cfg.Progress > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			r.progress(progCtx, start)
		}()
	}

	var workers sync.WaitGroup
	for w := 0; w < cfg.Connections; w++ {
		var mine []*user
		for i := w; i < len(r.users); i += cfg.Connections {
			mine = append(mine, r.users[i])
		}
		if len(mine) == 0 {
			break
		}
		offset := time.Duration(0)
		if cfg.Ramp > 0 {
			offset = cfg.Ramp * time.Duration(w) / time.Duration(cfg.Connections)
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			r.worker(rushCtx, stopRush, mine, start.Add(offset))
		}()
	}
	workers.Wait()
	elapsed := time.Since(start)
	stopProgress()

	// The spec lets remaining lag the truth by up to 1 s: give the poller that long (and a
	// margin) to see 0 after a sell-out before judging it.
	if cfg.PollEvery > 0 && r.rec.soldOutSeen() {
		poll.waitZero(ctx, 2*time.Second)
	}
	stopPoll()
	bg.Wait()

	rep := r.report(start, elapsed, poll)
	checks.run(ctx, r, rep)
	rep.finish()
	return rep, nil
}

// worker serves its users in order of due time until every one is done, the rush is over or
// MaxRequests is reached (then it stops the rush for every worker).
func (r *runner) worker(ctx context.Context, stopAll context.CancelFunc, users []*user, startAt time.Time) {
	q := make(userQueue, 0, len(users))
	for _, u := range users {
		u.due = startAt
		u.newAttempt(r.cfg.RunID)
		q = append(q, u)
	}
	heap.Init(&q)
	for q.Len() > 0 {
		u := q[0]
		if !sleepCtx(ctx, time.Until(u.due)) {
			return
		}
		if n := r.sent.Add(1); r.cfg.MaxRequests > 0 && n > r.cfg.MaxRequests {
			stopAll()
			return
		}
		res := r.send(u)
		if wait, again := r.decide(u, res); again {
			u.due = time.Now().Add(wait)
			heap.Fix(&q, 0)
		} else {
			heap.Pop(&q)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

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
	final      string   // how the user ended: a userEnd* value; "" while active
}

// How a user's session ended.
const (
	userEndReserved = "reserved"      // made all its attempts, each reserved
	userEndLimit    = "limit_reached" // got 409 ALREADY_PURCHASED
	userEndSoldOut  = "sold_out"      // got 410 SOLD_OUT
	userEndClosed   = "closed"        // got 410 CLOSED
	userEndRejected = "rejected"      // got another 4xx
	userEndGaveUp   = "gave_up"       // retries exhausted or retry off
	userEndActive   = "unfinished"    // still trying when the run stopped
)

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

// result is one answer (or transport failure) of the reservation endpoint.
type result struct {
	status        int    // 0 for a transport error
	code          string // error code of the body, or the transport error kind
	rid           string
	retryAfter    time.Duration
	hasRetryAfter bool // the answer said when to retry, in the header or the body
	// retryAfterBoth tells the answer carried both the Retry-After header and
	// retryAfterSeconds in the body, as docs/API.md section 4 requires of every 429 and 503.
	retryAfterBoth bool
	latency        time.Duration
}

type answerBody struct {
	ReservationID     string   `json:"reservationId"`
	Code              string   `json:"code"`
	RetryAfterSeconds *float64 `json:"retryAfterSeconds"`
}

func (r *runner) send(u *user) result {
	t := int((r.next.Add(1) - 1) % uint64(len(r.cfg.Targets)))
	r.perTarget[t].Add(1)
	url := r.cfg.Targets[t] + "/api/v1/activities/" + r.cfg.Activity + "/reservations"
	// Requests in flight finish after the rush stops: a reservation the service made must be
	// seen, or the order count could not be checked.
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.body))
	if err != nil {
		return result{code: "request"}
	}
	// Without GetBody net/http never replays the POST by itself on a reused connection (it
	// would, for a request with an Idempotency-Key): every request the service sees is one the
	// tool counts, and retries are the simulated user's decision.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", u.id)
	req.Header.Set("Idempotency-Key", u.key)
	if r.cfg.Channel != "" {
		req.Header.Set("X-Channel", r.cfg.Channel)
	}
	if r.cfg.JWTSecret != "" {
		if u.jwt == "" {
			u.jwt = signJWT(r.cfg.JWTSecret, u.id)
		}
		req.Header.Set("Authorization", "Bearer "+u.jwt)
	}

	start := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		return result{code: errorKind(err), latency: time.Since(start)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	res := result{status: resp.StatusCode, latency: time.Since(start)}
	if err != nil {
		return result{code: errorKind(err), latency: res.latency}
	}
	var ab answerBody
	if json.Unmarshal(b, &ab) == nil {
		res.rid = ab.ReservationID
		res.code = ab.Code
	}
	bodyOK := ab.RetryAfterSeconds != nil && *ab.RetryAfterSeconds >= 0
	d, headerOK := parseRetryAfter(resp.Header.Get("Retry-After"))
	switch {
	case headerOK:
		res.retryAfter, res.hasRetryAfter = d, true
	case bodyOK:
		res.retryAfter = time.Duration(*ab.RetryAfterSeconds * float64(time.Second))
		res.hasRetryAfter = true
	}
	res.retryAfterBoth = headerOK && bodyOK
	return res
}

func signJWT(secret, sub string) string {
	now := time.Now()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		return ""
	}
	return s
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return "reset"
	default:
		return "other"
	}
}

// decide records res and moves u on: it says whether u sends again, and after how long.
//
// Real users: 202/200 ends the attempt (the next attempt, if any, starts at once with a new
// key); 409 and 410 end the session; 429 and 503 are retried with the same key after
// Retry-After (capped by MaxRetryWait, plus up to 10 % jitter); transport errors and other 5xx
// after an exponential backoff from 100 ms, with the same key; 425 after Retry-After or
// 100 ms. Bots do the same but never wait, and start a new attempt after every success.
func (r *runner) decide(u *user, res result) (time.Duration, bool) {
	r.record(u, res)
	cfg := &r.cfg
	switch {
	case res.status >= 200 && res.status < 300:
		u.ambiguous = false
		if u.bot || u.attempt < cfg.Attempts {
			u.newAttempt(cfg.RunID)
			return 0, true
		}
		u.final = userEndReserved
		return 0, false
	case res.status == http.StatusConflict:
		u.ambiguous = false
		u.final = userEndLimit
		return 0, false
	case res.status == http.StatusGone:
		u.endAttempt()
		u.final = userEndSoldOut
		if res.code == "CLOSED" {
			u.final = userEndClosed
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
		u.final = userEndRejected
		return 0, false
	}
	if !cfg.Retry || (cfg.MaxRetries > 0 && u.retries >= cfg.MaxRetries) {
		u.endAttempt()
		u.final = userEndGaveUp
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

// record counts res in the progress counters and the recorder.
func (r *runner) record(u *user, res result) {
	r.completed.Add(1)
	switch {
	case res.status >= 200 && res.status < 300:
		r.nAccepted.Add(1)
	case res.status == http.StatusGone:
		r.n410.Add(1)
	case res.status == http.StatusTooManyRequests:
		r.n429.Add(1)
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
func (r *runner) progress(ctx context.Context, start time.Time) {
	t := time.NewTicker(r.cfg.Progress)
	defer t.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n := r.completed.Load()
			rps := float64(n-last) / now.Sub(lastAt).Seconds()
			last, lastAt = n, now
			fmt.Fprintf(r.cfg.Log, "[%6.1fs] requests=%d rps=%.0f 2xx=%d 410=%d 429=%d errors=%d\n",
				now.Sub(start).Seconds(), n, rps, r.nAccepted.Load(), r.n410.Load(), r.n429.Load(), r.nErrors.Load())
		}
	}
}

// recorder holds what every worker reports, under one lock.
type recorder struct {
	mu       sync.Mutex
	outcomes map[outcomeKey]int64
	latency  map[string]*Histogram
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
	rc.latency = make(map[string]*Histogram)
	rc.owners = make(map[string]ridOwner)
}

func (rc *recorder) hist(class string) *Histogram {
	h := rc.latency[class]
	if h == nil {
		h = &Histogram{}
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
	rc.hist(ClassAll).Record(us)
	switch {
	case res.status == 0:
		rc.hist(ClassError).Record(us)
		rc.hist(ClassError + "/" + code).Record(us)
	case res.status < 300:
		rc.hist(ClassAccepted).Record(us)
	case res.status < 500:
		rc.hist(ClassRejected).Record(us)
		rc.hist(ClassRejected + "/" + code).Record(us)
	default:
		rc.hist(Class5xx).Record(us)
		rc.hist(Class5xx + "/" + code).Record(us)
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

func (rc *recorder) soldOutSeen() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.outcomes[outcomeKey{http.StatusGone, "SOLD_OUT"}] > 0
}
