//go:build integration

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seckill/seckill/internal/testwait"
)

// The waiting room page in Debian's headless Chromium, as a shopper uses it: 20 places are
// ahead of it and the inlet lets 2 a second in; the page shows its position falling, then,
// its turn come, reserves with the pass and shows the reservation, which the service holds
// (its GET answers it, and the pass of the page's place is used in Redis). Screenshots of the
// page in line and of the result are saved (SECKILL_TEST_OUTPUT or the test's artifact dir).
func TestWaitingRoomPage(t *testing.T) {
	c := newConsole(t) // the browser first: its start must not eat the line
	id := uniq(t, "wr-page")
	ta := startApp(t, realOptions(t), roomConfig(id, "{enabled: true, rate: 2, order: fifo, heartbeat: 30s, passTTL: 1m}"))
	pageBehind(t, c, ta, id, 20)

	type shown struct{ Status, Position, Result string }
	var seen []int
	var last shown
	var inLine string
	testwait.Eventually(t, 90*time.Second, func() bool {
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[shown](`({Status: document.getElementById("status").textContent,
			Position: document.getElementById("position").textContent, Result: document.getElementById("result").textContent})`))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		last = s
		if p, err := strconv.Atoi(s.Position); err == nil && (len(seen) == 0 || seen[len(seen)-1] != p) {
			seen = append(seen, p)
			if len(seen) == 2 && p > 0 {
				inLine = c.screenshot("waiting-room-in-line")
			}
		}
		return s.Result != ""
	}, "the page's result (last shown %+v, positions %v)", testwait.Lazy(func() string { return fmt.Sprintf("%+v", last) }), testwait.Lazy(func() string { return fmt.Sprint(seen) }))
	done := c.screenshot("waiting-room-result")
	t.Logf("positions shown: %v; screenshots %s, %s", seen, inLine, done)

	if last.Status != "RESERVED" {
		t.Fatalf("the page ended with status %q: %q", last.Status, last.Result)
	}
	if len(seen) < 3 || seen[len(seen)-1] != 0 {
		t.Fatalf("positions shown %v: want at least two positions in line, then 0", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] >= seen[i-1] {
			t.Fatalf("positions shown %v: not falling", seen)
		}
	}
	for _, p := range []string{inLine, done} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("screenshot %q: %v", p, err)
		}
	}
	rid := regexp.MustCompile(`Reservation (\S+)\.$`).FindStringSubmatch(last.Result)
	if rid == nil {
		t.Fatalf("no reservation id in %q", last.Result)
	}
	if g := ta.do(t, "GET", "/api/v1/reservations/"+rid[1], map[string]string{"X-User-Id": "page-user"}, ""); g.status != http.StatusOK {
		t.Fatalf("the page's reservation %s: %d %v", rid[1], g.status, g.body)
	}
	// fifo: the page's place is its ticket, 21.
	if used, err := ta.rdb.HExists(context.Background(), "sk:{"+id+"}:q:used", "21").Result(); err != nil || !used {
		t.Fatalf("the pass of place 21 is not used in Redis (%v, %v)", used, err)
	}
}

// TestWaitingRoomPageKeepsItsTurnThroughALostAnswer: the page's reservation is made, its 202
// lost on the way (a proxy answers 503 for it), and the page, retrying with its key, shows the
// reservation the service made (200), where a retry without the key finds the pass used (403).
func TestWaitingRoomPageKeepsItsTurnThroughALostAnswer(t *testing.T) {
	pageKeepsItsTurn(t, "wr-lost", 100, func(r *http.Response, c *console) error {
		const lostBody = "upstream connection lost"
		r.StatusCode, r.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
		r.Header = http.Header{"Retry-After": {"1"}, "Content-Type": {"text/plain"}}
		r.Body, r.ContentLength = io.NopCloser(strings.NewReader(lostBody)), int64(len(lostBody))
		return nil
	})
}

// TestWaitingRoomPageKeepsItsTurnThroughAReload: the buyer reloads the page while its
// reservation's answer is on the way (the proxy holds the 202 until the reload is done), and
// that reservation took the last unit. The reloaded page's join is answered 410 SOLD_OUT (or
// its turn shows USED); with the pass and key its tab kept it asks for that reservation again
// and shows it, instead of saying "Sold out." or only that the turn was used.
func TestWaitingRoomPageKeepsItsTurnThroughAReload(t *testing.T) {
	loads := pageKeepsItsTurn(t, "wr-reload", 1, func(r *http.Response, c *console) error {
		// The instance knows the sale sold out before the page comes back: its join is 410.
		act := strings.TrimSuffix(r.Request.URL.String(), "/reservations")
		if err := statusWithin(act, "SOLD_OUT", 10*time.Second); err != nil {
			return err
		}
		if _, err := chromedp.Run(c.ctx, chromedp.Reload()); err != nil {
			return fmt.Errorf("reload the page: %w", err)
		}
		return errors.New("the page was reloaded") // the old page's request has no one to answer
	})
	if loads != 2 {
		t.Fatalf("the page was loaded %d times, want 2 (the reload did not happen: the test tested a retry)", loads)
	}
}

// statusWithin polls the activity at url (GET, no credentials needed) until its status is want.
func statusWithin(url, want string, within time.Duration) error {
	var last string
	for until := time.Now().Add(within); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			continue
		}
		var v struct{ Status string }
		err = json.NewDecoder(resp.Body).Decode(&v)
		_ = resp.Body.Close()
		if err == nil && v.Status == want {
			return nil
		}
		last = fmt.Sprintf("%d %q %v", resp.StatusCode, v.Status, err)
	}
	return fmt.Errorf("%s not %s within %s (last: %s)", url, want, within, last)
}

// pageKeepsItsTurn opens the waiting room page of a new activity (id prefix, stock units)
// through a proxy whose lose takes the answer of the page's first reservation (the service
// made it: its body is kept) and does what the buyer's side does to it; the page must end
// showing that reservation. It returns how many times the page was loaded.
func pageKeepsItsTurn(t *testing.T, prefix string, stock int, lose func(r *http.Response, c *console) error) (loads int32) {
	c := newConsole(t)
	id := uniq(t, prefix)
	ta := startApp(t, realOptions(t), roomConfig(id, "{enabled: true, rate: 20, order: fifo, heartbeat: 30s, passTTL: 1m}"))
	ta.createActivity(t, id, stock, 1, 1, time.Now().Add(-time.Second))
	target, err := url.Parse(ta.base)
	if err != nil {
		t.Fatal(err)
	}
	var posts, pages atomic.Int32
	var made atomic.Value // the body of the answer the page never saw
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path == "/waiting-room" {
			pages.Add(1)
		}
		if r.Request.Method != http.MethodPost || !strings.HasSuffix(r.Request.URL.Path, "/reservations") {
			return nil
		}
		if posts.Add(1) != 1 {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return err
		}
		made.Store(fmt.Sprintf("%d %s", r.StatusCode, body))
		return lose(r, c)
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	px := httptest.NewServer(rp)
	t.Cleanup(px.Close)

	c.do("open the waiting room page through the proxy",
		chromedp.Navigate(px.URL+"/waiting-room?activity="+id+"#user=lost-user"),
		chromedp.WaitVisible(chromedp.CSS("#position")))
	type shown struct{ Status, Result string }
	var last shown
	testwait.Eventually(t, 60*time.Second, func() bool {
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[shown](`({Status: document.getElementById("status").textContent,
			Result: document.getElementById("result").textContent})`))
		if err != nil { // between two pages while one reloads; the next read tells
			last = shown{Result: "(not read: " + err.Error() + ")"}
			return false
		}
		last = s
		return s.Result != "" && posts.Load() > 1
	}, "the page's result after its first reservation (last shown %+v)", testwait.Lazy(func() string { return fmt.Sprintf("%+v", last) }))
	first, _ := made.Load().(string)
	if !strings.HasPrefix(first, "202 ") {
		t.Fatalf("the lost answer was %q, want the 202 of a reservation made", first)
	}
	var want struct {
		ReservationID string `json:"reservationId"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(first, "202 ")), &want); err != nil || want.ReservationID == "" {
		t.Fatalf("the lost answer %q: %v", first, err)
	}
	if last.Status != "RESERVED" || !strings.HasSuffix(last.Result, "Reservation "+want.ReservationID+".") {
		t.Fatalf("the page ended with %+v after %d reservation requests; the service made %s", last, posts.Load(), want.ReservationID)
	}
	t.Logf("the page kept its turn: %d reservation requests, %q", posts.Load(), last.Result)
	return pages.Load()
}

// TestWaitingRoomPageJoinsAgainWhenTheLineIsLost: the page waits at place 21 when Redis loses
// the line (its keys deleted, as a Redis back with less). The new line has handed out no
// ticket, so the page's next poll is answered 404 (its ticket is not its place any more); the
// page joins again, gets place 1 of the new line, and reserves with its pass.
func TestWaitingRoomPageJoinsAgainWhenTheLineIsLost(t *testing.T) {
	c := newConsole(t)
	id := uniq(t, "wr-page-lost")
	ta := startApp(t, realOptions(t), roomConfig(id, "{enabled: true, rate: 2, order: fifo, heartbeat: 8s, passTTL: 1m}"))
	pageBehind(t, c, ta, id, 20)
	ctx := context.Background()
	users := "sk:{" + id + "}:q:users"
	testwait.Eventually(t, 30*time.Second, func() bool {
		n, err := ta.rdb.HLen(ctx, users).Result()
		return err == nil && n == 21
	}, "the page's place in line")
	var lost []string
	for _, k := range []string{"users", "st", "hb", "adm", "live", "used", "steps", "skip", "lease"} {
		lost = append(lost, "sk:{"+id+"}:q:"+k)
	}
	if err := ta.rdb.Del(ctx, lost...).Err(); err != nil {
		t.Fatal(err)
	}

	type shown struct{ Status, Result string }
	var last shown
	testwait.Eventually(t, 60*time.Second, func() bool {
		s, err := chromedp.Run(c.ctx, chromedp.Evaluate[shown](`({Status: document.getElementById("status").textContent,
			Result: document.getElementById("result").textContent})`))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		last = s
		return s.Result != ""
	}, "the page's result (last shown %+v)", testwait.Lazy(func() string { return fmt.Sprintf("%+v", last) }))
	if last.Status != "RESERVED" {
		t.Fatalf("the page ended with status %q: %q", last.Status, last.Result)
	}
	// the page joined the new line (its only place) and used that place's pass
	if n, err := ta.rdb.HLen(ctx, users).Result(); err != nil || n != 1 {
		t.Fatalf("the new line has %d places (%v), want the page's alone", n, err)
	}
	if used, err := ta.rdb.HExists(ctx, "sk:{"+id+"}:q:used", "1").Result(); err != nil || !used {
		t.Fatalf("the pass of the new line's place 1 is not used in Redis (%v, %v)", used, err)
	}
}

// pageBehind creates activity id (100 units, open), puts ahead users in its line, and opens the
// waiting room page as page-user, who joins behind them.
func pageBehind(t *testing.T, c *console, ta *testApp, id string, ahead int) {
	t.Helper()
	ta.createActivity(t, id, 100, 1, 1, time.Now().Add(-time.Second))
	for i := 0; i < ahead; i++ {
		if j := ta.join(t, id, fmt.Sprintf("ahead-%d", i)); j.status != http.StatusCreated {
			t.Fatalf("join ahead-%d: %d %v", i, j.status, j.body)
		}
	}
	c.do("open the waiting room page",
		chromedp.Navigate(ta.base+"/waiting-room?activity="+id+"#user=page-user"),
		chromedp.WaitVisible(chromedp.CSS("#position")))
}
