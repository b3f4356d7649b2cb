package inventory

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := NewMetrics(reg); err != nil || again.calls != m.calls {
		t.Fatalf("a second NewMetrics on the same registry does not share the collectors (%v)", err)
	}
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "seckill_soldout_marks_total", Help: "another series"}))
	if _, err := NewMetrics(clash); err == nil {
		t.Fatal("NewMetrics on a registry holding another seckill_soldout_marks_total: want an error")
	}
	rdb := miniRedis(t)
	s, err := New(rdb, Options{}, m, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	a := mustCreate(t, s, openActivity(t, 1, 1, 1))
	for _, u := range []string{"a", "b"} {
		if _, err := s.Reserve(ctx, ReserveRequest{ActivityID: a.ID, UserID: u, Quantity: 1}); err != nil {
			t.Fatal(err)
		}
	}
	mustRefresh(ctx, t, s)
	tests := []struct {
		name string
		give prometheus.Collector
		want float64
	}{
		{"issued", m.issued.WithLabelValues(a.ID), 1},
		{"remaining", m.remaining.WithLabelValues(a.ID), 0},
		{"reserve calls", m.calls.WithLabelValues("inventory_reserve"), 2},
		{"soldout marks", m.soldOut.WithLabelValues(a.ID, "reserve"), 1},
	}
	for _, tt := range tests {
		if got := testutil.ToFloat64(tt.give); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, n := range []string{"seckill_stock_remaining_units", "seckill_reservations_accepted_total", "seckill_redis_script_calls_total", "seckill_redis_script_duration_seconds", "seckill_soldout_marks_total"} {
		if !names[n] {
			t.Errorf("metric %s not registered", n)
		}
	}
}

func TestCodeString(t *testing.T) {
	tests := []struct {
		give Code
		want string
	}{
		{Unknown, "UNKNOWN"}, {Reserved, "RESERVED"}, {AlreadyPurchased, "ALREADY_PURCHASED"},
		{UserWindowLimited, "USER_WINDOW_LIMITED"}, {Code(42), "Code(42)"},
	}
	for _, tt := range tests {
		if got := tt.give.String(); got != tt.want {
			t.Errorf("%d: %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestSplitSpreadsRemainder(t *testing.T) {
	tests := []struct {
		units int64
		n     int
		want  []int64
	}{
		{10, 3, []int64{4, 3, 3}},
		{2, 4, []int64{1, 1, 0, 0}},
		{0, 2, []int64{0, 0}},
		{8, 1, []int64{8}},
	}
	for _, tt := range tests {
		var sum int64
		for i, w := range tt.want {
			if got := split(tt.units, tt.n, i); got != w {
				t.Errorf("split(%d,%d,%d) = %d, want %d", tt.units, tt.n, i, got, w)
			}
			sum += w
		}
		if sum != tt.units {
			t.Errorf("split(%d,%d) sums to %d", tt.units, tt.n, sum)
		}
	}
}
