//go:build integration

package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testwait"
	"github.com/seckill/seckill/sql"
)

// A production-mode process (Redis, MariaDB, RocketMQ and Nacos all real) writes one JSON
// stream: every line of its output parses as a JSON object with time, level and msg,
// including what the RocketMQ and Nacos clients say (routed through slog, warnings and up
// only), from the start line through an access-log line per request to the stop line after
// SIGTERM. It runs past two of the RocketMQ consumer's offset commits (every 5 s), which the
// library logs at info by default.
func TestProductionProcessWritesOneJSONStream(t *testing.T) {
	t.Parallel() // with the drills; see drills_test.go
	nacos := testsvc.NacosAdmin(t)
	ns := uniq(t, "logs")
	nacos.CreateNamespace(t, ns)
	const dataID, group = "seckill.yaml", "SECKILL"
	nacos.Publish(t, ns, dataID, group, testConfig)
	t.Cleanup(func() { nacos.Delete(t, ns, dataID, group) })

	o := nacosOptions(realOptions(t), ns, dataID, group)
	o.RocketMQNamesrv = testsvc.RocketMQ(t)
	o.RocketMQTopic = uniq(t, "logs")
	o.Namespace = uniq(t, "logs")
	o.AccessLog = true
	o.Roles = "api,relay,writer,reconciler"
	p := spawn(t, "logs", o)
	act := uniq(t, "logs")
	ta := p.app()
	ta.createActivity(t, act, 10, 1, 2, time.Now().Add(-time.Second))
	for i := 0; i < 5; i++ {
		if a := ta.reserve(t, act, fmt.Sprintf("u%d", i), ""); a.status != http.StatusAccepted {
			t.Fatalf("reserve: %d %v", a.status, a.body)
		}
	}
	db := testsvc.MySQL(t)
	testwait.Eventually(t, 60*time.Second, func() bool {
		var n int64
		return db.Model(&sql.Order{}).Where("activity_id = ?", act).Count(&n).Error == nil && n == 5
	}, "5 orders of %s in MySQL", act)
	time.Sleep(11 * time.Second) // two offset commits of the consumer
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM; log:\n%s", tail(p.logPath, 25))
	}

	f, err := os.Open(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msgs := map[string]int{}
	components := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not JSON: %q", n, sc.Text())
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := line[k].(string); !ok {
				t.Fatalf("line %d has no string %q: %q", n, k, sc.Text())
			}
		}
		msgs[line["msg"].(string)]++
		if c, ok := line["component"].(string); ok {
			components[c]++
			if (c == "rocketmq-client" || c == "nacos-client") && (line["level"] == "INFO" || line["level"] == "DEBUG") {
				t.Errorf("line %d: a %s line below warn: %q", n, c, sc.Text())
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"seckill starting", "seckill stopping: signal received", "seckill stopped", "http request", "config: applied"} {
		if msgs[m] == 0 {
			t.Errorf("no %q line in the %d lines", m, n)
		}
	}
	if msgs["http request"] < 6 { // the readiness probes, the creation, five reservations
		t.Errorf("%d access-log lines, want one per request (at least 6)", msgs["http request"])
	}
	if t.Failed() {
		b, _ := os.ReadFile(p.logPath)
		t.Logf("log:\n%s", b)
	}
	t.Logf("%d lines, all JSON; by msg %v; library lines by component %v", n, msgs, components)
}
