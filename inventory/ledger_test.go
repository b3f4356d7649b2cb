package inventory

import "testing"

func TestParseJournal(t *testing.T) {
	tests := []struct {
		give   string
		want   ShardKeys
		wantOK bool
	}{
		{give: Shard("flash-1001", 0, 3).Journal(), want: Shard("flash-1001", 0, 3), wantOK: true},
		{give: Shard("a_b", 12, 15).Journal(), want: Shard("a_b", 12, 15), wantOK: true},
		{give: Shard("x", 1, 2).Stats()},
		{give: "sk:{x:1}:journal"},
		{give: "sk:{x:a:1}:journal"},
		{give: "journal"},
	}
	for _, tt := range tests {
		got, ok := ParseJournal(tt.give)
		if ok != tt.wantOK || (ok && got != tt.want) {
			t.Errorf("ParseJournal(%q) = %v, %v; want %v, %v", tt.give, got, ok, tt.want, tt.wantOK)
		}
		if IsJournal(tt.give) != tt.wantOK {
			t.Errorf("IsJournal(%q) = %v", tt.give, !tt.wantOK)
		}
	}
}

func TestLedgerResultCodes(t *testing.T) {
	for code, want := range map[int64]ConfirmResult{1: Confirmed, 2: AlreadyConfirmed, 3: ConfirmConflict, 4: ConfirmMissing} {
		if got, err := ConfirmResultOf(code); err != nil || got != want {
			t.Errorf("ConfirmResultOf(%d) = %v, %v", code, got, err)
		}
	}
	for code, want := range map[int64]FailResult{1: FailedNow, 2: AlreadyFailed, 3: FailConfirmed, 4: FailMissing, 5: FailedNowMoved, 6: AlreadyFailedMoved} {
		if got, err := FailResultOf(code); err != nil || got != want {
			t.Errorf("FailResultOf(%d) = %v, %v", code, got, err)
		}
	}
	for _, code := range []int64{0, 5, -1} {
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
