//go:build integration

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/app/waitroom"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/inventory"
)

// crowd is the HTTP side of a queued sale: a shared client with a bounded number of requests
// in flight (the users are goroutines; the connections are few, as behind a CDN).
// Joins and reservations have slots of their own (each as many as joins), so that the polls of
// those in line do not wait behind the joins of a crowd still arriving, nor a user with a pass
// behind the polls of the line (each user has a connection of its own in a real crowd).
type crowd struct {
	client                 *http.Client
	slots, joins, reserves chan struct{}
}

func newCrowd(conns, joins int) *crowd {
	n := conns + 2*joins
	return &crowd{
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}, Timeout: 30 * time.Second},
		slots:    make(chan struct{}, conns),
		joins:    make(chan struct{}, joins),
		reserves: make(chan struct{}, joins),
	}
}

// crowdAnswer is one answer: its status, the JSON fields the sale reads, and when the request
// was sent.
type crowdAnswer struct {
	user   string
	status int
	sent   time.Time
	body   struct {
		Code          string  `json:"code"`
		Ticket        string  `json:"ticket"`
		Status        string  `json:"status"`
		Pass          string  `json:"pass"`
		PollAfterMs   int64   `json:"pollAfterMs"`
		ReservationID string  `json:"reservationId"`
		Position      *uint64 `json:"position"`
	}
}

func (c *crowd) do(method, url, user, body string) (crowdAnswer, error) {
	return c.doKey(method, url, user, body, "")
}

// doKey is do with an Idempotency-Key (none when key is "").
func (c *crowd) doKey(method, url, user, body, key string) (crowdAnswer, error) {
	slots := c.slots
	switch {
	case method == "POST" && strings.HasSuffix(url, "/queue"):
		slots = c.joins
	case method == "POST":
		slots = c.reserves
	}
	slots <- struct{}{}
	defer func() { <-slots }()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return crowdAnswer{}, err
	}
	req.Header.Set("X-User-Id", user)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	a := crowdAnswer{user: user, sent: time.Now()}
	resp, err := c.client.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, err
	}
	a.status = resp.StatusCode
	if err := json.Unmarshal(raw, &a.body); err != nil {
		return a, fmt.Errorf("%s %s: %d, not JSON: %q", method, url, resp.StatusCode, raw)
	}
	return a, nil
}

// saleLog is what the crowd saw, shared by its goroutines.
type saleLog struct {
	mu       sync.Mutex
	final    map[string]string // user -> final answer ("202", "410 SOLD_OUT", ...)
	tickets  map[string]string // user -> ticket
	polls    []crowdAnswer     // every poll's status and send time
	problems []string
	orders   map[string]string // reservation id -> user
	passes   map[string]string // user -> the pass it was given
}

func (l *saleLog) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.problems) < 50 {
		l.problems = append(l.problems, fmt.Sprintf(format, args...))
	}
}

// A queued sale (issue 21's "done when"): 10,000 users join the line of a 1,000-unit sale
// with an inlet of 500/s, on two instances over the real Redis and MariaDB. 500 of them join
// first and never poll again (abandoned); the others join from 2 s before the opening, so
// that part of them is in the shuffled prequeue and the rest queue first come first served
// after it, and poll as the answers tell them, reserving with their pass once admitted. Some
// of them try to reserve without a pass, with another user's pass and with theirs twice.
// Checked from ground truth (MySQL rows, the line's hashes in Redis): exactly 1,000 orders,
// none over the per-user limit, every order's user held a used pass, no 1 s span with more
// than 500 admissions, the inlet serving places in order, abandoned places skipped, the
// prequeue's order not its join order; at the client: every polling user ends with 202 or
// 410, and every poll sent 1 s after the sell-out (seen in Redis) answers 410 SOLD_OUT, on
// both instances, for every place in line.
func TestWaitingRoomQueuedSale(t *testing.T) {
	const (
		users     = 10000
		abandoned = 500
		stock     = 1000
		rate      = 500
		heartbeat = 20 * time.Second
		// The abandoned places are taken at the start; the opening comes more than a
		// heartbeat later, so the inlet finds them stale.
		openIn = heartbeat + 4*time.Second
	)
	id := uniq(t, "wr-sale")
	cfg := roomConfig(id, fmt.Sprintf("{enabled: true, rate: %d, heartbeat: %s, passTTL: 2m, order: shuffle}", rate, heartbeat))
	opts := realOptions(t)
	apps := []*testApp{startApp(t, opts, cfg), startApp(t, opts, cfg)}
	t0 := time.Now()
	opensAt := t0.Add(openIn)
	apps[0].createActivity(t, id, stock, 1, 1, opensAt)
	run := strconv.FormatInt(time.Now().UnixNano()%1_000_000, 10)
	userOf := func(i int) string { return "qs-" + run + "-" + strconv.Itoa(i) }

	// The sell-out as Redis sees it: the first read of the (single) shard's stock at 0.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var soldAt atomic.Int64
	stockKey := inventory.Shard(id, 0, 0).Stock()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ctx.Err() == nil {
			if v, err := apps[0].rdb.Get(ctx, stockKey).Int64(); err == nil && v == 0 {
				soldAt.Store(time.Now().UnixNano())
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	cr := newCrowd(32, 16)
	log := &saleLog{final: map[string]string{}, tickets: map[string]string{}, orders: map[string]string{}, passes: map[string]string{}}
	queueURL := func(ta *testApp, tail string) string { return ta.base + "/api/v1/activities/" + id + "/queue" + tail }
	resURL := func(ta *testApp) string { return ta.base + "/api/v1/activities/" + id + "/reservations" }

	// join takes user i's place, retrying what a client retries; "" when answered otherwise.
	join := func(i int) (crowdAnswer, bool) {
		user := userOf(i)
		for attempt := 0; ; attempt++ {
			a, err := cr.do("POST", queueURL(apps[i%2], ""), user, "")
			switch {
			case err != nil:
				log.problem("join %s: %v", user, err)
				return a, false
			case a.status == http.StatusCreated:
				log.mu.Lock()
				log.tickets[user] = a.body.Ticket
				log.mu.Unlock()
				return a, true
			case a.status == http.StatusGone:
				log.mu.Lock()
				log.final[user] = "410 " + a.body.Code
				log.mu.Unlock()
				return a, false
			case (a.status == 429 || a.status == 503) && attempt < 20:
				time.Sleep(100 * time.Millisecond)
			default:
				log.problem("join %s: %d %+v", user, a.status, a.body)
				return a, false
			}
		}
	}

	// 1. The abandoned places: taken first, never polled.
	parallel(abandoned, 16, func(i int) { join(i) })
	abandonedJoined := time.Now()

	// 2. The polling users, right after: those who join before the opening are the
	// prequeue, the others queue after it (on a loaded machine the joins take longer than
	// the wait for the opening).
	progress := time.NewTicker(2 * time.Second)
	defer progress.Stop()
	go func() {
		for range progress.C {
			st, _ := apps[0].rdb.HMGet(ctx, "sk:{"+id+"}:q:st", "seq", "pos", "admitted", "skipped").Result()
			left, _ := apps[0].rdb.Get(ctx, stockKey).Result()
			log.mu.Lock()
			n, f := len(log.polls), len(log.final)
			log.mu.Unlock()
			t.Logf("%v: seq,pos,admitted,skipped %v, stock %s, polls %d, answered %d", time.Since(t0).Round(time.Second), st, left, n, f)
		}
	}()
	var invalid atomic.Int64 // attempts without a valid pass of one's own that were answered 202
	var wg sync.WaitGroup
	for i := abandoned; i < users; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := userOf(i)
			a, ok := join(i)
			if !ok {
				return
			}
			ticket := a.body.Ticket
			if i%97 == 0 { // no pass at all
				if r, err := cr.do("POST", resURL(apps[i%2]), user, ""); err == nil && r.status == http.StatusAccepted {
					invalid.Add(1)
				}
			}
			for k := 1; ctx.Err() == nil; k++ {
				time.Sleep(time.Duration(a.body.PollAfterMs) * time.Millisecond)
				ta := apps[(i+k)%2]
				var err error
				a, err = cr.do("GET", queueURL(ta, "/"+ticket), user, "")
				if err != nil {
					log.problem("poll %s: %v", user, err)
					return
				}
				log.mu.Lock()
				log.polls = append(log.polls, a)
				log.mu.Unlock()
				switch {
				case a.status == http.StatusGone:
					log.mu.Lock()
					log.final[user] = "410 " + a.body.Code
					log.mu.Unlock()
					return
				case a.status == 503 || a.status == 429:
					a.body.PollAfterMs = 200
					continue
				case a.status != http.StatusOK:
					log.problem("poll %s: %d %+v", user, a.status, a.body)
					return
				case a.body.Status == "WAITING" || a.body.Status == "PREQUEUE":
					continue
				case a.body.Status == "SKIPPED":
					log.mu.Lock()
					log.final[user] = "SKIPPED"
					log.mu.Unlock()
					return
				case a.body.Status != "ADMITTED" || a.body.Pass == "":
					log.problem("poll %s: %+v", user, a.body)
					return
				}
				pass := a.body.Pass
				log.mu.Lock()
				log.passes[user] = pass
				var other string
				if i%13 == 0 { // another user's pass, if one was seen
					for u, p := range log.passes {
						if u != user {
							other = p
							break
						}
					}
				}
				log.mu.Unlock()
				if other != "" {
					if r, err := cr.do("POST", resURL(ta), user, fmt.Sprintf(`{"token":%q}`, other)); err == nil && r.status == http.StatusAccepted {
						invalid.Add(1)
					}
				}
				body := fmt.Sprintf(`{"token":%q}`, pass)
				// 429 and 503 are retried with the same key: a replayed key is answered before
				// the pass is spent again.
				var r crowdAnswer
				for try := 0; ; try++ {
					r, err = cr.doKey("POST", resURL(apps[(i+k+1+try)%2]), user, body, "k-"+user)
					if err != nil {
						log.problem("reserve %s: %v", user, err)
						return
					}
					if (r.status != 429 && r.status != 503) || try == 10 {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				if r.status == http.StatusOK { // a replay of the 202
					r.status = http.StatusAccepted
				}
				code := strconv.Itoa(r.status)
				if r.body.Code != "" {
					code += " " + r.body.Code
				}
				log.mu.Lock()
				log.final[user] = code
				if r.status == http.StatusAccepted {
					log.orders[r.body.ReservationID] = user
				}
				log.mu.Unlock()
				if r.status != http.StatusAccepted && r.status != http.StatusGone {
					log.problem("reserve %s with its pass: %s", user, code)
				}
				if i%7 == 0 { // the same pass again
					if r, err := cr.do("POST", resURL(apps[i%2]), user, body); err == nil && r.status == http.StatusAccepted {
						invalid.Add(1)
					}
				}
				return
			}
		}()
	}
	wg.Wait()
	crowdDone := time.Now()
	<-watchDone
	if soldAt.Load() == 0 {
		t.Fatalf("the stock never reached 0 in Redis; answers %v", tally(log.final))
	}
	sold := time.Unix(0, soldAt.Load())
	t.Logf("abandoned joined %v after the start, opening at %v, sold out (Redis) %v after the opening, crowd done %v after it",
		abandonedJoined.Sub(t0).Round(time.Millisecond), openIn, sold.Sub(opensAt).Round(time.Millisecond), crowdDone.Sub(sold).Round(time.Millisecond))

	// Ground truth of the line, read before the sweep below (which records heartbeats).
	rdb := apps[0].rdb
	k := "sk:{" + id + "}:q:"
	st, err := rdb.HGetAll(ctx, k+"st").Result()
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := strconv.ParseUint(st["pre"], 10, 64)
	pos, _ := strconv.ParseUint(st["pos"], 10, 64)
	admRaw, err1 := rdb.HGetAll(ctx, k+"adm").Result()
	usedRaw, err2 := rdb.HGetAll(ctx, k+"used").Result()
	usersRaw, err4 := rdb.HGetAll(ctx, k+"users").Result()
	hbRaw, err5 := rdb.ZRangeWithScores(ctx, k+"hb", 0, -1).Result()
	for _, err := range []error{err1, err2, err4, err5} {
		if err != nil {
			t.Fatal(err)
		}
	}
	adm := map[uint64]int64{}
	for e, ms := range admRaw {
		adm[atou(e)] = int64(atou(ms))
	}
	placeOf := map[uint64]uint64{} // ticket -> place, for the shuffled prequeue: the order every instance derives from the seed
	for i, n := range waitroom.Shuffle(atou(st["seed"]), pre) {
		placeOf[n] = uint64(i + 1)
	}
	place := func(n uint64) uint64 {
		if n <= pre {
			return placeOf[n]
		}
		return n
	}
	hb := map[uint64]int64{}
	for _, z := range hbRaw {
		hb[atou(z.Member.(string))] = int64(z.Score)
	}
	hasher := apps[0].inv.Hasher()
	ticketOf := func(user string) uint64 { return atou(usersRaw[hasher.UserHash(user)]) }
	t.Logf("line: %d places, prequeue %d, serving position %d, admitted %d (%s skipped), passes used %d",
		len(usersRaw), pre, pos, len(adm), st["skipped"], len(usedRaw))

	// Every polling user has its answer: exactly the stock got 202, the rest 410.
	answers := tally(log.final)
	t.Logf("requests: %d polls; answers: %v; attempts without one's own fresh pass answered 202: %d", len(log.polls), answers, invalid.Load())
	for _, p := range log.problems {
		t.Error(p)
	}
	if len(log.final) != users-abandoned {
		t.Errorf("%d of the %d polling users have a final answer", len(log.final), users-abandoned)
	}
	// SKIPPED: a user whose polls came further apart than the heartbeat (a client too slow
	// for the advice, on a loaded machine) lost the place; an answer too.
	if answers["202"] != stock || answers["202"]+answers["410 SOLD_OUT"]+answers["SKIPPED"] != len(log.final) {
		t.Errorf("answers %v: want exactly %d x 202 and the rest 410 SOLD_OUT (or SKIPPED)", answers, stock)
	}
	if n := invalid.Load(); n != 0 {
		t.Errorf("%d reservations without a valid pass of the user's own were accepted", n)
	}

	// Exactly the stock in MySQL, nobody over the limit, and every order's user used a pass.
	waitOrders(t, id, stock, 1)
	rows, err := testsvc.MySQL(t).Raw("SELECT user_id FROM orders WHERE activity_id = ?", id).Rows()
	if err != nil {
		t.Fatal(err)
	}
	var orderUsers []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		orderUsers = append(orderUsers, u)
	}
	rows.Close()
	withOrder := map[string]bool{}
	for _, u := range orderUsers {
		withOrder[u] = true
		n := ticketOf(u)
		if n == 0 {
			t.Errorf("order of %s, who has no place in line", u)
			continue
		}
		if _, used := usedRaw[strconv.FormatUint(place(n), 10)]; !used {
			t.Errorf("order of %s (ticket %d, place %d) without a used pass", u, n, place(n))
		}
	}

	// The inlet: no 1 s span over 500 admissions; places served in order.
	type admitted struct {
		e  uint64
		ms int64
	}
	byPlace := make([]admitted, 0, len(adm))
	for e, ms := range adm {
		byPlace = append(byPlace, admitted{e, ms})
	}
	sort.Slice(byPlace, func(i, j int) bool { return byPlace[i].e < byPlace[j].e })
	for i := 1; i < len(byPlace); i++ {
		if byPlace[i].ms < byPlace[i-1].ms {
			t.Errorf("place %d admitted at %d, before place %d at %d", byPlace[i].e, byPlace[i].ms, byPlace[i-1].e, byPlace[i-1].ms)
			break
		}
	}
	most, j := 0, 0 // byPlace is in time order too (checked above)
	for i := range byPlace {
		for byPlace[i].ms-byPlace[j].ms >= 1000 {
			j++
		}
		most = max(most, i-j+1)
	}
	t.Logf("most admissions in a 1 s span: %d (rate %d)", most, rate)
	if most > rate {
		t.Errorf("%d admissions within 1 s, rate %d", most, rate)
	}
	if len(adm) < stock {
		t.Errorf("%d admissions for a sale of %d", len(adm), stock)
	}
	// The stock factor (1.2): passes admitted and not used yet never above 1.2 x the stock
	// (at each step, the bound is 1.2 x the units left as the inlet's instance saw them).
	var usedMs []int64
	for _, ms := range usedRaw {
		usedMs = append(usedMs, int64(atou(ms)))
	}
	slices.Sort(usedMs)
	peak, u := 0, 0
	for i, a := range byPlace {
		for u < len(usedMs) && usedMs[u] <= a.ms {
			u++
		}
		peak = max(peak, i+1-u)
	}
	t.Logf("passes admitted and unused at once: at most %d", peak)
	if peak > stock*12/10 {
		t.Errorf("%d passes admitted and unused at once, stock %d x factor 1.2", peak, stock)
	}

	// Abandoned places: reached ones skipped, unless reached within the heartbeat of the join.
	var reached, skipped int
	for i := 0; i < abandoned; i++ {
		n := ticketOf(userOf(i))
		e := place(n)
		if n == 0 || e == 0 || e > pos {
			continue
		}
		reached++
		if at, ok := adm[e]; !ok {
			skipped++
		} else if at-hb[n] > heartbeat.Milliseconds() {
			t.Errorf("abandoned place %d (ticket %d, last heartbeat %d) admitted at %d", e, n, hb[n], at)
		}
	}
	t.Logf("abandoned places reached %d, skipped %d", reached, skipped)
	if skipped == 0 {
		t.Errorf("no abandoned place was skipped (%d reached)", reached)
	}

	// The prequeue is shuffled: the earlier half of its tickets is not the earlier half of its
	// places (about half of it, drawn at random; the join order would give all of it).
	if pre < 200 {
		t.Fatalf("prequeue of %d places: the scenario did not queue users before the opening", pre)
	}
	early := 0
	for n := uint64(1); n <= pre/2; n++ {
		if place(n) <= pre/2 {
			early++
		}
	}
	if f := float64(early) / float64(pre/2); f < 0.3 || f > 0.7 {
		t.Errorf("%.2f of the first half of the prequeue's tickets hold the first half of its places", f)
	}

	// 410 within 1 s of the sell-out: every poll the crowd sent from then on, and a sweep of
	// every place in line (each user once, the instances in turn).
	if d := time.Until(sold.Add(time.Second)); d > 0 {
		time.Sleep(d)
	}
	late, lateBad := 0, 0
	polledLate := map[string]bool{}
	for _, p := range log.polls {
		if !p.sent.Before(sold.Add(time.Second)) {
			late++
			polledLate[p.user] = true
			if p.status != http.StatusGone || p.body.Code != admission.CodeSoldOut {
				lateBad++
			}
		}
	}
	var sweepBad, swept atomic.Int64
	var sweepSample atomic.Value
	parallel(users, 32, func(i int) {
		user := userOf(i)
		ticket := log.tickets[user]
		if ticket == "" || withOrder[user] || polledLate[user] {
			return
		}
		swept.Add(1)
		a, err := cr.do("GET", queueURL(apps[i%2], "/"+ticket), user, "")
		if err != nil || a.status != http.StatusGone || a.body.Code != admission.CodeSoldOut {
			sweepBad.Add(1)
			sweepSample.Store(fmt.Sprintf("%s on %s: %d %+v %v", user, apps[i%2].base, a.status, a.body, err))
		}
	})
	t.Logf("polls sent 1 s after the sell-out: %d by the crowd (%d not 410); sweep of the other %d places in line: %d not 410",
		late, lateBad, swept.Load(), sweepBad.Load())
	if lateBad > 0 || sweepBad.Load() > 0 {
		t.Errorf("polls not answered 410 SOLD_OUT 1 s after the sell-out: %d of the crowd's, %d of the sweep (%v)", lateBad, sweepBad.Load(), sweepSample.Load())
	}
	t.Logf("whole test %v", time.Since(t0).Round(time.Millisecond))
}

func tally(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, v := range m {
		out[v]++
	}
	return out
}

func atou(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}
