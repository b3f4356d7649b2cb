package order

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
)

func TestMessageFromEntry(t *testing.T) {
	uh := testHasher.UserHash("alice")
	good := map[string]any{"rid": "act.0.1.7", "aid": "act", "uid": "alice", "uh": uh, "qty": "2", "seq": "2",
		"shard": "1", "epoch": "0", "ts": "1700000000000"}
	with := func(k, v string) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	without := func(k string) map[string]any {
		m := with(k, "")
		delete(m, k)
		return m
	}
	tests := []struct {
		name    string
		give    map[string]any
		wantErr bool
	}{
		{name: "good", give: good},
		{name: "with home (the release before)", give: with("home", "1")},
		{name: "without shard", give: without("shard"), wantErr: true},
		{name: "bad qty", give: with("qty", "x"), wantErr: true},
		{name: "zero qty", give: with("qty", "0"), wantErr: true},
		{name: "rid shard mismatch", give: with("shard", "2"), wantErr: true},
		{name: "bad rid", give: with("rid", "act.0.1"), wantErr: true},
		{name: "no user", give: with("uid", ""), wantErr: true},
		{name: "hash of an older release", give: with("uh", "00000000000000ff")},
		{name: "short hash", give: with("uh", uh[:20]), wantErr: true},
		{name: "upper-case hash", give: with("uh", strings.ToUpper(uh)), wantErr: true},
		{name: "hash not hex", give: with("uh", uh[:31]+"g"), wantErr: true},
		{name: "hash with a colon", give: with("uh", uh[:15]+":"+uh[16:]), wantErr: true},
		{name: "packed", give: map[string]any{"e": "act.0.1.7|2|2|1700000000000|" + uh + "||alice"}},
		{name: "packed, a user id with '|'", give: map[string]any{"e": "act.0.1.7|2|2|1700000000000|" + uh + "|" + uh + ":i:ab|al|ice"}},
		{name: "packed, a field short", give: map[string]any{"e": "act.0.1.7|2|2|1700000000000|" + uh + "|alice"}, wantErr: true},
		{name: "packed, bad rid", give: map[string]any{"e": "act.0.1|2|2|1700000000000|" + uh + "||alice"}, wantErr: true},
		{name: "packed, bad ts", give: map[string]any{"e": "act.0.1.7|2|2|x|" + uh + "||alice"}, wantErr: true},
		{name: "packed, no user", give: map[string]any{"e": "act.0.1.7|2|2|1700000000000|" + uh + "||"}, wantErr: true},
	}
	for _, tt := range tests {
		m, err := messageOf(inventory.ParseJournalEntry(tt.give))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: err %v does not wrap ErrBadMessage", tt.name, err)
		}
		if err == nil && (m.Quantity != 2 || m.Shard != 1 || m.TS != 1700000000000) {
			t.Errorf("decoded %+v", m)
		}
	}
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		give error
		want bool
	}{
		{give: &mysql.MySQLError{Number: 1213}, want: true},
		{give: fmt.Errorf("x: %w", &mysql.MySQLError{Number: 1205}), want: true},
		{give: &mysql.MySQLError{Number: 1264}, want: false},
		{give: &mysql.MySQLError{Number: 1406}, want: false},
		{give: mysql.ErrInvalidConn, want: true},
		{give: ErrLockBusy, want: true},
		{give: fmt.Errorf("%w: x", ErrBadMessage), want: false},
		{give: errors.New("dial tcp: connection refused"), want: true},
		{give: &mysql.MySQLError{Number: 1114}, want: true},
		{give: &mysql.MySQLError{Number: 1969}, want: true},
		{give: &mysql.MySQLError{Number: 4025}, want: false},
	}
	for _, tt := range tests {
		if got := isTransient(tt.give); got != tt.want {
			t.Errorf("isTransient(%v) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		give error
		want errClass
	}{
		{give: &mysql.MySQLError{Number: 1406}, want: classPoison},
		{give: &mysql.MySQLError{Number: 1264}, want: classPoison},
		{give: &mysql.MySQLError{Number: 1048}, want: classPoison},
		{give: &mysql.MySQLError{Number: 3819}, want: classPoison},
		{give: &mysql.MySQLError{Number: 4025}, want: classPoison},
		{give: fmt.Errorf("%w: x", ErrBadMessage), want: classPoison},
		{give: &mysql.MySQLError{Number: 1114}, want: classResource},
		{give: &mysql.MySQLError{Number: 1021}, want: classResource},
		{give: &mysql.MySQLError{Number: 1969}, want: classTimeout},
		{give: &mysql.MySQLError{Number: 1180}, want: classServer},
		{give: &mysql.MySQLError{Number: 1047}, want: classServer},
		{give: &mysql.MySQLError{Number: 1290}, want: classReadOnly},
		{give: &mysql.MySQLError{Number: 1213}, want: classLock},
		{give: &mysql.MySQLError{Number: 2013}, want: classConnection},
		{give: &mysql.MySQLError{Number: 60000}, want: classUnknown},
		{give: fmt.Errorf("lock: %w", ErrLockBusy), want: classLock},
		{give: &PanicError{Value: "x"}, want: classPanic},
		{give: context.Canceled, want: classCanceled},
		{give: context.DeadlineExceeded, want: classTimeout},
		{give: redis.ErrClosed, want: classConnection},
		{give: errors.New("something else"), want: classUnknown},
	}
	for _, tt := range tests {
		if got := classify(tt.give); got != tt.want {
			t.Errorf("classify(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestLostReservationsAreTheNumbersWithoutAnId: the lost listing names every number up to the
// highest one per shard that no known id has, whatever its issuer (or none: an id of a release
// before issuers is its number), in epoch, shard and number order; another activity's ids
// and malformed ones are ignored.
func TestLostReservationsAreTheNumbersWithoutAnId(t *testing.T) {
	const a = "act"
	marks := map[[2]int]int64{{0, 1}: 3, {1000000, 0}: 1}
	known := []string{
		inventory.ReservationID(a, 0, 1, 1, testIssuer, 9),
		inventory.ReservationNumber(a, 0, 1, 3), // a release before issuers
		inventory.ReservationID(a, 0, 0, 4, "00000000000000bb", 1),
		inventory.ReservationID("other", 0, 0, 2, testIssuer, 1),
		"act.0.0.2.not-an-issuer",
	}
	got := lostReservations(a, marks, known)
	want := []string{"act.0.0.1", "act.0.0.2", "act.0.0.3", "act.0.1.2", "act.1000000.0.1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("lost %v, want %v", got, want)
	}
}
