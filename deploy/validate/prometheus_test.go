package validate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const promDir = "../prometheus"

// promtool returns Debian's promtool ($SECKILL_TEST_PROMTOOL, else promtool on PATH), which
// scripts/services.sh installs (package prometheus) with the other test packages.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SECKILL_TEST_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (scripts/services.sh installs Debian's prometheus package): %v", err)
	}
	return p
}

// The shipped rule file is valid (promtool check rules) and its recording rules and alerts
// give what the test scenario expects (promtool test rules): the funnel's rates over a
// 10-second sale, conversion and block rate, and the writer-staleness alert that an API-only
// pod (no writer series) never fires.
func TestPrometheusRules(t *testing.T) {
	bin := promtool(t)
	rules, err := filepath.Glob(filepath.Join(promDir, "*-rules.yml"))
	if err != nil || len(rules) == 0 {
		t.Fatalf("no rule file under %s: %v", promDir, err)
	}
	for _, args := range [][]string{
		append([]string{"check", "rules"}, rules...),
		{"test", "rules", filepath.Join(promDir, "seckill-rules.test.yml")},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if !strings.Contains(string(out), "SUCCESS") {
			t.Fatalf("promtool %s printed no SUCCESS:\n%s", strings.Join(args, " "), out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// Every alert of the shipped rules has a promtool case (issue 45: each alert by promtool test
// rules): a case that expects it firing, so an alert that can never fire, or one added without
// a case, fails here.
func TestEveryAlertHasAFiringCase(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	var cases struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	for path, v := range map[string]any{"seckill-rules.yml": &rules, "seckill-rules.test.yml": &cases} {
		raw, err := os.ReadFile(filepath.Join(promDir, path))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	firing := map[string]bool{}
	for _, c := range cases.Tests {
		for _, a := range c.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !firing[r.Alert] {
				t.Errorf("alert %s has no case in seckill-rules.test.yml that expects it firing", r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert read from seckill-rules.yml")
	}
}
