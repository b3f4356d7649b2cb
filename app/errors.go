package app

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/app/admission"
	"github.com/seckill/seckill/inventory"
)

// Error codes of the JSON error model (docs/API.md section 4); those of the admission step's
// rejections are its own.
const (
	CodeBadRequest       = "BAD_REQUEST"
	CodeTooLarge         = "PAYLOAD_TOO_LARGE"
	CodeUnauthenticated  = "UNAUTHENTICATED"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeConflict         = "CONFLICT"
	// CodeOutcomeUnknown is a 503 whose reservation may have been made (the script may have
	// run after the request gave up): retry with the idempotencyKey of the answer.
	CodeOutcomeUnknown = "OUTCOME_UNKNOWN"
	CodeInternal       = "INTERNAL"
	// CodeRefused is the code of a FAILED reservation whose order MySQL refused: Redis sold a
	// unit the activity's stock or the buyer's limit did not have where the orders live.
	CodeRefused = "REFUSED"
)

// apiError is an answer of the JSON error model: {"code","message"} plus named fields. Its
// Rejection is the answer's status, code, message, Retry-After (> 0 for 429 and 503: the
// Retry-After header and retryAfterSeconds) and the fields a rejection carries, so that a
// rejection of the admission step is rendered as it is; app's own answers add the
// idempotency key and the per-user limit. The fields the hot paths use are fixed ones,
// written without reflection (see appendError); the rare others (readyz) go in extra, and
// the body is then encoded by encoding/json.
type apiError struct {
	admission.Rejection

	has            errField // which fixed optional fields are in the body
	idempotencyKey string
	perUserLimit   int

	extra gin.H
}

// errField is a set of the fixed optional fields of apiError.
type errField uint8

const (
	fDimension errField = 1 << iota
	fIdempotencyKey
	fOpensAt
	fPerUserLimit
	fReservationID
)

func newError(status int, code, msg string) *apiError {
	return &apiError{Rejection: admission.Rejection{Status: status, Code: code, Message: msg}}
}

// rejectionError is the answer of a rejection of the admission step: the Rejection itself,
// with the fields its code carries (a dimension, an opening, and for ALREADY_PURCHASED the
// reservationId even when it is "").
func rejectionError(r *admission.Rejection) apiError {
	e := apiError{Rejection: *r}
	if r.Dimension != "" {
		e.has |= fDimension
	}
	if !r.OpensAt.IsZero() {
		e.has |= fOpensAt
	}
	if r.Code == admission.CodeAlreadyPurchased {
		e.has |= fReservationID
	}
	return e
}

// with adds a field outside the fixed ones (rare answers only: the body then goes through
// encoding/json).
func (e *apiError) with(k string, v any) *apiError {
	if e.extra == nil {
		e.extra = gin.H{}
	}
	e.extra[k] = v
	return e
}

func (e *apiError) withDimension(d string) *apiError {
	e.Dimension, e.has = d, e.has|fDimension
	return e
}

func (e *apiError) withIdempotencyKey(k string) *apiError {
	e.idempotencyKey, e.has = k, e.has|fIdempotencyKey
	return e
}

func (e *apiError) withOpensAt(t time.Time) *apiError {
	e.OpensAt, e.has = t, e.has|fOpensAt
	return e
}

func (e *apiError) withPerUserLimit(n int) *apiError {
	e.perUserLimit, e.has = n, e.has|fPerUserLimit
	return e
}

func (e *apiError) withReservationID(id string) *apiError {
	e.ReservationID, e.has = id, e.has|fReservationID
	return e
}

func (e *apiError) after(d time.Duration) *apiError {
	e.RetryAfter = d
	return e
}

func badRequest(msg string) *apiError { return newError(http.StatusBadRequest, CodeBadRequest, msg) }

func unavailable(msg string) *apiError {
	return newError(http.StatusServiceUnavailable, admission.CodeUnavailable, msg).after(time.Second)
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

var (
	// jsonContentType is the Content-Type of an error body, shared read-only by every answer
	// (as Gin's renderers do) so that setting it allocates nothing.
	jsonContentType = []string{"application/json; charset=utf-8"}
	// retryAfterValues are the Retry-After header values of 0..maxRetryAfterValue seconds,
	// shared read-only likewise.
	retryAfterValues = func() [maxRetryAfterValue + 1][]string {
		var v [maxRetryAfterValue + 1][]string
		for i := range v {
			v[i] = []string{strconv.Itoa(i)}
		}
		return v
	}()
	// bodyBuffers recycles the buffers that hand-written bodies (errors, the 202) go into.
	bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}
)

const maxRetryAfterValue = 120

// writeError sends e, its code the request's outcome. A 429 or 503 always carries
// Retry-After.
func writeError(c *gin.Context, e *apiError) {
	setOutcome(c, e.Code)
	sendError(c, e)
}

// sendError sends e, leaving the request's outcome as it is (an attempt's answered, see
// refuse).
func sendError(c *gin.Context, e *apiError) {
	s := 0
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		d := e.RetryAfter
		if d <= 0 {
			d = time.Second
		}
		s = retrySeconds(d)
	}
	c.Abort()
	h := c.Writer.Header()
	h["Content-Type"] = jsonContentType
	if s > 0 {
		if s <= maxRetryAfterValue {
			h["Retry-After"] = retryAfterValues[s]
		} else {
			h.Set("Retry-After", strconv.Itoa(s))
		}
	}
	bp := bodyBuffers.Get().(*[]byte)
	body, err := appendError((*bp)[:0], e, s)
	if err != nil {
		// Only an extra field that encoding/json refuses gets here: a defect of the caller.
		body = append(body[:0], `{"code":"INTERNAL","message":"internal error"}`...)
	}
	c.Writer.WriteHeader(e.Status)
	_, _ = c.Writer.Write(body)
	putBody(bp, body)
}

// putBody gives a body buffer back to bodyBuffers, unless it grew past 4 KiB.
func putBody(bp *[]byte, body []byte) {
	if cap(body) <= 4<<10 {
		*bp = body
		bodyBuffers.Put(bp)
	}
}

// writeReserved answers 202 with a new reservation. The body is written by hand, exactly as
// encoding/json writes the map of its fields (TestReservedBodyMatchesEncodingJSON), so the
// most frequent success answer allocates neither a map nor a reflected encoding.
func writeReserved(c *gin.Context, reservationID, activityID string) {
	c.Writer.Header()["Content-Type"] = jsonContentType
	bp := bodyBuffers.Get().(*[]byte)
	body := appendReserved((*bp)[:0], reservationID, activityID)
	c.Writer.WriteHeader(http.StatusAccepted)
	_, _ = c.Writer.Write(body)
	putBody(bp, body)
}

// appendReserved appends the body of a 202: {"activityId","reservationId","status":"PENDING"}.
func appendReserved(b []byte, reservationID, activityID string) []byte {
	b = append(b, `{"activityId":`...)
	b = appendJSONString(b, activityID)
	b = append(b, `,"reservationId":`...)
	b = appendJSONString(b, reservationID)
	return append(b, `,"status":"PENDING"}`...)
}

// appendError appends the JSON body of e, with retryAfterSeconds s when s > 0, exactly as
// encoding/json encodes a map of the same fields: keys sorted, strings escaped with HTML
// escaping (TestErrorBodyMatchesEncodingJSON).
func appendError(b []byte, e *apiError, s int) ([]byte, error) {
	if e.extra != nil {
		return appendErrorReflect(b, e, s)
	}
	// Keys in sorted order: code, dimension, idempotencyKey, message, opensAt, perUserLimit,
	// reservationId, retryAfterSeconds.
	b = append(b, `{"code":`...)
	b = appendJSONString(b, e.Code)
	if e.has&fDimension != 0 {
		b = append(b, `,"dimension":`...)
		b = appendJSONString(b, e.Dimension)
	}
	if e.has&fIdempotencyKey != 0 {
		b = append(b, `,"idempotencyKey":`...)
		b = appendJSONString(b, e.idempotencyKey)
	}
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message)
	if e.has&fOpensAt != 0 {
		b = append(b, `,"opensAt":"`...)
		b = e.OpensAt.UTC().AppendFormat(b, millisLayout) // nothing in it to escape
		b = append(b, '"')
	}
	if e.has&fPerUserLimit != 0 {
		b = append(b, `,"perUserLimit":`...)
		b = strconv.AppendInt(b, int64(e.perUserLimit), 10)
	}
	if e.has&fReservationID != 0 {
		b = append(b, `,"reservationId":`...)
		b = appendJSONString(b, e.ReservationID)
	}
	if s > 0 {
		b = append(b, `,"retryAfterSeconds":`...)
		b = strconv.AppendInt(b, int64(s), 10)
	}
	return append(b, '}'), nil
}

// errorMap is the body of e as a map, for encoding/json.
func errorMap(e *apiError, s int) gin.H {
	m := gin.H{"code": e.Code, "message": e.Message}
	if e.has&fDimension != 0 {
		m["dimension"] = e.Dimension
	}
	if e.has&fIdempotencyKey != 0 {
		m["idempotencyKey"] = e.idempotencyKey
	}
	if e.has&fOpensAt != 0 {
		m["opensAt"] = millis(e.OpensAt)
	}
	if e.has&fPerUserLimit != 0 {
		m["perUserLimit"] = e.perUserLimit
	}
	if e.has&fReservationID != 0 {
		m["reservationId"] = e.ReservationID
	}
	for k, v := range e.extra {
		m[k] = v
	}
	if s > 0 {
		m["retryAfterSeconds"] = s
	}
	return m
}

// appendErrorReflect appends the body of an error with extra fields through encoding/json.
func appendErrorReflect(b []byte, e *apiError, s int) ([]byte, error) {
	raw, err := json.Marshal(errorMap(e, s))
	if err != nil {
		return b, err
	}
	return append(b, raw...), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string exactly as encoding/json writes it: ", \\ and
// control characters escaped, <, > and & as \u003c, \u003e, \u0026, U+2028 and U+2029
// escaped, invalid UTF-8 replaced by \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
