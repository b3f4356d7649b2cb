package admission

import (
	"net/http"
	"time"

	"github.com/seckill/seckill/inventory"
	"github.com/seckill/seckill/limiter"
)

// Error codes of the rejections of this package (docs/API.md section 4, the JSON error
// model); app names the rest of the model's codes.
const (
	CodeForbidden        = "FORBIDDEN"
	CodeTokenRequired    = "TOKEN_REQUIRED"
	CodeAlreadyPurchased = "ALREADY_PURCHASED"
	CodeSoldOut          = "SOLD_OUT"
	CodeClosed           = "CLOSED"
	CodeNotOpen          = "NOT_OPEN"
	CodeRateLimited      = "RATE_LIMITED"
	CodeNotAdmitted      = "NOT_ADMITTED"
	CodeDisabled         = "DISABLED"
	CodeUnavailable      = "UNAVAILABLE"
	// CodeRecovering: Redis lost the activity's state; reservations are refused until an
	// operator restores it from MySQL (docs/API.md, "Redis lost data").
	CodeRecovering = "RECOVERING"
)

// Rejection is the one answer of a layer that refused a request: the HTTP status, the code of
// the error model, a message, and the fields that code carries. A Rejection is read-only: Admit
// and Reserve return shared values for the answers that carry nothing of the request, and a
// value held by the Request for the others (valid until the Request is reused), so that no
// rejection allocates.
type Rejection struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the wait of a 429 or 503 (DISABLED, NOT_ADMITTED, RATE_LIMITED,
	// UNAVAILABLE); zero for the others.
	RetryAfter time.Duration
	// Dimension names the budget of a RATE_LIMITED answer (limiter.DimGlobal ... DimUser).
	Dimension string
	// Reason is the reason of a RATE_LIMITED answer as the limiter's metrics name it
	// (limiter.ReasonRate, ReasonWindow, ReasonRemembered, ...), the limiter's or the
	// reservation script's; not answered to the client, counted by the sale funnel and, for
	// the script's, by the limiter.
	Reason string
	// OpensAt is the opening of a NOT_OPEN answer.
	OpensAt time.Time
	// ReservationID is the user's last reservation of an ALREADY_PURCHASED answer, "" when the
	// script did not know it (the field is answered even then).
	ReservationID string
}

func (r *Rejection) Error() string { return r.Code + ": " + r.Message }

// Fault is a failure of Redis on the way: the request was neither admitted nor rejected, and
// the caller fails closed (503). IdempotencyKey is set when the failed call was the reservation
// script itself, which may have run: a retry carrying that key finds the reservation if it was
// made.
type Fault struct {
	Err            error
	IdempotencyKey string
}

func (f *Fault) Error() string { return "admission: " + f.Err.Error() }

func (f *Fault) Unwrap() error { return f.Err }

// Retry-After of the rejections that fix it.
const (
	// disabledRetry is the Retry-After of a kill switch.
	disabledRetry = 5 * time.Second
	// notAdmittedRetry is the Retry-After of a user outside the canary: the ratio is edited by
	// hand, so there is no point in coming back sooner.
	notAdmittedRetry = 30 * time.Second
	// unavailableRetry is the Retry-After of a 503 UNAVAILABLE.
	unavailableRetry = time.Second
	// recoveringRetry is the Retry-After of RECOVERING: a restore takes seconds at least.
	recoveringRetry = 5 * time.Second
)

const (
	msgNotOpen     = "the activity is not open yet"
	msgRateLimited = "too many requests"
)

// The answers that carry nothing of the request, shared by every request.
var (
	rejDisabled = &Rejection{Status: http.StatusServiceUnavailable, Code: CodeDisabled,
		Message: "reservations are disabled", RetryAfter: disabledRetry}
	rejClosed      = &Rejection{Status: http.StatusGone, Code: CodeClosed, Message: "the activity is closed"}
	rejSoldOut     = &Rejection{Status: http.StatusGone, Code: CodeSoldOut, Message: "sold out"}
	rejForbidden   = &Rejection{Status: http.StatusForbidden, Code: CodeForbidden, Message: "forbidden"}
	rejNotAdmitted = &Rejection{Status: http.StatusTooManyRequests, Code: CodeNotAdmitted,
		Message: "not admitted to this sale yet", RetryAfter: notAdmittedRetry}
	rejTokenRequired = &Rejection{Status: http.StatusForbidden, Code: CodeTokenRequired,
		Message: "a valid grab token is required"}
	rejPassRequired = &Rejection{Status: http.StatusForbidden, Code: CodeTokenRequired,
		Message: "the activity is behind a waiting room: the reservation needs the pass of your turn (POST .../queue, then poll)"}
	rejCanceled = &Rejection{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Message: "request cancelled", RetryAfter: unavailableRetry}
	rejRecovering = &Rejection{Status: http.StatusServiceUnavailable, Code: CodeRecovering,
		Message: "the activity is being recovered: its stock state is restored from the orders, retry later", RetryAfter: recoveringRetry}
	rejUnexpected = &Rejection{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Message: "unexpected stock answer", RetryAfter: unavailableRetry}
)

func notOpen(opensAt time.Time) Rejection {
	return Rejection{Status: http.StatusTooEarly, Code: CodeNotOpen, Message: msgNotOpen, OpensAt: opensAt}
}

func rateLimited(dimension string, retryAfter time.Duration) Rejection {
	return Rejection{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: msgRateLimited,
		RetryAfter: retryAfter, Dimension: dimension}
}

// scriptRejections is the one table from a refusing answer of the reservation script
// (inventory.Code, the script's own number) to its rejection, the limiter's metrics included
// (Dimension, Reason); Reserve adds what the answer carries (RetryAfter, OpensAt,
// ReservationID). Reserved and Replayed are no rejection.
var scriptRejections = [...]Rejection{
	inventory.AlreadyPurchased: {Status: http.StatusConflict, Code: CodeAlreadyPurchased,
		Message: "the per-user limit is reached"},
	inventory.NotOpen:           notOpen(time.Time{}),
	inventory.Closed:            *rejClosed,
	inventory.UserRateLimited:   scriptRateLimited(limiter.DimUser, limiter.ReasonRate),
	inventory.UserWindowLimited: scriptRateLimited(limiter.DimUser, limiter.ReasonWindow),
	inventory.SoldOut:           *rejSoldOut,
	inventory.IPRateLimited:     scriptRateLimited(limiter.DimIP, limiter.ReasonRate),
}

// scriptRateLimited is the rejection of a limit the reservation script checks.
func scriptRateLimited(dimension, reason string) Rejection {
	x := rateLimited(dimension, 0)
	x.Reason = reason
	return x
}

// scriptRejection is the rejection of script answer c, false when c refuses nothing or is
// not an answer of the script.
func scriptRejection(c inventory.Code) (Rejection, bool) {
	if c < 0 || int(c) >= len(scriptRejections) || scriptRejections[c].Code == "" {
		return Rejection{}, false
	}
	return scriptRejections[c], true
}
