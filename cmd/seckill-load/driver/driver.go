// Package driver is the load tool's HTTP driver: it plays the crowd of a scenario against the
// targets (one worker per connection, each serving its users in order of due time, with the
// retry behaviour of real clients and of bots), records every answer, polls the activity's
// remaining stock, and turns what it saw into the report of the rush. It reads no database:
// the checks against MySQL and Redis are package checks.
package driver

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
	"github.com/seckill/seckill/internal/backoff"
)

// maxBody bounds what is read of one answer.
const maxBody = 64 << 10

// Driver plays one scenario. Build it with New, Close it when done.
type Driver struct {
	cfg       scenario.Config
	client    *http.Client
	transport *http.Transport // nil when cfg.Transport was given
	body      []byte
	users     []*user

	sent      atomic.Int64 // requests started, for MaxRequests
	next      atomic.Uint64
	perTarget []atomic.Int64

	// Progress counters.
	completed atomic.Int64
	nAccepted atomic.Int64
	n410      atomic.Int64
	n429      atomic.Int64
	nDisabled atomic.Int64 // 503 DISABLED: a kill switch, an answer of the service, not an error
	nErrors   atomic.Int64
	// The last progress line's time since the start and request count; only the progress
	// goroutine writes them while the rush runs, Rush reads them after it stopped.
	lastProgress  time.Duration
	lastCompleted int64

	rec recorder
}

// New builds the driver of cfg, which has had Defaults and Validate and has a RunID.
func New(cfg scenario.Config) *Driver {
	r := &Driver{cfg: cfg, perTarget: make([]atomic.Int64, len(cfg.Targets))}
	rt := cfg.Transport
	if rt == nil {
		r.transport = &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        cfg.Connections * len(cfg.Targets),
			MaxIdleConnsPerHost: cfg.Connections,
			MaxConnsPerHost:     cfg.Connections,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
		rt = r.transport
	}
	r.client = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	r.body, _ = json.Marshal(map[string]int{"quantity": cfg.Quantity})
	r.users = make([]*user, cfg.Users)
	bots := 0
	for i := range r.users {
		// Spread the bots evenly: user i is a bot when floor((i+1)*F) > floor(i*F).
		bot := int(float64(i+1)*cfg.Bots) > int(float64(i)*cfg.Bots)
		if bot {
			bots++
		}
		r.users[i] = &user{idx: i, id: fmt.Sprintf("u-%s-%d", cfg.RunID, i), bot: bot}
	}
	r.rec.init()
	return r
}

// Bots returns the ids of the scenario's bots, which New spreads evenly over the users.
func (r *Driver) Bots() []string {
	var ids []string
	for _, u := range r.users {
		if u.bot {
			ids = append(ids, u.id)
		}
	}
	return ids
}

// Close releases the idle connections of the driver's own transport.
func (r *Driver) Close() {
	if r.transport != nil {
		r.transport.CloseIdleConnections()
	}
}

// Rush plays the crowd until every user is done, the scenario's Duration passed or
// MaxRequests were sent, or ctx is cancelled (as if Duration had passed); requests in
// flight finish. It writes a progress line every Progress to the scenario's Log, and a last
// one when the rush ends (a rush shorter than Progress still shows one), naming why it ended.
func (r *Driver) Rush(ctx context.Context) *Result {
	cfg := r.cfg
	rushCtx, stopRush := context.WithCancel(ctx)
	defer stopRush()
	if cfg.Duration > 0 {
		rushCtx, stopRush = context.WithTimeout(rushCtx, cfg.Duration)
		defer stopRush()
	}
	start := time.Now()
	progCtx, stopProgress := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	if cfg.Progress > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			r.progress(progCtx, start)
		}()
	}

	var workers sync.WaitGroup
	for w := 0; w < cfg.Connections; w++ {
		var mine []*user
		for i := w; i < len(r.users); i += cfg.Connections {
			mine = append(mine, r.users[i])
		}
		if len(mine) == 0 {
			break
		}
		offset := time.Duration(0)
		if cfg.Ramp > 0 {
			offset = cfg.Ramp * time.Duration(w) / time.Duration(cfg.Connections)
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			r.worker(rushCtx, stopRush, mine, start.Add(offset))
		}()
	}
	workers.Wait()
	elapsed := time.Since(start)
	stopProgress()
	bg.Wait()
	ended := r.ended(ctx, rushCtx)
	if cfg.Progress > 0 {
		r.progressLine(elapsed, elapsed-r.lastProgress, r.completed.Load()-r.lastCompleted, ended)
	}
	res := r.result(start, elapsed)
	res.Report.Ended = ended
	return res
}

// ended tells why the rush that ran under rushCtx (derived from ctx) ended.
func (r *Driver) ended(ctx, rushCtx context.Context) string {
	switch {
	case ctx.Err() != nil:
		return report.EndedInterrupted
	case r.cfg.MaxRequests > 0 && r.sent.Load() > r.cfg.MaxRequests:
		return report.EndedMaxRequests
	case errors.Is(rushCtx.Err(), context.DeadlineExceeded):
		return report.EndedDuration
	default:
		return report.EndedUsersDone
	}
}

// worker serves its users in order of due time until every one is done, the rush is over or
// MaxRequests is reached (then it stops the rush for every worker).
func (r *Driver) worker(ctx context.Context, stopAll context.CancelFunc, users []*user, startAt time.Time) {
	q := make(userQueue, 0, len(users))
	for _, u := range users {
		u.due = startAt
		u.newAttempt(r.cfg.RunID)
		q = append(q, u)
	}
	heap.Init(&q)
	for q.Len() > 0 {
		u := q[0]
		if backoff.Sleep(ctx, time.Until(u.due)) != nil {
			return
		}
		if n := r.sent.Add(1); r.cfg.MaxRequests > 0 && n > r.cfg.MaxRequests {
			stopAll()
			return
		}
		res := r.send(u)
		if wait, again := r.decide(u, res); again {
			u.due = time.Now().Add(wait)
			heap.Fix(&q, 0)
		} else {
			heap.Pop(&q)
		}
	}
}
