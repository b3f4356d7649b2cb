package app

import (
	"errors"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/limiter"
)

// outcome is the answer to one reservation attempt (one that reached the admission step),
// decided once, where the answer is: postReservation's accepted, answerReplay's replayed (or
// unavailable, when the replayed reservation could not be read), and outcomeOf for an error
// of the admission step. A closed set; the zero value oNone is not answered yet. What the
// metrics and the answer say of it is read from its row of outcomes: the sale funnel's
// outcome label, the HTTP outcome label of the reservation route, and a fault's answer.
type outcome uint8

const (
	oNone outcome = iota
	oAccepted
	oReplayed
	oKillSwitch
	oNotOpen
	oClosed
	oBlacklist
	oCanary
	oRemembered
	oRateGlobal
	oRateCampaign
	oRateActivity
	oRateChannel
	oRateIP
	oRateUser
	oToken
	oUserLimit
	oSoldOut
	oUnavailable
	oOutcomeUnknown
	nOutcomes
)

// outcomeRow is what an outcome is: its names in the metrics, and which rejections of the
// admission step it stands for.
type outcomeRow struct {
	// funnel is the outcome label of seckill_funnel_answers_total and
	// seckill_campaign_answers_total, the field "o:<funnel>" of the Redis funnel hash and the
	// key of the report's answers.
	funnel string
	// answer is the outcome of the HTTP answer: RESERVED or REPLAYED for a success, else the
	// error code of the answer: the code of the rejections that have this outcome, and the
	// code a fault's answer carries (UNAVAILABLE, OUTCOME_UNKNOWN).
	answer string
	// dimension and reason, when set, narrow the rejections of code answer that have this
	// outcome to a rate limit's dimension or reason.
	dimension, reason string
	// label, when set, is the outcome's label on the HTTP histogram where it is not answer:
	// OUTCOME_UNKNOWN is outside its closed set, and counted as UNAVAILABLE there, as
	// outcomeLabel counts every 503 whose code is not in errorOutcomes.
	label string
}

// outcomes is the one table of the reservation outcomes. A rejection of the admission step
// has the outcome of the first row whose answer is its code and whose dimension and reason,
// when set, are its own (the more specific rows come first: remembered, then the rate
// limits by dimension, rate_user taking a RATE_LIMITED of any other); a rejection that no row
// matches (RECOVERING, say) is unavailable. Adding a rejection is adding its row: its code
// joins the HTTP label's closed set (errorOutcomes) and the reservation route's series.
var outcomes = [nOutcomes]outcomeRow{
	oAccepted:       {funnel: "accepted", answer: outcomeReserved},
	oReplayed:       {funnel: "replayed", answer: outcomeReplayed},
	oKillSwitch:     {funnel: "killswitch", answer: admission.CodeDisabled},
	oNotOpen:        {funnel: "not_open", answer: admission.CodeNotOpen},
	oClosed:         {funnel: "closed", answer: admission.CodeClosed},
	oBlacklist:      {funnel: "blacklist", answer: admission.CodeForbidden},
	oCanary:         {funnel: "canary", answer: admission.CodeNotAdmitted},
	oRemembered:     {funnel: "remembered", answer: admission.CodeRateLimited, reason: limiter.ReasonRemembered},
	oRateGlobal:     {funnel: "rate_global", answer: admission.CodeRateLimited, dimension: limiter.DimGlobal},
	oRateCampaign:   {funnel: "rate_campaign", answer: admission.CodeRateLimited, dimension: limiter.DimCampaign},
	oRateActivity:   {funnel: "rate_activity", answer: admission.CodeRateLimited, dimension: limiter.DimActivity},
	oRateChannel:    {funnel: "rate_channel", answer: admission.CodeRateLimited, dimension: limiter.DimChannel},
	oRateIP:         {funnel: "rate_ip", answer: admission.CodeRateLimited, dimension: limiter.DimIP},
	oRateUser:       {funnel: "rate_user", answer: admission.CodeRateLimited},
	oToken:          {funnel: "token", answer: admission.CodeTokenRequired},
	oUserLimit:      {funnel: "user_limit", answer: admission.CodeAlreadyPurchased},
	oSoldOut:        {funnel: "sold_out", answer: admission.CodeSoldOut},
	oUnavailable:    {funnel: "unavailable", answer: admission.CodeUnavailable},
	oOutcomeUnknown: {funnel: "outcome_unknown", answer: CodeOutcomeUnknown, label: admission.CodeUnavailable},
}

// refused reports whether o is a refusal by an admission layer (not a reservation, not a
// fault).
func (o outcome) refused() bool { return o >= oKillSwitch && o <= oSoldOut }

// funnelName is o's outcome label in the sale funnel.
func (o outcome) funnelName() string { return outcomes[o].funnel }

// httpLabel is o's outcome label on seckill_http_request_duration_seconds (the reservation
// route's): its answer, or its label when set.
func (o outcome) httpLabel() string {
	if r := &outcomes[o]; r.label != "" {
		return r.label
	}
	return outcomes[o].answer
}

// outcomeOf is the outcome of an error of the admission step (Admit or Reserve): a
// *admission.Rejection's row (see outcomes); a *admission.Fault of the reservation script
// that may have run is outcome_unknown, any other failure unavailable. The rejection is
// returned with it (nil for a failure): the answer is that rejection as it is.
func outcomeOf(err error) (outcome, *admission.Rejection) {
	// errors.AsType, unlike errors.As with a local target, allocates nothing.
	if rej, ok := errors.AsType[*admission.Rejection](err); ok {
		for o := oKillSwitch; o < nOutcomes; o++ {
			if row := &outcomes[o]; row.answer == rej.Code && (row.dimension == "" || row.dimension == rej.Dimension) &&
				(row.reason == "" || row.reason == rej.Reason) {
				return o, rej
			}
		}
		return oUnavailable, rej
	}
	if f, ok := errors.AsType[*admission.Fault](err); ok && f.IdempotencyKey != "" && !neverSent(f.Err) {
		return oOutcomeUnknown, nil
	}
	return oUnavailable, nil
}
