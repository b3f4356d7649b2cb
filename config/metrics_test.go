package config

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNacosHealthyInstancesOnlyOnceSet: in file mode nothing sets the Nacos instance count, so
// it is not exported (a 0 would read as "no healthy instance"); the registry's first count
// makes it appear. The source error counters exist at 0 for every source.
func TestNacosHealthyInstancesOnlyOnceSet(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := must(NewMetrics(reg))
	if n, err := testutil.GatherAndCount(reg, "seckill_nacos_healthy_instances"); err != nil || n != 0 {
		t.Fatalf("before any count: %d series, %v; want none", n, err)
	}
	if n, err := testutil.GatherAndCount(reg, "seckill_config_source_errors_total"); err != nil || n != 3 {
		t.Fatalf("source errors: %d series, %v; want 3 (nacos, file, cache)", n, err)
	}
	m.healthyInstances.Set(2)
	if n, err := testutil.GatherAndCount(reg, "seckill_nacos_healthy_instances"); err != nil || n != 1 {
		t.Fatalf("after a count: %d series, %v; want 1", n, err)
	}
	if got := testutil.ToFloat64(m.healthyInstances.g); got != 2 {
		t.Fatalf("count %v, want 2", got)
	}
}
