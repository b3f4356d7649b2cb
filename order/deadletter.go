package order

import (
	"context"
	"errors"
)

// deadCause is why a message can never become an order: the reason label of
// seckill_order_dead_letters_total, and the start of the reason a compensation records.
type deadCause string

const (
	causeBadJournalEntry deadCause = "bad_journal_entry" // a journal entry that is no message (the relay)
	causeBadMessage      deadCause = "bad_message"       // a message that fails Validate (the writer)
	causeSeqConflict     deadCause = "seq_conflict"      // another order holds its (activity, user, seq)
	causeRIDConflict     deadCause = "rid_conflict"      // its id names another buyer's order
	causeInsert          deadCause = "insert"            // the row itself cannot be stored
	causeNoActivity      deadCause = "no_activity"       // MySQL has had no row for its activity for NoRowWait
	causeMaxAttempts     deadCause = "max_attempts"      // it still panics alone at the last attempt
)

// deadCauses is the closed set of causes, created at 0 by NewMetrics.
var deadCauses = []deadCause{causeBadJournalEntry, causeBadMessage, causeSeqConflict,
	causeRIDConflict, causeInsert, causeNoActivity, causeMaxAttempts}

// reason is what a compensation records for a dead letter of this cause: the cause, and the
// detail after a colon when there is one.
func (c deadCause) reason(detail string) string {
	if detail == "" {
		return string(c)
	}
	return string(c) + ": " + detail
}

// deadLetter fails the reservation for good and compensates it. An order that turns out to
// exist is confirmed instead.
func (w *Writer) deadLetter(ctx context.Context, m Message, cause deadCause, detail string) error {
	reason := cause.reason(detail)
	err := w.comp.Compensate(ctx, m, reason)
	switch {
	case err == nil:
		w.m.DeadLetters.WithLabelValues(string(cause)).Inc()
		w.log.Warn("reservation dead-lettered and compensated", "reservation", m.ReservationID, "reason", reason)
		return nil
	case errors.Is(err, ErrOrderExists), errors.Is(err, ErrAlreadyConfirmed):
		return nil
	case errors.Is(err, ErrStale):
		w.m.WriterStale.Inc()
		w.log.Warn("dead letter of an incarnation a restore replaced: not compensated (the restore counted its units)",
			"reservation", m.ReservationID, "activity", m.ActivityID, "reason", reason)
		return nil
	case errors.Is(err, ErrNoRecord):
		w.m.DeadLetters.WithLabelValues(string(cause)).Inc()
		w.log.Error("dead letter without a reservation record; nothing to compensate", "reservation", m.ReservationID, "reason", reason)
		return nil
	default:
		return err
	}
}
