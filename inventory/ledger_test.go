package inventory

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestLedgerResultCodes(t *testing.T) {
	for code, want := range map[int64]ConfirmResult{1: Confirmed, 2: AlreadyConfirmed, 3: ConfirmConflict, 4: ConfirmMissing, 5: ConfirmOther} {
		if got, err := ConfirmResultOf(code); err != nil || got != want {
			t.Errorf("ConfirmResultOf(%d) = %v, %v", code, got, err)
		}
	}
	for code, want := range map[int64]FailResult{1: FailedNow, 2: AlreadyFailed, 3: FailConfirmed, 4: FailMissing, 5: FailedNowMoved, 6: AlreadyFailedMoved} {
		if got, err := FailResultOf(code); err != nil || got != want {
			t.Errorf("FailResultOf(%d) = %v, %v", code, got, err)
		}
	}
	for _, code := range []int64{0, 6, -1} {
		if _, err := ConfirmResultOf(code); err == nil {
			t.Errorf("ConfirmResultOf(%d): want error", code)
		}
	}
	for _, code := range []int64{0, 7, -1} {
		if _, err := FailResultOf(code); err == nil {
			t.Errorf("FailResultOf(%d): want error", code)
		}
	}
}

func TestScriptAnswersDecodeOrFail(t *testing.T) {
	reshard, copySc := &script{name: "reshard"}, &script{name: "copy"}
	tests := []struct {
		name    string
		got     func() (int, error)
		want    int
		wantErr bool
	}{
		{"0 stands for its meaning", func() (int, error) {
			c, err := answer(reshard, []any{int64(0), int64(3)}, beginMovedOn, begun, beginOther)
			return int(c), err
		}, int(beginMovedOn), false},
		{"a known number", func() (int, error) {
			c, err := answer(reshard, []any{int64(2), "1:4"}, beginMovedOn, begun, beginOther)
			return int(c), err
		}, int(beginOther), false},
		{"an unknown number", func() (int, error) {
			c, err := answer(reshard, []any{int64(7)}, beginMovedOn, begun, beginOther)
			return int(c), err
		}, 0, true},
		{"not a number", func() (int, error) {
			c, err := answer(reshard, []any{"OK"}, beginMovedOn, begun, beginOther)
			return int(c), err
		}, 0, true},
		{"0 where the script has no 0 answer", func() (int, error) {
			c, err := answer(copySc, []any{int64(0)}, copyUnknown, copied, copyRefused)
			return int(c), err
		}, 0, true},
		{"transfer: unknown", func() (int, error) {
			c, err := transferAnswerOf([]any{int64(4)}, xfDone, xfBefore, xfClosed)
			return int(c), err
		}, 0, true},
	}
	for _, tt := range tests {
		got, err := tt.got()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParseReservationIDAcceptsExactlyTheDocumentedForm: the parser takes what docs/DESIGN.md
// documents (the regex below: an id, or a number of a release before issuers) and nothing
// else, and gives back what ReservationID (or ReservationNumber) made.
func TestParseReservationIDAcceptsExactlyTheDocumentedForm(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,18})(\.[0-9a-f]{16}-(0|[1-9][0-9]{0,18}))?$`)
	long := strings.Repeat("a", 64)
	const inc = "0123456789abcdef"
	for _, rid := range []string{"a.0.0.1", "flash-1001.12.3.9001", long + ".1.2.3", long + "a.1.2.3",
		"a.0.0", "a.0.0.1.2", ".0.0.1", "a..0.1", "a.0.0.", "a.1234567890.0.1", "a.0.12345.1",
		"a.0.0.12345678901234567890", "a.0.0.9223372036854775807", "a.0.0.9999999999999999999",
		"a b.0.0.1", "a.0.x.1", "a.-1.0.1", "a.0.0.1\n", "é.0.0.1", "a.01.0.1", "a.0.00.1", "a.10.20.30",
		"a.0.0.1." + inc + "-1", "a.0.0.1." + inc + "-0", long + ".999999999.9999.9223372036854775807." + inc + "-9223372036854775807",
		"a.0.0.1." + inc, "a.0.0.1." + inc + "-", "a.0.0.1." + inc + "-01", "a.0.0.1." + inc + "-1x", "a.0.0.1." + inc + "-12345678901234567890",
		"a.0.0.1.0123456789ABCDEF-1", "a.0.0.1.0123456789abcde-1", "a.0.0.1." + inc + "0-1", "a.0.0.1.", "a.0.0." + inc + "-1",
		"a.0.0.1." + inc + "-1.1", "a.0.0.1.012345678gabcdef-1", "a.0.0.01." + inc + "-1", "a.0.0.9999999999999999999." + inc + "-1"} {
		k, n, ok := ParseReservationID(rid)
		want := re.MatchString(rid)
		if strings.HasPrefix(rid, "a.0.0.9999999999999999999") {
			want = false // matches the form, but n overflows int64
		}
		if ok != want {
			t.Errorf("ParseReservationID(%q) ok = %v, want %v", rid, ok, want)
		}
		if !ok {
			continue
		}
		again := ReservationNumber(k.Activity, k.Epoch, k.Shard, n)
		if len(rid) > len(again) {
			inc, call, _ := strings.Cut(rid[len(again)+1:], "-")
			c, _ := strconv.ParseInt(call, 10, 64)
			again = ReservationID(k.Activity, k.Epoch, k.Shard, n, inc, c)
		}
		if again != rid {
			t.Errorf("ParseReservationID(%q) = %v %d: does not round-trip (%q)", rid, k, n, again)
		}
		if len(rid) > maxReservationIDLen {
			t.Errorf("ParseReservationID(%q): %d bytes, longer than the column's %d", rid, len(rid), maxReservationIDLen)
		}
	}
}

// FuzzParseReservationID: whatever the parser accepts is its number, or its number with an
// issuer part, never longer than the orders' column (sql/003_issuer.sql), and canonical: the
// number is what ReservationNumber makes of the parts.
func FuzzParseReservationID(f *testing.F) {
	for _, s := range []string{"a.0.0.1", "a.0.0.1.0123456789abcdef-3", "a.0.0.1.", "a.1.2.3.4", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rid string) {
		k, n, ok := ParseReservationID(rid)
		if !ok {
			return
		}
		if n < 0 || k.Epoch < 0 || k.Shard < 0 {
			t.Fatalf("ParseReservationID(%q) = %v %d: negative part", rid, k, n)
		}
		num := ReservationNumber(k.Activity, k.Epoch, k.Shard, n)
		if rid != num && (!strings.HasPrefix(rid, num+".") || !validIssuer(rid[len(num)+1:])) {
			t.Fatalf("ParseReservationID(%q) = %v %d: not an id the parts make", rid, k, n)
		}
		if len(rid) > maxReservationIDLen {
			t.Fatalf("ParseReservationID(%q): %d bytes, longer than the column's %d", rid, len(rid), maxReservationIDLen)
		}
	})
}

// TestReserveCode: a reservation's Code is the script's answer number; a number the script
// does not give (0, a gap, past the last) is an error.
func TestReserveCode(t *testing.T) {
	for _, tt := range []struct {
		give    int64
		want    Code
		wantErr bool
	}{
		{1, Reserved, false}, {8, SoldOut, false}, {10, rcShardClosed, false}, {12, IPRateLimited, false},
		{14, rcRolledBack, false}, {0, Unknown, true}, {9, Unknown, true}, {11, Unknown, true}, {15, Unknown, true},
	} {
		got, err := reserveCode([]any{tt.give})
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("reserveCode(%d) = %v, %v; want %v, error %v", tt.give, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzParseJournalEntry: any packed entry either fails or reads back the fields it was made
// of, with the activity, epoch and shard of its reservation id.
func FuzzParseJournalEntry(f *testing.F) {
	f.Add("a.0.1.7.0123456789abcdef-3|2|2|1700000000000|ff||alice")
	f.Add("a.0.1.7|1|1|0|h|h:i:x|u|with|bars")
	f.Add("|||||||")
	f.Fuzz(func(t *testing.T, p string) {
		je, err := ParseJournalEntry(map[string]any{"e": p})
		if err != nil {
			return
		}
		k, _, ok := ParseReservationID(je.ReservationID)
		if !ok || k.Activity != je.ActivityID || k.Epoch != je.Epoch || k.Shard != je.Shard {
			t.Fatalf("%q: %+v does not match its id", p, je)
		}
		back := je.ReservationID + "|" + strconv.Itoa(je.Quantity) + "|" + strconv.Itoa(je.Seq) + "|" +
			strconv.FormatInt(je.TS, 10) + "|" + je.UserHash + "|" + je.IdemField + "|" + je.UserID
		again, err := ParseJournalEntry(map[string]any{"e": back})
		if err != nil || again != je {
			t.Fatalf("%q: read %+v, written back %q, read %+v, %v", p, je, back, again, err)
		}
	})
}
