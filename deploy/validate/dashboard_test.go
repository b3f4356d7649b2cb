package validate

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The Grafana dashboard shows a 10-second sale (issue 22): every rate is over a window of at
// most 10 s (a [1m] window flattened a 9-second rush at 13,000-15,000 req/s into about
// 2,000 req/s), increases over longer windows only count rare events; an instance variable
// filters the panels; the 0/1 degraded gauge has a panel of its own (not an axis shared with
// a rate); no panel calls reservations "Issued".
func TestDashboardShowsATenSecondSale(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	if !vars["instance"] || !vars["activity"] {
		t.Errorf("template variables %v: want instance and activity", vars)
	}
	window := regexp.MustCompile(`\b(rate|irate|increase)\([^\[]*\[([0-9a-z]+)\]`)
	rates := 0
	for _, p := range d.Panels {
		if strings.Contains(strings.ToLower(p.Title), "issued") {
			t.Errorf("panel %q: reservations are not issued units", p.Title)
		}
		degraded := false
		for _, tg := range p.Targets {
			degraded = degraded || strings.Contains(tg.Expr, "seckill_rate_limiter_degraded")
			for _, m := range window.FindAllStringSubmatch(tg.Expr, -1) {
				w, err := time.ParseDuration(m[2])
				if err != nil {
					t.Errorf("panel %q: window %q: %v", p.Title, m[2], err)
					continue
				}
				if m[1] == "increase" && strings.Contains(tg.Expr, "failures_total") {
					continue // a count of rare failures, not a rate of the sale
				}
				rates++
				if w > 10*time.Second {
					t.Errorf("panel %q: %s over [%s] flattens a 10-second sale: %s", p.Title, m[1], m[2], tg.Expr)
				}
			}
			if strings.Contains(tg.Expr, "seckill_") && !strings.Contains(tg.Expr, "$instance") && !strings.Contains(tg.Expr, "$activity") {
				t.Errorf("panel %q: %s filters on neither $instance nor $activity", p.Title, tg.Expr)
			}
		}
		if degraded && len(p.Targets) != 1 {
			t.Errorf("panel %q: the 0/1 degraded gauge shares its axis with %d other series", p.Title, len(p.Targets)-1)
		}
	}
	if rates < 10 {
		t.Fatalf("only %d rate windows found: the dashboard's format changed?", rates)
	}
}
