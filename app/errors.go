package app

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/inventory"
)

// Error codes of the JSON error model (docs/API.md section 4).
const (
	CodeBadRequest       = "BAD_REQUEST"
	CodeTooLarge         = "PAYLOAD_TOO_LARGE"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeForbidden        = "FORBIDDEN"
	CodeTokenRequired    = "TOKEN_REQUIRED"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeConflict         = "CONFLICT"
	CodeAlreadyPurchased = "ALREADY_PURCHASED"
	CodeSoldOut          = "SOLD_OUT"
	CodeClosed           = "CLOSED"
	CodeNotOpen          = "NOT_OPEN"
	CodeRateLimited      = "RATE_LIMITED"
	CodeNotAdmitted      = "NOT_ADMITTED"
	CodeDisabled         = "DISABLED"
	CodeUnavailable      = "UNAVAILABLE"
	// CodeOutcomeUnknown is a 503 whose reservation may have been made (the script may have
	// run after the request gave up): retry with the idempotencyKey of the answer.
	CodeOutcomeUnknown = "OUTCOME_UNKNOWN"
	CodeInternal       = "INTERNAL"
)

// apiError is an answer of the JSON error model: {"code","message"} plus named fields.
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter time.Duration // > 0 for 429 and 503: Retry-After header and retryAfterSeconds
	fields     gin.H
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func newError(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, message: msg}
}

func (e *apiError) with(k string, v any) *apiError {
	if e.fields == nil {
		e.fields = gin.H{}
	}
	e.fields[k] = v
	return e
}

func (e *apiError) after(d time.Duration) *apiError {
	e.retryAfter = d
	return e
}

func badRequest(msg string) *apiError { return newError(http.StatusBadRequest, CodeBadRequest, msg) }

func unavailable(msg string) *apiError {
	return newError(http.StatusServiceUnavailable, CodeUnavailable, msg).after(time.Second)
}

// neverSent reports whether a failed Redis call surely did not run its command: the
// connection could not be made, no pooled connection was free, the client was closed, or
// Redis answered with an error (the script ran to no effect or not at all). Anything else (a
// timeout or a connection lost after the command was written, a context ending mid-call)
// may have run it.
func neverSent(err error) bool {
	if errors.Is(err, inventory.ErrBusy) || errors.Is(err, inventory.ErrNotFound) || errors.Is(err, inventory.ErrInvalid) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// retrySeconds rounds a wait up to whole seconds, at least 1, as Retry-After needs.
func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// writeError sends e. A 429 or 503 always carries Retry-After.
func writeError(c *gin.Context, e *apiError) {
	body := gin.H{"code": e.code, "message": e.message}
	for k, v := range e.fields {
		body[k] = v
	}
	if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
		d := e.retryAfter
		if d <= 0 {
			d = time.Second
		}
		s := retrySeconds(d)
		c.Header("Retry-After", strconv.Itoa(s))
		body["retryAfterSeconds"] = s
	}
	c.Set(ctxOutcome, e.code)
	c.AbortWithStatusJSON(e.status, body)
}
