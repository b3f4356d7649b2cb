package prom

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSeriesAreNamedAndRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, cv := Counter("t_c_total", "a counter"), CounterVec("t_cv_total", "a vector", "a", "b")
	g, gv := Gauge("t_g", "a gauge"), GaugeVec("t_gv", "a gauge vector", "x")
	if err := Register(reg, c, cv, g, gv); err != nil {
		t.Fatal(err)
	}
	c.Inc()
	cv.WithLabelValues("1", "2").Add(2)
	g.Set(3)
	gv.WithLabelValues("y").Set(4)
	want := `
# HELP t_c_total a counter
# TYPE t_c_total counter
t_c_total 1
# HELP t_cv_total a vector
# TYPE t_cv_total counter
t_cv_total{a="1",b="2"} 2
# HELP t_g a gauge
# TYPE t_g gauge
t_g 3
# HELP t_gv a gauge vector
# TYPE t_gv gauge
t_gv{x="y"} 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, Gauge("t_new", "new"), Counter("t_c_total", "again")); err == nil {
		t.Fatal("a name registered twice: want an error")
	}
}
