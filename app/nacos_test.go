//go:build integration

package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
)

// nacosOptions points o at the shared Nacos test server (auth on) with the test
// administrator's credentials.
func nacosOptions(o Options, namespace, dataID, group string) Options {
	o.NacosAddr = testsvc.NacosAddr
	o.NacosUsername, o.NacosPassword = testsvc.NacosUsername, testsvc.NacosPassword
	o.NacosNamespace, o.NacosDataID, o.NacosGroup = namespace, dataID, group
	return o
}

// A wrong Nacos password stops the start with an error that says so, instead of an instance
// that never gets ready.
func TestNacosWrongPasswordIsAStartError(t *testing.T) {
	testsvc.NacosAdmin(t)
	o := nacosOptions(realOptions(t), "", uniq(t, "seckill")+".yaml", "SECKILL_TEST")
	o.NacosPassword = "not-the-password"
	o.ConfigFile = "/nonexistent"
	o.DataDir = t.TempDir()
	a, err := New(context.Background(), o, discardLog())
	if err == nil {
		a.Close()
		t.Fatal("New succeeded with a wrong Nacos password")
	}
	if !errors.Is(err, config.ErrNacosLogin) || !strings.Contains(err.Error(), "SECKILL_NACOS_PASSWORD") {
		t.Fatalf("New: %v, want the Nacos login refusal naming SECKILL_NACOS_PASSWORD", err)
	}
	t.Logf("start-up error: %v", err)
}

// Acceptance 8, end to end: the kill switch and the canary edited in Nacos take effect in
// three instances; an invalid edit is refused everywhere and the old configuration stays.
// (config's TestPropagation measures p50/p99 over 50 edits with one SDK client per process.)
func TestAcceptanceNacosControlsThreeInstances(t *testing.T) {
	t.Parallel() // with the drills; see drills_test.go
	nacos := testsvc.NacosAdmin(t)
	dataID := uniq(t, "seckill") + ".yaml"
	group := "SECKILL_TEST"
	nacosNS := uniq(t, "ns") // a Nacos namespace of its own (SECKILL_NACOS_NAMESPACE)
	publishNacos := func(t *testing.T, dataID, group, content string) {
		t.Helper()
		nacos.Publish(t, nacosNS, dataID, group, content)
	}
	publishNacos(t, dataID, group, testConfig)
	base := nacosOptions(realOptions(t), nacosNS, dataID, group)
	base.Namespace = uniq(t, "nacos")
	var apps []*testApp
	for i := 0; i < 3; i++ {
		o := base
		o.InstanceID = fmt.Sprintf("nacos-%d-%d", i, time.Now().UnixNano())
		o.ConfigFile = "/nonexistent"
		apps = append(apps, startApp(t, o, ""))
	}
	for _, ta := range apps {
		if st := ta.cfg.Status(); st.Source != "nacos" {
			t.Fatalf("config source %q, want nacos", st.Source)
		}
	}
	id := uniq(t, "nacos")
	apps[0].createActivity(t, id, 1000, 1, 2, time.Now().Add(-time.Second))

	// waitAll publishes content and waits until check holds on every instance; it returns
	// how long each instance took.
	waitAll := func(content string, check func(ta *testApp, user string) bool) []time.Duration {
		t.Helper()
		start := time.Now()
		publishNacos(t, dataID, group, content)
		took := pollEach(len(apps), start, 10*time.Second, func(i, n int) bool {
			return check(apps[i], fmt.Sprintf("probe-%d-%d-%d", i, n+1, time.Now().UnixNano()))
		})
		for i, d := range took {
			if d < 0 {
				t.Fatalf("instance %d never applied the edit within 10 s", i)
			}
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		return took
	}
	reserveCode := func(ta *testApp, user string) (int, any) {
		a := ta.reserve(t, id, user, "")
		return a.status, a.body["code"]
	}

	took := waitAll(testConfig+"killSwitch: true\n", func(ta *testApp, u string) bool {
		s, c := reserveCode(ta, u)
		return s == 503 && c == admission.CodeDisabled
	})
	t.Logf("kill switch in force on all three instances after %v (slowest)", took[2])
	took = waitAll(testConfig, func(ta *testApp, u string) bool {
		s, _ := reserveCode(ta, u)
		return s == 202
	})
	t.Logf("kill switch released on all three after %v", took[2])
	took = waitAll(testConfig+"activities:\n  "+id+":\n    canaryRatio: 0\n", func(ta *testApp, u string) bool {
		s, c := reserveCode(ta, u)
		return s == 429 && c == admission.CodeNotAdmitted
	})
	t.Logf("canary 0 in force on all three after %v", took[2])

	// An invalid edit: refused by every instance, the canary keeps applying.
	versions := make([]string, len(apps))
	for i, ta := range apps {
		versions[i] = ta.cfg.Status().Version
	}
	// testConfig plus one bad key, so the refusal is for that key alone.
	publishNacos(t, dataID, group, strings.Replace(testConfig, "user:     {rate: 1000, burst: 1000}", "user:     {rate: -5, burst: 1}", 1))
	deadline := time.Now().Add(10 * time.Second)
	for i, ta := range apps {
		testwait.Eventually(t, time.Until(deadline), func() bool { return ta.cfg.Status().LastError != "" }, "instance %d: the invalid edit refused", i)
		st := ta.cfg.Status()
		if !strings.Contains(st.LastError, "limits.user.rate") || st.Version != versions[i] {
			t.Fatalf("instance %d: invalid edit not refused (version %s, was %s, lastError %q)", i, st.Version, versions[i], st.LastError)
		}
		if s, c := reserveCode(ta, fmt.Sprintf("after-bad-%d", i)); s != 429 || c != admission.CodeNotAdmitted {
			t.Fatalf("instance %d after a refused edit: %d %v", i, s, c)
		}
	}

	// Canary 0.1 over 3,000 distinct users: 10% +/- 3% admitted, and each user gets the same
	// answer again from another instance.
	canary := testConfig + "activities:\n  " + id + ":\n    canaryRatio: 0.1\n"
	publishNacos(t, dataID, group, canary)
	deadline = time.Now().Add(10 * time.Second)
	for i, ta := range apps {
		testwait.Eventually(t, time.Until(deadline), func() bool { return ta.cfg.Current().Cfg.CanaryRatio(id) == 0.1 },
			"instance %d: canary ratio 0.1 (last %v)", i, testwait.Lazy(func() string { return fmt.Sprint(ta.cfg.Current().Cfg.CanaryRatio(id)) }))
	}
	const users = 3000
	var mu sync.Mutex
	admitted, flipped := 0, 0
	codes := map[string]int{}
	parallel(users, 32, func(i int) {
		u := fmt.Sprintf("canary-%d", i)
		s1, c1 := reserveCode(apps[i%3], u)
		s2, c2 := reserveCode(apps[(i+1)%3], u)
		out1 := s1 == 429 && c1 == admission.CodeNotAdmitted
		out2 := s2 == 429 && c2 == admission.CodeNotAdmitted
		mu.Lock()
		defer mu.Unlock()
		codes[fmt.Sprint(s1, c1)]++
		if !out1 {
			admitted++
		}
		if out1 != out2 {
			flipped++
		}
	})
	ratio := float64(admitted) / users
	t.Logf("canary 0.1: %d of %d users admitted (%.3f); %d answers changed between instances; first answers %v", admitted, users, ratio, flipped, codes)
	if ratio < 0.07 || ratio > 0.13 {
		t.Fatalf("canary 0.1 admitted %.3f of users, want 0.10 +/- 0.03", ratio)
	}
	if flipped != 0 {
		t.Fatalf("%d users got a different canary answer from another instance", flipped)
	}
}

// A data dir keeps the last good configuration of each Nacos data id apart: an instance started
// on it for another data id, one missing in Nacos, stays not ready. It started from the other
// data id's snapshot (ready, source cache), whose auth mode among the rest it then kept (a
// staging header-mode configuration would make a JWT deployment trust X-User-Id).
func TestAnotherDataIDsSnapshotIsNotUsed(t *testing.T) {
	nacos := testsvc.NacosAdmin(t)
	ns, group := uniq(t, "ns"), "SECKILL_TEST"
	first := uniq(t, "seckill-a") + ".yaml"
	nacos.Publish(t, ns, first, group, testConfig)
	dir := t.TempDir()
	o := nacosOptions(realOptions(t), ns, first, group)
	o.ConfigFile, o.DataDir, o.Namespace = "/nonexistent", dir, uniq(t, "snap")
	a := startApp(t, o, "")
	testwait.Eventually(t, 10*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "config-snapshot*.yaml"))
		return len(m) == 1
	}, "the first data id's snapshot written")
	if st := a.cfg.Status(); st.Source != "nacos" {
		t.Fatalf("the first instance's source %q, want nacos", st.Source)
	}
	o.NacosDataID = uniq(t, "seckill-b") + ".yaml" // never published
	o.InstanceID = uniq(t, "snap-b")
	b := startAppUnready(t, o, "")
	time.Sleep(3 * time.Second)
	if st := b.cfg.Status(); st.Ready || st.Source == "cache" {
		t.Fatalf("an instance of an unpublished data id: %+v, want not ready (no configuration of its own)", st)
	}
	resp, err := http.Get(b.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz of the instance of an unpublished data id: %d, want 503", resp.StatusCode)
	}
}
