package app

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill/seckill/app/admission"
)

// reqState is what the middleware and the handlers of one request share: the snapshot
// (requireSnapshot) and the outcome (for the metrics). observe takes it from a pool and lends
// the context its own Keys map holding it, so a request allocates neither a map nor a boxed
// value for them; it clears both and takes them back when the request is done.
type reqState struct {
	keys    map[any]any
	snap    *Snapshot
	outcome string
	// adm is the request to the admission step, which holds its rejection until the answer
	// is written (see admission.Request).
	adm admission.Request
	// fa is the funnel of the activity of a reservation attempt (nil: not an attempt or no
	// funnel), fo the attempt's outcome, set once where the answer is decided (answered);
	// observe counts the funnel's and the HTTP histogram's from it, with the latency.
	fa *actFunnel
	fo outcome
}

// funnelOutcome is what the funnel counts of an attempt answered with status: its outcome,
// or unavailable when none was decided (a panic before answered, say while reading a
// replayed reservation) or a replay's answer became a 5xx, so every attempt is answered once.
// An accepted attempt stays accepted whatever its answer: it sold its units.
func (st *reqState) funnelOutcome(status int) outcome {
	if st.fo == oNone || st.fo == oReplayed && status >= http.StatusInternalServerError {
		return oUnavailable
	}
	return st.fo
}

// state is the request's reqState, nil outside observe.
func state(c *gin.Context) *reqState {
	v, _ := c.Get(ctxState)
	st, _ := v.(*reqState)
	return st
}

// setOutcome records the outcome of the request for observe (a reservation attempt's is
// recorded by answered instead).
func setOutcome(c *gin.Context, o string) {
	if st := state(c); st != nil {
		st.outcome = o
	}
}

// observe records the latency of every request by route and outcome.
func (a *api) observe(c *gin.Context) {
	start := time.Now()
	var st *reqState
	if a.states != nil {
		st = a.states.Get().(*reqState)
	} else {
		st = &reqState{keys: make(map[any]any, 1)}
	}
	lent := c.Keys == nil
	if lent {
		c.Keys = st.keys
	}
	c.Set(ctxState, st)
	c.Next()
	d := time.Since(start)
	if st.fo != oNone && st.outcome == "" {
		// A reservation attempt's answer: its label is its outcome's.
		a.metrics.answers[st.fo].Observe(d.Seconds())
	} else {
		// Any other answer, or one that replaced the attempt's (a panic's 500).
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		a.metrics.observer(route, outcomeLabel(st.outcome, c.Writer.Status())).Observe(d.Seconds())
	}
	if st.fa != nil {
		st.fa.answer(a.funnel, st.funnelOutcome(c.Writer.Status()), st.adm.UserID, st.adm.Quantity, d)
	}
	// Nothing keeps the context after the request (gin resets it), so the map can be reused.
	if a.states != nil && lent {
		c.Keys = nil
		clear(st.keys)
		*st = reqState{keys: st.keys}
		a.states.Put(st)
	}
}

// recover turns a panic into a 500 of the error model, without a stack trace in the body.
func (a *api) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			a.log.Error("panic in handler", "route", c.FullPath(), "panic", v)
			if c.Writer.Written() {
				// An answer is on its way already: a second body would corrupt it.
				c.Abort()
				return
			}
			writeError(c, newError(http.StatusInternalServerError, CodeInternal, "internal error"))
		}
	}()
	c.Next()
}

// requireSnapshot answers 503 UNAVAILABLE while no configuration is loaded, and hands the
// snapshot to the handler: a request loads it once.
func (a *api) requireSnapshot(c *gin.Context) {
	snap := a.cfg.Current()
	if snap == nil {
		writeError(c, newError(http.StatusServiceUnavailable, admission.CodeUnavailable, "no configuration loaded yet").after(time.Second))
		return
	}
	if st := state(c); st != nil {
		st.snap = snap
	} else {
		c.Set(ctxSnapshot, snap)
	}
	c.Next()
}

// snapshot is the request's configuration, set by requireSnapshot.
func snapshot(c *gin.Context) *Snapshot {
	if st := state(c); st != nil && st.snap != nil {
		return st.snap
	}
	v, _ := c.Get(ctxSnapshot)
	s, _ := v.(*Snapshot)
	return s
}
