package inventory

import (
	"fmt"
	"strconv"
	"strings"
)

// JournalReservation is what an entry of a shard's journal (`sk:{A:e:i}:journal`) says: the
// reservation script appends one per reservation it takes, the order relay reads them.
type JournalReservation struct {
	ReservationID, ActivityID, UserID, UserHash string
	IdemField                                   string // the idempotency binding field, "" without a key
	Quantity, Seq, Shard, Epoch                 int
	TS                                          int64 // ms
}

// ParseJournalEntry reads a journal entry's values. The reservation script writes one field,
// e = "<rid>|<qty>|<seq>|<ts ms>|<uh>|<ik>|<uid>" (the user id last: it may hold '|'; the
// activity, epoch and shard are the id's, ParseReservationID). The release before wrote the
// fields rid aid uid uh qty seq shard epoch ts ik (and home, always shard): read as well, for
// the entries it left in the journals. An entry that is neither fails with the field at
// fault; the caller decides what a malformed entry is worth.
func ParseJournalEntry(v map[string]any) (JournalReservation, error) {
	s := func(k string) string { x, _ := v[k].(string); return x }
	if p, ok := v["e"].(string); ok {
		f := strings.SplitN(p, "|", 7)
		if len(f) != 7 {
			return JournalReservation{}, fmt.Errorf("journal entry %q: %d fields, want 7", p, len(f))
		}
		je := JournalReservation{ReservationID: f[0], UserHash: f[4], IdemField: f[5], UserID: f[6]}
		keys, _, ok := ParseReservationID(je.ReservationID)
		if !ok {
			return JournalReservation{}, fmt.Errorf("journal entry %q: reservation id", p)
		}
		je.ActivityID, je.Epoch, je.Shard = keys.Activity, keys.Epoch, keys.Shard
		var err error
		if je.Quantity, err = strconv.Atoi(f[1]); err != nil {
			return je, fmt.Errorf("journal entry %q: qty: %w", p, err)
		}
		if je.Seq, err = strconv.Atoi(f[2]); err != nil {
			return je, fmt.Errorf("journal entry %q: seq: %w", p, err)
		}
		if je.TS, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return je, fmt.Errorf("journal entry %q: ts: %w", p, err)
		}
		return je, nil
	}
	je := JournalReservation{ReservationID: s("rid"), ActivityID: s("aid"), UserID: s("uid"), UserHash: s("uh"), IdemField: s("ik")}
	for _, f := range []struct {
		k string
		p *int
	}{{"qty", &je.Quantity}, {"seq", &je.Seq}, {"shard", &je.Shard}, {"epoch", &je.Epoch}} {
		x, err := strconv.Atoi(s(f.k))
		if err != nil {
			return je, fmt.Errorf("journal field %s=%q", f.k, s(f.k))
		}
		*f.p = x
	}
	ts, err := strconv.ParseInt(s("ts"), 10, 64)
	if err != nil {
		return je, fmt.Errorf("journal field ts=%q", s("ts"))
	}
	je.TS = ts
	return je, nil
}
