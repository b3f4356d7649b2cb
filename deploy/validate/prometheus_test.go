package validate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
