package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/internal/testwait"
)

// idleWindow is how long the idle process is measured; idleCeiling the share of one core it
// may use meanwhile.
const (
	idleWindow  = 10 * time.Second
	idleCeiling = 0.03
)

// TestIdleEmbeddedProcessAfterALoadRun: an embedded-mode process (its own build, without
// -race, as a user runs it) takes a load run of 10,000 users that sells out (seckill-load,
// built the same way, exit 0: every check passed, the orders through the reconciliation),
// has its limiter in force again within seconds (seckill_rate_limiter_degraded 0), exports
// seckill_build_info, and then, idle, uses under 3 % of a core: the process's own CPU time
// (utime + stime of /proc/<pid>/stat) over a 10 s window, so a busy machine can only lower
// the figure, never raise it.
func TestIdleEmbeddedProcessAfterALoadRun(t *testing.T) {
	bin, loadBin := buildCommands(t)
	dir := t.TempDir()
	cfgFile, err := filepath.Abs("../../config/loadtest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, admin := "http://"+freeAddr(t), "http://"+freeAddr(t)
	token := strings.Repeat("7", 64)
	cmd := exec.Command(bin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SECKILL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "SECKILL_HTTP_ADDR="+strings.TrimPrefix(base, "http://"),
		"SECKILL_ADMIN_ADDR="+strings.TrimPrefix(admin, "http://"), "SECKILL_ADMIN_TOKEN="+token,
		"SECKILL_CONFIG_FILE="+cfgFile, "SECKILL_DATA_DIR="+filepath.Join(dir, "data"))
	logPath := filepath.Join(dir, "seckill.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	testwait.Eventually(t, 60*time.Second, func() bool { return status(base+"/readyz") == http.StatusOK },
		"the embedded process ready at %s; log:\n%s", base, testwait.Lazy(func() string { return readFile(logPath) }))

	// The load tool as a user runs it: its own process, its exit status, its JSON report.
	jsonPath := filepath.Join(dir, "load.json")
	ld := exec.Command(loadBin, "--target", base, "--admin", admin, "--activity", "idle-after-load", "--create",
		"--stock", "1000", "--per-user-limit", "1", "--users", "10000", "--connections", "16", "--duration", "2m",
		"--progress", "0", "--json", jsonPath)
	ld.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], "SECKILL_ADMIN_TOKEN="+token)
	out, err := ld.CombinedOutput()
	if err != nil {
		t.Fatalf("seckill-load: %v\n%s", err, out)
	}
	var rep report.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("seckill-load report %s: %v\n%s", jsonPath, err, out)
	}
	if rep.Requests < 10000 {
		t.Fatalf("the load run fell short:\n%s", out)
	}
	if c, ok := rep.Check("service.orders_match_reservations"); !ok || c.Status != report.Pass {
		t.Fatalf("orders not checked through the reconciliation:\n%s", out)
	}
	t.Logf("load run: %d requests in %.1f s, %d units reserved", rep.Requests, rep.DurationSeconds, rep.Reservations.Units)

	metrics := func() map[string]float64 { return scrape(t, admin+"/metrics", token) }
	degradedAt := time.Now()
	testwait.Eventually(t, 15*time.Second, func() bool { return metrics()["seckill_rate_limiter_degraded"] == 0 },
		"the limiter in force again within 15 s of the load run")
	m := metrics()
	build := ""
	for series, v := range m {
		if strings.HasPrefix(series, "seckill_build_info{") && v == 1 {
			build = series
		}
	}
	if !strings.Contains(build, `goversion="go`) {
		t.Errorf("no seckill_build_info series of value 1 naming the Go version: %q", build)
	}
	t.Logf("limiter: degraded %v times during the run, recovered %v times; in force %v after the run",
		m[`seckill_rate_limiter_mode_changes_total{to="degraded"}`], m[`seckill_rate_limiter_mode_changes_total{to="recovered"}`],
		time.Since(degradedAt).Round(time.Millisecond))

	pid := cmd.Process.Pid
	cpu0, at0 := cpuTime(t, pid), time.Now()
	time.Sleep(idleWindow) // the measurement window, not a wait for an event
	cpu1, at1 := cpuTime(t, pid), time.Now()
	share := (cpu1 - cpu0).Seconds() / at1.Sub(at0).Seconds()
	t.Logf("idle after the load run: %.2f %% of a core (%v of CPU over %v)", 100*share, cpu1-cpu0, at1.Sub(at0).Round(time.Millisecond))
	if share >= idleCeiling {
		t.Fatalf("the idle embedded process used %.2f %% of a core, want under %.0f %%", 100*share, 100*idleCeiling)
	}
}

// buildCommands builds seckill and seckill-load as a user's go build does (no -race: the
// figures are a user's) and returns their paths. The build runs at nice 19 (the binaries are
// the same): on a cold build cache it compiles the whole dependency tree while the other
// packages of phase 1 run, and so yields to their test processes in this session, config's
// propagation measurement with its 1 s bound among them (with autogroup scheduling, nice
// ranks processes within a session; the servers, in sessions of their own, are not
// preferred by it).
func buildCommands(t *testing.T) (seckill, seckillLoad string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found: %v", err)
	}
	dir := t.TempDir()
	start := time.Now()
	args := []string{goBin, "build", "-o", dir + "/", "./cmd/seckill", "./cmd/seckill-load"}
	if nice, err := exec.LookPath("nice"); err == nil {
		args = append([]string{nice, "-n", "19"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = "../.." // the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built seckill and seckill-load in %v", time.Since(start).Round(100*time.Millisecond))
	return filepath.Join(dir, "seckill"), filepath.Join(dir, "seckill-load")
}

// freeAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// scrape reads the unlabelled and labelled samples of a Prometheus text exposition, keyed by
// the series as written ("name" or `name{label="v"}`).
func scrape(t *testing.T, url, token string) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux the
// service supports.
const clockTicks = 100

// cpuTime is the CPU time the process pid used so far (user + system, all its threads).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces: the fields after it follow its last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}
