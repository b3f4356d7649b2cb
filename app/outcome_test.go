package app

import (
	"slices"
	"testing"

	"github.com/seckill/seckill/app/admission"
)

// TestOutcomeTable: every reservation outcome has the label values the dashboards, the alerts
// and the report read (the funnel's and the HTTP histogram's), each of the HTTP closed set;
// every rejection row is the outcome of the rejection it names.
func TestOutcomeTable(t *testing.T) {
	tests := []struct {
		give       outcome
		funnel, hl string
	}{
		{oAccepted, "accepted", "RESERVED"},
		{oReplayed, "replayed", "REPLAYED"},
		{oKillSwitch, "killswitch", "DISABLED"},
		{oNotOpen, "not_open", "NOT_OPEN"},
		{oClosed, "closed", "CLOSED"},
		{oBlacklist, "blacklist", "FORBIDDEN"},
		{oCanary, "canary", "NOT_ADMITTED"},
		{oRemembered, "remembered", "RATE_LIMITED"},
		{oRateGlobal, "rate_global", "RATE_LIMITED"},
		{oRateCampaign, "rate_campaign", "RATE_LIMITED"},
		{oRateActivity, "rate_activity", "RATE_LIMITED"},
		{oRateChannel, "rate_channel", "RATE_LIMITED"},
		{oRateIP, "rate_ip", "RATE_LIMITED"},
		{oRateUser, "rate_user", "RATE_LIMITED"},
		{oToken, "token", "TOKEN_REQUIRED"},
		{oUserLimit, "user_limit", "ALREADY_PURCHASED"},
		{oSoldOut, "sold_out", "SOLD_OUT"},
		{oUnavailable, "unavailable", "UNAVAILABLE"},
		{oOutcomeUnknown, "outcome_unknown", "UNAVAILABLE"},
	}
	if len(tests) != int(nOutcomes)-1 {
		t.Fatalf("%d outcomes tested, want every one of the %d", len(tests), nOutcomes-1)
	}
	for _, tt := range tests {
		if got := tt.give.funnelName(); got != tt.funnel {
			t.Errorf("outcome %d: funnel label %q, want %q", tt.give, got, tt.funnel)
		}
		if got := tt.give.httpLabel(); got != tt.hl || !slices.Contains(httpOutcomes, got) {
			t.Errorf("%s: HTTP label %q, want %q of the closed set", tt.funnel, got, tt.hl)
		}
		if row := outcomes[tt.give]; tt.give.refused() || tt.give == oUnavailable {
			rej := &admission.Rejection{Code: row.answer, Dimension: row.dimension, Reason: row.reason}
			if got, back := outcomeOf(rej); got != tt.give || back != rej {
				t.Errorf("%s: the rejection of its row is %s", tt.funnel, got.funnelName())
			}
		}
	}
	if oNone.funnelName() != "" || oNone.httpLabel() != "" {
		t.Error("none is an outcome")
	}
}

// TestReservationOutcomeLabels: the reservation route's latency series created at 0 are the
// dashboard's, those of the table's outcomes and of the answers before admission; the HTTP
// label's closed set is unchanged.
func TestReservationOutcomeLabels(t *testing.T) {
	want := []string{
		outcomeReserved, outcomeReplayed, CodeBadRequest, CodeTooLarge, CodeUnauthenticated,
		admission.CodeForbidden, admission.CodeTokenRequired, CodeNotFound, admission.CodeAlreadyPurchased, admission.CodeSoldOut, admission.CodeClosed,
		admission.CodeNotOpen, admission.CodeRateLimited, admission.CodeNotAdmitted, admission.CodeDisabled, admission.CodeUnavailable, CodeInternal,
	}
	got := reservationOutcomes()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reservation outcome labels %v, want %v", got, want)
	}
	// The closed set of every route: those and the other routes' codes.
	want = append(want, outcomeOK, CodeMethodNotAllowed, CodeConflict)
	got = slices.Clone(httpOutcomes)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("HTTP outcome labels %v, want %v", got, want)
	}
}
