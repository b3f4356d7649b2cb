package order

import (
	"errors"
	"slices"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsPreCreated: the error counters of the closed label sets exist at 0 before their
// first event (a dashboard or an alert on them reads 0, not "No data"), and the label values
// the writer produces belong to those sets.
func TestMetricsPreCreated(t *testing.T) {
	m := testMetrics()
	for _, c := range []struct {
		name string
		n    int
		want int
	}{
		{"dead letters", testutil.CollectAndCount(m.DeadLetters), len(deadCauses)},
		{"writer retries", testutil.CollectAndCount(m.WriterRetries), len(writerRetryCauses)},
		{"relay errors", testutil.CollectAndCount(m.RelayErrors), len(relayErrorOps)},
		{"repairs", testutil.CollectAndCount(m.Repairs), len(repairKinds)},
	} {
		if c.n != c.want {
			t.Errorf("%s: %d series before any event, want %d", c.name, c.n, c.want)
		}
	}
	if got := testutil.ToFloat64(m.DeadLetters.WithLabelValues("seq_conflict")); got != 0 {
		t.Errorf("dead letters %v before any event", got)
	}
	// The reason a compensation records: the cause, then the detail after a colon.
	for _, c := range []struct {
		cause  deadCause
		detail string
		want   string
	}{
		{causeSeqConflict, "", "seq_conflict"},
		{causeInsert, "Error 1406: Data too long", "insert: Error 1406: Data too long"},
		{causeMaxAttempts, "panic: x", "max_attempts: panic: x"},
	} {
		if got := c.cause.reason(c.detail); got != c.want {
			t.Errorf("%s.reason(%q) = %q, want %q", c.cause, c.detail, got, c.want)
		}
	}
	for _, give := range []error{ErrLockBusy, &mysql.MySQLError{Number: 1213}, &PanicError{}, errors.New("x")} {
		if got := retryReason(give); !slices.Contains(writerRetryCauses, got) {
			t.Errorf("retryReason(%v) = %q, outside the closed set", give, got)
		}
	}
}
