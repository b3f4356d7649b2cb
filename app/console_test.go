//go:build integration

package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// console drives the Nacos web console in a headless Chromium, as an operator would.
type console struct {
	t   *testing.T
	ctx context.Context
	out string // where screenshots go
}

// newConsole starts Debian's Chromium (flags for root on a server: no sandbox, no GPU, no
// background traffic, an empty profile) and returns a tab; both end with the test.
func newConsole(t *testing.T) *console {
	t.Helper()
	bin, err := testsvc.Chromium()
	if err != nil {
		t.Fatal(err)
	}
	out := os.Getenv("SECKILL_TEST_OUTPUT")
	if out == "" {
		out = t.ArtifactDir()
	} else {
		out = filepath.Join(out, t.Name())
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	// Start the browser on ctx itself: the browser lives as long as the context of the first
	// run, and do runs steps under shorter-lived contexts derived from it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &console{t: t, ctx: ctx, out: out}
}

// do runs browser steps; on failure it saves a screenshot of the page and fails the test.
func (c *console) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		c.t.Fatalf("console: %s: %v (page: %s)", what, err, c.screenshot("failed-"+strings.ReplaceAll(what, " ", "-")))
	}
}

// screenshot saves the whole page as name.png in the output dir and returns its path.
func (c *console) screenshot(name string) string {
	c.t.Helper()
	png, err := chromedp.Run(c.ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		return fmt.Sprintf("no screenshot: %v", err)
	}
	path := filepath.Join(c.out, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Sprintf("no screenshot: %v", err)
	}
	return path
}

// text returns the visible text of the page.
func (c *console) text() string {
	c.t.Helper()
	s, err := chromedp.Run(c.ctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil {
		c.t.Fatalf("console: page text: %v", err)
	}
	return s
}

// login signs in on the console's login page.
func (c *console) login() {
	c.t.Helper()
	c.do("log in",
		chromedp.Navigate("http://"+testsvc.NacosConsoleAddr+"/"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), testsvc.NacosUsername),
		chromedp.SendKeys(chromedp.CSS("#password"), testsvc.NacosPassword),
		chromedp.Click(`//button[contains(@class,"next-btn")]`),
		chromedp.WaitVisible(`//*[text()="Configuration Management"]`))
}

// openConfigEditor goes Configuration Management > namespace tab > the row of dataID > Edit.
func (c *console) openConfigEditor(namespace, dataID string) {
	c.t.Helper()
	c.do("open the configurations", chromedp.Click(`(//*[text()="Configurations"])[1]`))
	row := fmt.Sprintf(`//tr[.//*[text()=%q]]//a[text()="Edit"]`, dataID)
	c.chooseNamespaceUntil(namespace, row, dataID, "failed-config-list")
	c.do("open the config editor",
		chromedp.Click(row),
		chromedp.WaitVisible(`//*[text()="Edit Configuration"]`),
		chromedp.WaitVisible(`//div[contains(@class,"view-line")]`))
}

// chooseNamespaceUntil clicks the tab of namespace until row shows, 5 times at the most with
// 5 s each: a list loads the public namespace first, and a tab clicked before that load ends
// is overridden by it. what names the row in the failure, shot its screenshot.
func (c *console) chooseNamespaceUntil(namespace, row, what, shot string) {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		c.do("choose namespace "+namespace, chromedp.Click(fmt.Sprintf(`//*[text()=%q]`, namespace)))
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		err := chromedp.Do(ctx, chromedp.WaitVisible(row))
		cancel()
		if err == nil {
			return
		}
		if attempt == 5 {
			c.t.Fatalf("console: %s not listed in namespace %s: %v (page: %s)", what, namespace, err, c.screenshot(shot))
		}
	}
}

// edit replaces the value from at the end of the killSwitch line (the last) with to, the way an
// operator does (click the value, End, Backspace over it, type), then clicks Publish and
// the Publish of the comparison dialog. Right after that last click it calls clicked with its
// time (clicked must not block), then waits for the console's confirmation and closes it.
func (c *console) edit(from, to string, clicked func(at time.Time)) {
	c.t.Helper()
	c.do("edit "+from+" to "+to,
		// The killSwitch line is the document's last (an empty line follows it); other lines
		// hold true/false too (auth.trustedGateway), so the cursor goes there by keyboard:
		// Ctrl+End, up one line, End.
		chromedp.Click(fmt.Sprintf(`(//div[contains(@class,"view-line")]//span[text()=%q])[last()]`, from)),
		chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent(kb.ArrowUp),
		chromedp.KeyEvent(kb.End),
		chromedp.KeyEvent(strings.Repeat(kb.Backspace, len(from))),
		chromedp.KeyEvent(to),
		chromedp.Click(`(//button[.//span[text()="Publish"]])[1]`),
		chromedp.WaitVisible(`(//div[contains(@class,"next-dialog-footer")]//button[.//span[text()="Publish"]])[last()]`))
	at := time.Now()
	c.do("confirm the publish", chromedp.Click(`(//div[contains(@class,"next-dialog-footer")]//button[.//span[text()="Publish"]])[last()]`))
	clicked(at)
	// The confirmation is the console's, not what the test asserts (the instances' answers
	// are): on a loaded machine it can come late or be missed, so closing it is best effort,
	// with Escape when its OK button does not show.
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	// The OK button is found among the visible buttons by script: the console keeps hidden
	// dialogs of earlier publishes in the page (which an XPath [last()] may pick), and its
	// success dialog is not always built with the same classes.
	err := chromedp.Do(ctx,
		waitDone(chromedp.Poll[bool](`[...document.querySelectorAll("button")].some(b => b.offsetParent !== null && b.innerText.trim() === "OK")`)),
		// Click until it is gone: a click during the dialog's opening animation is ignored.
		waitDone(chromedp.Poll[bool](`(() => {
			const ok = [...document.querySelectorAll("button")]
				.filter(b => b.offsetParent !== null && b.innerText.trim() === "OK");
			if (ok.length === 0) return true;
			ok[ok.length - 1].click();
			return false;
		})()`, chromedp.WithPollingInterval(300*time.Millisecond))))
	if err != nil {
		c.t.Logf("console: the publish confirmation did not close (%v; page: %s); pressing Escape", err, c.screenshot("confirmation-not-closed"))
		if _, err := chromedp.Run(c.ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
			c.t.Fatalf("console: Escape: %v", err)
		}
	}
}

// waitDone turns a polling action into a step whose value is dropped.
func waitDone[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}

// probe is one reservation attempt that does not fail the test (it runs in goroutines).
func probe(base, activity, user string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/activities/"+activity+"/reservations", nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("X-User-Id", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var body struct {
		Code string `json:"code"`
	}
	raw, _ := io.ReadAll(resp.Body)
	json.Unmarshal(raw, &body)
	return resp.StatusCode, body.Code
}

// watchAll runs untilAll in the background and delivers its result on the channel.
func watchAll(bases []string, activity string, since time.Time, limit time.Duration, ok func(status int, code string) bool) <-chan []time.Duration {
	res := make(chan []time.Duration, 1)
	go func() { res <- untilAll(bases, activity, since, limit, ok) }()
	return res
}

// untilAll polls every instance every 10 ms until ok holds for its answer and returns how
// long after since each took (-1: not within limit).
func untilAll(bases []string, activity string, since time.Time, limit time.Duration, ok func(status int, code string) bool) []time.Duration {
	return pollEach(len(bases), since, limit, func(i, n int) bool {
		return ok(probe(bases[i], activity, fmt.Sprintf("console-probe-%d-%d-%d", i, n, time.Now().UnixNano())))
	})
}

// pollEach polls each of n instances, in parallel and every 10 ms, until ok(instance, try)
// holds, and returns how long after since each took (-1: not within limit).
func pollEach(n int, since time.Time, limit time.Duration, ok func(instance, try int) bool) []time.Duration {
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; time.Since(since) < limit; try++ {
				if ok(i, try) {
					took[i] = time.Since(since)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			took[i] = -1
		}()
	}
	wg.Wait()
	return took
}

// checkWithin fails the test unless every instance took at most limit.
func checkWithin(t *testing.T, what string, took []time.Duration, limit time.Duration) {
	t.Helper()
	t.Logf("%s: per instance %v after the publish click", what, took)
	for i, d := range took {
		if d < 0 || d > limit {
			t.Errorf("%s: instance %d took %v, want <= %v", what, i, d, limit)
		}
	}
}

// configStatus is the part of GET /admin/v1/config the test reads.
type configStatus struct {
	Version   string  `json:"version"`
	LastError *string `json:"lastError"`
}

func getConfigStatus(t *testing.T, base string) configStatus {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/v1/config", nil)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("config status: %v", err)
	}
	defer resp.Body.Close()
	var st configStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("config status: HTTP %d %v", resp.StatusCode, err)
	}
	return st
}

// An operator, in the Nacos web console in a real browser, pulls an activity's kill switch
// in seckill.yaml (group SECKILL) and three service processes answer 503 DISABLED within 1 s
// of the publish click; releasing it resumes sales within 1 s; a bad edit is refused by all
// three (old configuration kept, lastError set). Then the console's service list shows the
// three registered instances with their metadata, and a SIGKILLed instance disappears from it
// while the healthy count the limiter's fallback divides by follows, 3 then 2.
func TestNacosConsoleKillSwitchAndServiceList(t *testing.T) {
	admin := testsvc.NacosAdmin(t)
	ns := uniq(t, "console")
	admin.CreateNamespace(t, ns)
	const dataID, group = "seckill.yaml", "SECKILL"
	activity := uniq(t, "console")
	initial := testConfig + "activities:\n  " + activity + ":\n    killSwitch: false\n"
	admin.Publish(t, ns, dataID, group, initial)
	t.Cleanup(func() { admin.Delete(t, ns, dataID, group) })

	base := nacosOptions(realOptions(t), ns, dataID, group)
	base.Namespace = uniq(t, "console")
	base.Roles = "api"
	procs := make([]*proc, 3)
	bases := make([]string, 3)
	admins := make([]string, 3) // admin listeners: /admin/v1 and /metrics
	ids := make([]string, 3)
	for i := range procs {
		o := base
		o.InstanceID = fmt.Sprintf("console-%d-%d", i, time.Now().UnixNano())
		ids[i] = o.InstanceID
		procs[i] = spawn(t, fmt.Sprintf("seckill-%d", i), o)
		bases[i] = procs[i].base
		admins[i] = procs[i].admin
	}
	ready := time.Now()
	procs[0].app().createActivity(t, activity, 1_000_000, 1000, 2, time.Now().Add(-time.Second))
	if took := untilAll(bases, activity, time.Now(), 10*time.Second, func(s int, _ string) bool { return s == http.StatusAccepted }); slices.Contains(took, -1) {
		t.Fatalf("the activity does not sell on every instance: %v", took)
	}
	version0 := getConfigStatus(t, admins[0]).Version

	c := newConsole(t)
	c.login()
	c.openConfigEditor(ns, dataID)
	// nacos-sdk-go subscribes up to 5 s after start; a change published before that arrives
	// at its resync (the service's 2 s poll covers it, but not within 1 s).
	if d := 6*time.Second - time.Since(ready); d > 0 {
		time.Sleep(d)
	}

	// Pull the kill switch; the instances are probed from the moment of the publish click.
	var res <-chan []time.Duration
	c.edit("false", "true", func(at time.Time) {
		res = watchAll(bases, activity, at, 10*time.Second, func(s int, code string) bool {
			return s == http.StatusServiceUnavailable && code == admission.CodeDisabled
		})
	})
	checkWithin(t, "kill switch pulled in the console", <-res, time.Second)
	shot := c.screenshot("seckill-yaml-kill-switch-pulled")
	if !strings.Contains(strings.ReplaceAll(c.text(), "\u00a0", " "), "killSwitch: true") {
		t.Errorf("the editor does not show the pulled kill switch; see %s", shot)
	}
	fmt.Printf("console screenshot (kill switch pulled): %s\n", shot)
	t.Logf("screenshot of the edited config page: %s", shot)

	// Release it.
	c.edit("true", "false", func(at time.Time) {
		res = watchAll(bases, activity, at, 10*time.Second, func(s int, _ string) bool { return s == http.StatusAccepted })
	})
	checkWithin(t, "kill switch released in the console", <-res, time.Second)
	released := make([]string, 3)
	for i, b := range admins {
		released[i] = getConfigStatus(t, b).Version
		if released[i] != version0 {
			t.Errorf("instance %d runs version %s after the release, want the initial %s", i, released[i], version0)
		}
	}

	// A bad edit: refused everywhere, the old configuration stays and sales go on.
	c.edit("false", "maybe", func(time.Time) {})
	refusedBy := time.Now().Add(10 * time.Second)
	for i, b := range admins {
		var st configStatus
		testwait.Eventually(t, time.Until(refusedBy), func() bool { st = getConfigStatus(t, b); return st.LastError != nil },
			"instance %d: the bad console edit refused (lastError set)", i)
		if st.Version != released[i] {
			t.Fatalf("instance %d: bad console edit not refused (version %s, was %s, lastError %v)", i, st.Version, released[i], st.LastError)
		}
		t.Logf("instance %d refused the bad edit: %s", i, *st.LastError)
		if s, code := probe(bases[i], activity, fmt.Sprintf("after-bad-%d-%d", i, time.Now().UnixNano())); s != http.StatusAccepted {
			t.Fatalf("instance %d after a refused edit: %d %s", i, s, code)
		}
	}
	c.screenshot("seckill-yaml-bad-edit")

	// The service list: three instances with their metadata.
	for i, b := range admins {
		waitMetric(t, b, "seckill_rate_limiter_healthy_instances", 3, 15*time.Second, fmt.Sprintf("instance %d counts 3 healthy", i))
	}
	c.do("open the service list", chromedp.Navigate("http://"+testsvc.NacosConsoleAddr+"/#/serviceManagement"))
	svcRow := `//tr[.//*[text()="seckill"]]//a[text()="Details"]`
	c.chooseNamespaceUntil(ns, svcRow, "service seckill", "failed-service-list")
	t.Logf("the console's service list: %s", c.screenshot("service-list"))
	c.do("open the service details",
		chromedp.Click(svcRow),
		chromedp.WaitVisible(fmt.Sprintf(`//td[contains(., %q)]`, ids[0])))
	page := c.text()
	shot = c.screenshot("service-seckill-three-instances")
	for _, id := range ids {
		if !strings.Contains(page, id) {
			t.Errorf("the console's instance list lacks metadata instanceId=%s; see %s", id, shot)
		}
	}
	t.Logf("screenshot of the service details: %s", shot)

	// SIGKILL one instance: no deregistration; the server drops it with its connection.
	killed := time.Now()
	procs[2].kill()
	for i := range 2 {
		waitMetric(t, admins[i], "seckill_rate_limiter_healthy_instances", 2, 15*time.Second, fmt.Sprintf("instance %d counts 2 healthy", i))
	}
	t.Logf("healthy count 2 on both survivors %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	testwait.Eventually(t, 15*time.Second, func() bool {
		c.do("reload the service details", chromedp.Reload(), chromedp.WaitVisible(fmt.Sprintf(`//td[contains(., %q)]`, ids[0])))
		return !strings.Contains(c.text(), ids[2])
	}, "the killed instance %s gone from the console; see %v", ids[2], testwait.Lazy(func() string { return c.screenshot("service-after-kill") }))
	t.Logf("the console lists 2 instances after the kill; see %s", c.screenshot("service-seckill-after-kill"))
	insts, err := admin.Instances(ns, "seckill", group)
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 2 {
		t.Fatalf("open API lists %d instances after the kill, want 2: %+v", len(insts), insts)
	}
}

// waitMetric waits until the instance's unlabelled metric equals want.
func waitMetric(t *testing.T, base, name string, want float64, limit time.Duration, what string) {
	t.Helper()
	var got float64
	testwait.Eventually(t, limit, func() bool { got = metric(t, base, name); return got == want },
		"%s: %s = %v, want %v", what, name, testwait.Lazy(func() string { return fmt.Sprint(got) }), want)
}
