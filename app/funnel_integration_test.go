//go:build integration

package app

import (
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/sql"
)

// funnelClient sends reservations and counts, per activity, what it saw: the answers by
// the layer they name, the users who tried and who got a unit.
type funnelClient struct {
	ta *testApp
	mu sync.Mutex
	// by activity
	attempts map[string]int64
	layers   map[string]map[string]int64
	units    map[string]int64
	tried    map[string]map[string]bool
	buyers   map[string]map[string]bool
}

func newFunnelClient(ta *testApp) *funnelClient {
	return &funnelClient{ta: ta, attempts: map[string]int64{}, layers: map[string]map[string]int64{},
		units: map[string]int64{}, tried: map[string]map[string]bool{}, buyers: map[string]map[string]bool{}}
}

// refusedLayer is the funnel layer a refusal's code names.
var refusedLayer = map[string]string{
	admission.CodeDisabled:         "killswitch",
	admission.CodeNotOpen:          "not_open",
	admission.CodeClosed:           "closed",
	admission.CodeForbidden:        "blacklist",
	admission.CodeNotAdmitted:      "canary",
	admission.CodeTokenRequired:    "token",
	admission.CodeAlreadyPurchased: "user_limit",
	admission.CodeSoldOut:          "sold_out",
}

// clientLayer is the funnel outcome an answer names, as the client reads it. A 429 of the user
// or IP dimension is "user_ip": the client cannot tell the limiter's bucket from its memory of
// a recent refusal (the report's rate_user, rate_ip and remembered).
func clientLayer(t testing.TB, a answer) string {
	code, _ := a.body["code"].(string)
	switch {
	case a.status == http.StatusAccepted:
		return "accepted"
	case a.status == http.StatusOK:
		return "replayed"
	case code == admission.CodeRateLimited:
		d, _ := a.body["dimension"].(string)
		if d == "user" || d == "ip" {
			return "user_ip"
		}
		return "rate_" + d
	}
	if l, ok := refusedLayer[code]; ok {
		return l
	}
	t.Fatalf("unexpected answer %d %v", a.status, a.body)
	return ""
}

// reserve sends one reservation of user from ip (X-Forwarded-For, the test instance trusts
// loopback as its proxy) and counts the answer.
func (fc *funnelClient) reserve(t testing.TB, id, user, ip, idem, channel string) string {
	h := map[string]string{"X-User-Id": user, "X-Forwarded-For": ip}
	if idem != "" {
		h["Idempotency-Key"] = idem
	}
	if channel != "" {
		h["X-Channel"] = channel
	}
	a := fc.ta.do(t, "POST", "/api/v1/activities/"+id+"/reservations", h, "")
	l := clientLayer(t, a)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.attempts[id]++
	if fc.layers[id] == nil {
		fc.layers[id], fc.tried[id], fc.buyers[id] = map[string]int64{}, map[string]bool{}, map[string]bool{}
	}
	fc.layers[id][l]++
	fc.tried[id][user] = true
	if l == "accepted" {
		fc.units[id]++
		fc.buyers[id][user] = true
	}
	return l
}

// report reads the sale report of id once the writer has written every unit the client got
// (and the instance has flushed its counts: attempts as many as the client sent).
func (fc *funnelClient) report(t *testing.T, id string) map[string]any {
	t.Helper()
	var a answer
	testwait.Eventually(t, 30*time.Second, func() bool {
		a = fc.ta.admin(t, "GET", "/admin/v1/activities/"+id+"/report", "")
		if a.status != http.StatusOK {
			return false
		}
		orders, _ := a.body["orders"].(map[string]any)
		return a.body["attempts"] == float64(fc.attempts[id]) && orders["units"] == float64(fc.units[id]) && a.body["drift"] == float64(0)
	}, "report of %s with %d attempts, %d units and no drift (last %v)", id, fc.attempts[id], fc.units[id],
		testwait.Lazy(func() string { return fmt.Sprint(a.status, a.body) }))
	return a.body
}

// checkReport compares the report of id with the client's counts and MySQL.
func (fc *funnelClient) checkReport(t *testing.T, id string, rep map[string]any) {
	t.Helper()
	answers := rep["answers"].(map[string]any)
	refused := rep["refused"].(map[string]any)
	var sum, refusedSum float64
	for o, v := range answers {
		sum += v.(float64)
		if _, ok := refused[o]; ok {
			refusedSum += v.(float64)
			if refused[o] != v {
				t.Errorf("%s: refused[%s] = %v, answers[%s] = %v", id, o, refused[o], o, v)
			}
		}
	}
	if sum != rep["attempts"].(float64) {
		t.Errorf("%s: the answers sum to %v, attempts %v: %v", id, sum, rep["attempts"], answers)
	}
	if refusedSum != rep["refusedTotal"].(float64) {
		t.Errorf("%s: refused sum to %v, refusedTotal %v", id, refusedSum, rep["refusedTotal"])
	}
	got := map[string]int64{}
	for o, v := range answers {
		l := o
		if o == "rate_user" || o == "rate_ip" || o == "remembered" {
			l = "user_ip"
		}
		got[l] += int64(v.(float64))
	}
	for l, n := range fc.layers[id] {
		if got[l] != n {
			t.Errorf("%s: report counts %d %s, the client saw %d (report %v)", id, got[l], l, n, answers)
		}
	}
	for l, n := range got {
		if n != 0 && fc.layers[id][l] == 0 {
			t.Errorf("%s: report counts %d %s, the client saw none", id, n, l)
		}
	}
	// MySQL, the ground truth of the units sold and of the buyers.
	var row struct {
		Count, Units, Buyers int64
	}
	if err := fc.ta.db.Model(&sql.Order{}).Where("activity_id = ?", id).
		Select("COUNT(*) AS count, COALESCE(SUM(quantity), 0) AS units, COUNT(DISTINCT user_id) AS buyers").Scan(&row).Error; err != nil {
		t.Fatal(err)
	}
	orders := rep["orders"].(map[string]any)
	buyers := int64(len(fc.buyers[id]))
	if row.Units != fc.units[id] || orders["units"] != float64(row.Units) || orders["count"] != float64(row.Count) ||
		rep["unitsReserved"] != float64(row.Units) || answers["accepted"] != float64(row.Count) {
		t.Errorf("%s: MySQL has %d orders of %d units, the client got %d units, the report says orders %v, unitsReserved %v, accepted %v",
			id, row.Count, row.Units, fc.units[id], orders, rep["unitsReserved"], answers["accepted"])
	}
	if row.Buyers != buyers || orders["distinctBuyers"] != float64(buyers) {
		t.Errorf("%s: %d distinct buyers in MySQL, %d seen by the client, report %v", id, row.Buyers, buyers, orders["distinctBuyers"])
	}
	users := rep["distinctUsers"].(map[string]any)
	se := users["standardError"].(float64)
	for _, c := range []struct {
		stage string
		want  int
	}{{"tried", len(fc.tried[id])}, {"bought", len(fc.buyers[id])}} {
		est := users[c.stage].(float64)
		// Three standard errors, and at least one user (the estimate is an integer).
		if tol := math.Max(1, math.Ceil(3*se*float64(c.want))); math.Abs(est-float64(c.want)) > tol {
			t.Errorf("%s: %s users estimated %v, the client counted %d (tolerance %v)", id, c.stage, est, c.want, tol)
		}
	}
	if d := rep["drift"]; d != float64(0) {
		t.Errorf("%s: drift %v", id, d)
	}
}

// checkFunnelMetrics checks that the instance's funnel series add up: attempts = the sum of
// the answers, for the activity.
func checkFunnelMetrics(t *testing.T, ta *testApp, id string) {
	t.Helper()
	attempts := scrapePrefix(t, ta, `seckill_funnel_attempts_total{activity="`+id+`"}`)
	answers := scrapePrefix(t, ta, `seckill_funnel_answers_total{activity="`+id+`",`)
	if attempts == 0 || attempts != answers {
		t.Errorf("%s: seckill_funnel_attempts_total %v, the answers sum to %v", id, attempts, answers)
	}
}

// scrapePrefix sums the samples of /metrics whose line starts with prefix.
func scrapePrefix(t *testing.T, ta *testApp, prefix string) float64 {
	t.Helper()
	var sum float64
	for _, line := range strings.Split(metricsText(t, ta), "\n") {
		if strings.HasPrefix(line, prefix) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

// The funnel metrics add up, in a test that drives each layer (issue 25): every outcome is
// produced at least once, the report's counts by layer equal the answers the client saw, and
// attempts = the sum of every outcome, in the report and in /metrics.
func TestFunnelCountsEveryLayer(t *testing.T) {
	main, kill, later, closed := uniq(t, "fmain"), uniq(t, "fkill"), uniq(t, "flater"), uniq(t, "fclosed")
	canary, token, actLim, camp, big := uniq(t, "fcanary"), uniq(t, "ftoken"), uniq(t, "fact"), uniq(t, "fcamp"), uniq(t, "fbig")
	campaign := uniq(t, "cmp")
	extra := "trustedProxies: [127.0.0.1/32, '::1/128']\n" +
		"activities:\n" +
		"  " + kill + ": {killSwitch: true}\n" +
		"  " + canary + ": {canaryRatio: 0}\n" +
		"  " + actLim + ": {limits: {rate: 0.01, burst: 2}}\n" +
		"campaigns:\n  " + campaign + ": {limits: {rate: 0.01, burst: 2}}\n" +
		"blacklist: {users: [blocked-user], ips: []}\n"
	// cfg is the test's configuration with each replace[i] replaced by replace[i+1].
	cfg := func(replace ...string) string {
		c := strings.Replace(testConfig, "limits:\n", "limits:\n  channels: {tiny: {rate: 0.01, burst: 2}}\n", 1) + extra
		for i := 0; i < len(replace); i += 2 {
			if !strings.Contains(c, replace[i]) {
				t.Fatalf("no %q in the configuration", replace[i])
			}
			c = strings.Replace(c, replace[i], replace[i+1], 1)
		}
		return c
	}
	ta := startApp(t, realOptions(t), cfg())
	past := time.Now().Add(-time.Minute)
	ta.createActivity(t, main, 5, 1, 2, past)
	ta.createActivity(t, kill, 5, 1, 1, past)
	ta.createActivity(t, later, 5, 1, 1, time.Now().Add(time.Hour))
	ta.createActivity(t, canary, 5, 1, 1, past)
	ta.createActivity(t, actLim, 100, 1, 1, past)
	ta.createActivity(t, big, 1000, 10, 2, past)
	post := func(body string) {
		if a := ta.admin(t, "POST", "/admin/v1/activities", body); a.status != http.StatusCreated {
			t.Fatalf("create: %d %v", a.status, a.body)
		}
	}
	post(fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":1,"opensAt":%q,"closesAt":%q}`,
		closed, time.Now().Add(-2*time.Minute).UTC().Format(time.RFC3339Nano), time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)))
	post(fmt.Sprintf(`{"activityId":%q,"stock":5,"perUserLimit":1,"shards":1,"requireToken":true}`, token))
	post(fmt.Sprintf(`{"activityId":%q,"campaignId":%q,"stock":100,"perUserLimit":1,"shards":1}`, camp, campaign))

	fc := newFunnelClient(ta)
	ip := 0
	nextIP := func() string { ip++; return fmt.Sprintf("10.1.%d.%d", ip/250, ip%250+1) }
	want := func(got, layer string) {
		t.Helper()
		if got != layer {
			t.Fatalf("answer %s, want %s", got, layer)
		}
	}
	// Five buyers take the stock of main, one buys again (before the sell-out: once main is
	// sold out, that layer answers first), one replays, two find it sold out.
	for i := 0; i < 5; i++ {
		want(fc.reserve(t, main, fmt.Sprintf("m-%d", i), nextIP(), fmt.Sprintf("key-%d", i), ""), "accepted")
		if i == 1 {
			want(fc.reserve(t, main, "m-1", nextIP(), "another-key", ""), "user_limit")
		}
	}
	want(fc.reserve(t, main, "m-0", nextIP(), "key-0", ""), "replayed")
	fc.reserve(t, main, "m-late-1", nextIP(), "", "")
	fc.reserve(t, main, "m-late-2", nextIP(), "", "")
	want(fc.reserve(t, kill, "k-1", nextIP(), "", ""), "killswitch")
	want(fc.reserve(t, later, "l-1", nextIP(), "", ""), "not_open")
	want(fc.reserve(t, closed, "c-1", nextIP(), "", ""), "closed")
	want(fc.reserve(t, big, "blocked-user", nextIP(), "", ""), "blacklist")
	want(fc.reserve(t, canary, "n-1", nextIP(), "", ""), "canary")
	want(fc.reserve(t, token, "t-1", nextIP(), "", ""), "token")
	for i := 0; i < 4; i++ {
		fc.reserve(t, actLim, fmt.Sprintf("a-%d", i), nextIP(), "", "")
		fc.reserve(t, camp, fmt.Sprintf("p-%d", i), nextIP(), "", "")
		fc.reserve(t, big, fmt.Sprintf("ch-%d", i), nextIP(), "", "tiny")
	}
	// The per-user bucket, then the per-IP bucket (each with its memory of the refusal).
	ta.setConfig(t, cfg("user:     {rate: 1000, burst: 1000}", "user:     {rate: 0.01, burst: 2}"))
	for i := 0; i < 4; i++ {
		fc.reserve(t, big, "hammer", nextIP(), "", "")
	}
	ta.setConfig(t, cfg("ip:       {rate: 1000000, burst: 1000000}", "ip:       {rate: 0.01, burst: 2}"))
	for i := 0; i < 4; i++ {
		fc.reserve(t, big, fmt.Sprintf("ip-%d", i), "10.9.9.9", "", "")
	}
	ta.setConfig(t, cfg("global:   {rate: 1000000, burst: 1000000}", "global:   {rate: 0.01, burst: 2}"))
	for i := 0; i < 4; i++ {
		fc.reserve(t, big, fmt.Sprintf("g-%d", i), nextIP(), "", "")
	}
	ta.setConfig(t, cfg())

	for _, l := range []string{"accepted", "replayed", "user_limit", "sold_out", "killswitch", "not_open", "closed", "blacklist",
		"canary", "token", "rate_activity", "rate_campaign", "rate_channel", "user_ip", "rate_global"} {
		n := int64(0)
		for _, m := range fc.layers {
			n += m[l]
		}
		if n == 0 {
			t.Errorf("no answer of layer %s: the test does not drive it", l)
		}
	}
	var remembered, rateUser, rateIP float64
	for _, id := range []string{main, kill, later, closed, canary, token, actLim, camp, big} {
		rep := fc.report(t, id)
		fc.checkReport(t, id, rep)
		checkFunnelMetrics(t, ta, id)
		ans := rep["answers"].(map[string]any)
		remembered += ans["remembered"].(float64)
		rateUser += ans["rate_user"].(float64)
		rateIP += ans["rate_ip"].(float64)
	}
	if remembered == 0 || rateUser == 0 || rateIP == 0 {
		t.Errorf("rate_user %v, rate_ip %v, remembered %v: want each driven", rateUser, rateIP, remembered)
	}
	// Campaign budgets, read off one panel: attempts, accepted and the budget's refusals.
	ca := scrapePrefix(t, ta, `seckill_campaign_attempts_total{campaign="`+campaign+`"}`)
	acc := scrapePrefix(t, ta, `seckill_campaign_answers_total{campaign="`+campaign+`",outcome="accepted"}`)
	refused := scrapePrefix(t, ta, `seckill_campaign_answers_total{campaign="`+campaign+`",outcome="rate_campaign"}`)
	if ca != float64(fc.attempts[camp]) || acc != float64(fc.layers[camp]["accepted"]) || refused != float64(fc.layers[camp]["rate_campaign"]) {
		t.Errorf("campaign %s: attempts %v accepted %v refused %v, the client saw %d, %v", campaign, ca, acc, refused, fc.attempts[camp], fc.layers[camp])
	}
}

// A test rush reads the report afterwards and checks it against MySQL and the client's own
// counts (issue 25): units sold and accepted equal, refusals by layer equal, distinct users
// within the stated error.
func TestFunnelReportAfterARush(t *testing.T) {
	ta := startApp(t, realOptions(t), testConfig)
	id := uniq(t, "rush")
	const stock, users, workers, requests = 150, 600, 16, 1200
	ta.createActivity(t, id, stock, 2, 4, time.Now().Add(-time.Second))
	fc := newFunnelClient(ta)
	rng := rand.New(rand.NewSource(25))
	who := make([]int, requests)
	for i := range who {
		who[i] = rng.Intn(users) // some users come back: user_limit and replays of nothing
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				u := who[i]
				fc.reserve(t, id, fmt.Sprintf("r-%d", u), fmt.Sprintf("10.2.%d.%d", u/250, u%250+1), "", "")
			}
		}()
	}
	start := time.Now()
	for i := 0; i < requests; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d requests in %v: %v", requests, time.Since(start), fc.layers[id])
	if fc.units[id] != stock {
		t.Fatalf("the client got %d units of %d", fc.units[id], stock)
	}
	rep := fc.report(t, id)
	fc.checkReport(t, id, rep)
	checkFunnelMetrics(t, ta, id)
	if rep["soldOut"] != true || rep["timeToSellOutMs"] == nil || rep["firstAccepted"] == nil || rep["lastAccepted"] == nil || rep["peakSecond"] == nil {
		t.Errorf("sold-out report without its times: %v", rep)
	}
	lat := rep["latency"].(map[string]any)
	if acc := lat["accepted"].(map[string]any); acc["count"] != float64(fc.layers[id]["accepted"]) || acc["p50Ms"] == nil || acc["p99Ms"] == nil {
		t.Errorf("latency of accepted answers: %v", acc)
	}
	t.Logf("report: %v", rep)
}
