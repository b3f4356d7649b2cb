package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// result is one answer (or transport failure) of the reservation endpoint.
type result struct {
	status        int    // 0 for a transport error
	code          string // error code of the body, or the transport error kind
	rid           string
	retryAfter    time.Duration
	hasRetryAfter bool // the answer said when to retry, in the header or the body
	// retryAfterBoth tells the answer carried both the Retry-After header and
	// retryAfterSeconds in the body, as docs/API.md section 4 requires of every 429 and 503.
	retryAfterBoth bool
	latency        time.Duration
}

type answerBody struct {
	ReservationID     string   `json:"reservationId"`
	Code              string   `json:"code"`
	RetryAfterSeconds *float64 `json:"retryAfterSeconds"`
}

func (r *Driver) send(u *user) result {
	t := int((r.next.Add(1) - 1) % uint64(len(r.cfg.Targets)))
	r.perTarget[t].Add(1)
	url := r.cfg.Targets[t] + "/api/v1/activities/" + r.cfg.Activity + "/reservations"
	// Requests in flight finish after the rush stops: a reservation the service made must be
	// seen, or the order count could not be checked.
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.body))
	if err != nil {
		return result{code: "request"}
	}
	// Without GetBody net/http never replays the POST by itself on a reused connection (it
	// would, for a request with an Idempotency-Key): every request the service sees is one the
	// tool counts, and retries are the simulated user's decision.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-User-Id", u.id)
	req.Header.Set("Idempotency-Key", u.key)
	if r.cfg.Channel != "" {
		req.Header.Set("X-Channel", r.cfg.Channel)
	}
	if r.cfg.JWTSecret != "" {
		if u.jwt == "" {
			u.jwt = signJWT(r.cfg.JWTSecret, u.id)
		}
		req.Header.Set("Authorization", "Bearer "+u.jwt)
	}

	start := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		return result{code: errorKind(err), latency: time.Since(start)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	res := result{status: resp.StatusCode, latency: time.Since(start)}
	if err != nil {
		return result{code: errorKind(err), latency: res.latency}
	}
	var ab answerBody
	if json.Unmarshal(b, &ab) == nil {
		res.rid = ab.ReservationID
		res.code = ab.Code
	}
	bodyOK := ab.RetryAfterSeconds != nil && *ab.RetryAfterSeconds >= 0
	d, headerOK := parseRetryAfter(resp.Header.Get("Retry-After"))
	switch {
	case headerOK:
		res.retryAfter, res.hasRetryAfter = d, true
	case bodyOK:
		res.retryAfter = time.Duration(*ab.RetryAfterSeconds * float64(time.Second))
		res.hasRetryAfter = true
	}
	res.retryAfterBoth = headerOK && bodyOK
	return res
}

func signJWT(secret, sub string) string {
	now := time.Now()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "iat": now.Unix(), "exp": now.Add(24 * time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		return ""
	}
	return s
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return "reset"
	default:
		return "other"
	}
}
