package order

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/internal/prom"
)

// Metrics are the order pipeline's Prometheus series. Build one per process with
// NewMetrics and share it between the relay, writer, compensator and reconciler. Labels
// are activity ids and closed sets of reasons, never user ids; every series of a closed set
// exists at 0 from NewMetrics on, so dashboards and alerts never read "No data". A nil
// *Metrics is not allowed.
type Metrics struct {
	JournalLag        *prometheus.GaugeVec   // activity: units taken but not yet relayed
	InFlight          *prometheus.GaugeVec   // activity: units relayed but neither confirmed nor failed
	RelaySent         prometheus.Counter     // journal entries confirmed sent to the queue
	RelayAcked        prometheus.Counter     // journal entries acknowledged (first ack only)
	RelayClaimed      prometheus.Counter     // pending entries claimed from an idle relay
	RelayErrors       *prometheus.CounterVec // op: read, publish, ack, discover
	WriterCommits     prometheus.Counter     // orders confirmed by the writer
	WriterBatches     prometheus.Counter     // batches written to MySQL
	WriterRetries     *prometheus.CounterVec // reason: mysql, redis, lock, panic
	WriterErrors      *prometheus.CounterVec // class: what a failed write meant (see errClass)
	WriterFailing     prometheus.Gauge       // writes failed in a row since the last successful one
	WriterLastSuccess prometheus.Gauge       // unix time of the last successful write
	WriterStale       prometheus.Counter     // messages of an incarnation older than MySQL's, dropped
	DeadLetters       *prometheus.CounterVec // reason
	Compensations     prometheus.Counter     // reservations failed for good and stock returned
	Drift             *prometheus.GaugeVec   // activity: reconciliation drift in units
	Orphans           *prometheus.GaugeVec   // activity: PENDING reservations older than the bound that could not be repaired
	Repairs           *prometheus.CounterVec // kind
	ReconcileFails    prometheus.Counter     // reconciliation rounds that failed for an activity
	Lost              *prometheus.GaugeVec   // activity: reservations answered 202 that never reached MySQL (lost.go)
	// OrdersWritten and ActivityCompensations are WriterCommits and Compensations by
	// activity (the sale funnel's last steps).
	OrdersWritten         *prometheus.CounterVec // activity: orders committed and confirmed
	ActivityCompensations *prometheus.CounterVec // activity: reservations failed for good, stock returned
	// Refused counts the orders MySQL refused although Redis had answered 202 (insert.go):
	// every one is a broken promise and proves Redis lost or duplicated state.
	Refused *prometheus.CounterVec // activity, reason: stock, limit
}

// Label values of the closed sets, created at 0 by NewMetrics.
var (
	relayErrorOps     = []string{"discover", "claim", "read", "durable", "publish", "ack"}
	writerRetryCauses = []string{"lock", "mysql", "redis", "panic", "other"}
	repairKinds       = []string{"confirm"}
)

// NewMetrics builds the order metrics, creates every series of the closed label sets at 0
// and registers them with reg; an error when reg refuses one (a name already registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		JournalLag: prom.GaugeVec("seckill_order_journal_lag_units",
			"Units reserved in Redis but not yet handed to the queue.", "activity"),
		InFlight: prom.GaugeVec("seckill_order_in_flight_units",
			"Units handed to the queue but not yet confirmed or failed.", "activity"),
		RelaySent: prom.Counter("seckill_order_relay_sent_total",
			"Journal entries confirmed sent to the queue (resends included)."),
		RelayAcked: prom.Counter("seckill_order_relay_acked_total",
			"Journal entries acknowledged after their send."),
		RelayClaimed: prom.Counter("seckill_order_relay_claimed_total",
			"Journal entries claimed from a relay that left them pending."),
		RelayErrors: prom.CounterVec("seckill_order_relay_errors_total",
			"Relay errors by operation (discover, claim, read, publish, ack).", "op"),
		WriterCommits: prom.Counter("seckill_order_writer_commits_total",
			"Orders committed to MySQL and confirmed in Redis."),
		WriterBatches: prom.Counter("seckill_order_writer_batches_total",
			"Batches written to MySQL."),
		WriterRetries: prom.CounterVec("seckill_order_writer_retries_total",
			"Writer batches handed back for redelivery or retried in process, by reason (lock, mysql, redis, panic, other).", "reason"),
		WriterErrors: prom.CounterVec("seckill_order_writer_errors_total",
			"Failed writes, by what the error means: poison rows are dead-lettered, every other class waits and retries.", "class"),
		WriterFailing: prom.Gauge("seckill_order_writer_consecutive_failures",
			"Writes that failed in a row since the last successful one (0 when healthy)."),
		WriterLastSuccess: prom.Gauge("seckill_order_writer_last_success_timestamp_seconds",
			"Unix time of the writer's last successful write (0 before the first)."),
		WriterStale: prom.Counter("seckill_order_writer_stale_dropped_total",
			"Messages of a reservation older than the activity's last restore (an incarnation below MySQL's) dropped without an order: the restore counted their units unsold (the log line names the activity)."),
		DeadLetters: prom.CounterVec("seckill_order_dead_letters_total",
			"Messages that can never become orders, by reason (bad_journal_entry, bad_message, seq_conflict, rid_conflict, insert, no_activity, max_attempts).", "reason"),
		Compensations: prom.Counter("seckill_order_compensations_total",
			"Reservations failed for good whose stock went back to Redis."),
		Drift: prom.GaugeVec("seckill_order_reconcile_drift_units",
			"stock - redisRemaining - ordersInDb - journalPending - inFlight; 0 when all agree.", "activity"),
		Orphans: prom.GaugeVec("seckill_order_reconcile_orphan_reservations",
			"PENDING reservations older than the orphan bound that could not be repaired.", "activity"),
		Repairs: prom.CounterVec("seckill_order_reconcile_repairs_total",
			"Repairs made by reconciliation, by kind (confirm).", "kind"),
		ReconcileFails: prom.Counter("seckill_order_reconcile_failures_total",
			"Reconciliation rounds that failed for an activity."),
		Lost: prom.GaugeVec("seckill_order_lost_reservations",
			"Reservations answered 202 that never reached MySQL (lost with Redis), as the last restore listed them.", "activity"),
		OrdersWritten: prom.CounterVec("seckill_order_orders_written_total",
			"Orders committed to MySQL and confirmed in Redis, by activity.", "activity"),
		ActivityCompensations: prom.CounterVec("seckill_order_activity_compensations_total",
			"Reservations failed for good whose stock went back to Redis, by activity.", "activity"),
		Refused: prom.CounterVec("seckill_orders_refused_total",
			"Reservations answered 202 whose order MySQL refused (reason stock: the activity's stock was sold; limit: the buyer held the per-user limit): Redis lost or duplicated state, and the activity is fenced for a restore.", "activity", "reason"),
	}
	for _, c := range errClasses {
		m.WriterErrors.WithLabelValues(string(c))
	}
	for _, v := range relayErrorOps {
		m.RelayErrors.WithLabelValues(v)
	}
	for _, v := range writerRetryCauses {
		m.WriterRetries.WithLabelValues(v)
	}
	for _, v := range deadCauses {
		m.DeadLetters.WithLabelValues(string(v))
	}
	for _, v := range repairKinds {
		m.Repairs.WithLabelValues(v)
	}
	if err := prom.Register(reg, m.JournalLag, m.InFlight, m.RelaySent, m.RelayAcked, m.RelayClaimed, m.RelayErrors,
		m.WriterCommits, m.WriterBatches, m.WriterRetries, m.WriterErrors, m.WriterFailing, m.WriterLastSuccess, m.WriterStale, m.DeadLetters, m.Compensations, m.Drift,
		m.Orphans, m.Repairs, m.ReconcileFails, m.OrdersWritten, m.ActivityCompensations, m.Lost, m.Refused); err != nil {
		return nil, fmt.Errorf("order: register metrics: %w", err)
	}
	return m, nil
}

// refusedReasons are the reason labels of Refused.
var refusedReasons = []string{refusedStock, refusedLimit}

// refusedSeries creates the activity's Refused series at 0 (an alert on their increase sees the
// first refusal).
func (m *Metrics) refusedSeries(activity string) {
	for _, r := range refusedReasons {
		m.Refused.WithLabelValues(activity, r)
	}
}

// Forget deletes the series of an activity that went away.
func (m *Metrics) Forget(activity string) {
	for _, v := range []*prometheus.GaugeVec{m.JournalLag, m.InFlight, m.Drift, m.Orphans, m.Lost} {
		v.DeleteLabelValues(activity)
	}
	m.OrdersWritten.DeleteLabelValues(activity)
	m.ActivityCompensations.DeleteLabelValues(activity)
	m.Refused.DeletePartialMatch(prometheus.Labels{"activity": activity})
}

// WriterCollectors are the series only the writer sets: a process that does not run the
// writer unregisters them.
func (m *Metrics) WriterCollectors() []prometheus.Collector {
	return []prometheus.Collector{m.WriterCommits, m.WriterBatches, m.WriterRetries, m.WriterErrors,
		m.WriterFailing, m.WriterLastSuccess, m.WriterStale, m.OrdersWritten, m.Refused}
}
