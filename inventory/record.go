package inventory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A reservation record is one field of its shard's users hash (ShardKeys.Users), written by
// the reservation script in the same HSET as the buyer's count: "r:<n>" for the shard's n-th
// reservation, its value the packed
//
//	<status>|<qty>|<ts ms>|<uh>|<orderId>|<why>|<rid>|<uid>
//
// (lua/lib_record.lua reads and writes the same form; the user id comes last, as it may
// hold '|'). The compensation's mark is a field of its own, "r:<n>:c" = the reservation id
// (MarkCompensated: a plain HSET, no read of the record). A record lives as long as its shard's users hash:
// a retired layout keeps that hash for its records; the archive deletes it.

// RecordField is the field of the shard's n-th reservation record in ShardKeys.Users.
func RecordField(n int64) string { return "r:" + strconv.FormatInt(n, 10) }

// CompField is the field that marks the n-th reservation's compensation finished; it holds
// the reservation id (Ledger.MarkCompensated).
func CompField(n int64) string { return RecordField(n) + ":c" }

// Record is a reservation record as the shard holds it.
type Record struct {
	Status        string // PENDING, CONFIRMED or FAILED
	Quantity      int
	TS            int64 // ms since the epoch (µs in records of an earlier release)
	UserHash      string
	OrderID       string
	Why           string // of a FAILED record: WhyRefused when MySQL refused its order
	ReservationID string
	UserID        string
}

// String is the record's packed form.
func (r Record) String() string {
	var b strings.Builder
	b.Grow(64 + len(r.ReservationID) + len(r.UserID))
	for i, f := range [...]string{r.Status, strconv.Itoa(r.Quantity), strconv.FormatInt(r.TS, 10), r.UserHash,
		r.OrderID, r.Why, r.ReservationID} {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(f)
	}
	b.WriteByte('|')
	b.WriteString(r.UserID)
	return b.String()
}

// ParseRecord reads a packed record; false when v is not one.
func ParseRecord(v string) (Record, bool) {
	f := strings.SplitN(v, "|", 8)
	if len(f) != 8 {
		return Record{}, false
	}
	q, err1 := strconv.Atoi(f[1])
	ts, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Record{}, false
	}
	return Record{Status: f[0], Quantity: q, TS: ts, UserHash: f[3], OrderID: f[4], Why: f[5],
		ReservationID: f[6], UserID: f[7]}, true
}

// recordOf reads a packed record from an HGET or HMGET value: false when it is missing
// (nil) or not a record.
func recordOf(v any) (Record, bool) {
	s, ok := v.(string)
	if !ok {
		return Record{}, false
	}
	return ParseRecord(s)
}

// recordFields are the fields of the records from..to, for one HMGET.
func recordFields(from, to int64) []string {
	f := make([]string, 0, to-from+1)
	for n := from; n <= to; n++ {
		f = append(f, RecordField(n))
	}
	return f
}

// ReadRecord reads the n-th reservation record of shard k; false when there is none.
func ReadRecord(ctx context.Context, rdb redis.Cmdable, k ShardKeys, n int64) (Record, bool, error) {
	v, found, err := usersField(ctx, rdb, k, RecordField(n))
	if !found || err != nil {
		return Record{}, false, err
	}
	r, ok := ParseRecord(v)
	return r, ok, nil
}

// usersField reads one field of shard k's users hash; false when it is missing.
func usersField(ctx context.Context, rdb redis.Cmdable, k ShardKeys, field string) (string, bool, error) {
	v, err := rdb.HGet(ctx, k.Users(), field).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("inventory: read %s of %s: %w", field, k.Users(), err)
	}
	return v, true, nil
}
