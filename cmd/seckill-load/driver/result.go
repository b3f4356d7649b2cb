package driver

import (
	"cmp"
	"slices"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/report"
)

// Result is what a rush saw at the client.
type Result struct {
	// Report is the run's report without Remaining (the poller's, see Poller.Report) and
	// without checks.
	Report *report.Report
	// Holdings lists, in user order, every user the service gave a reservation to.
	Holdings []Holding
	// KnownRIDs are the distinct reservation ids the service gave.
	KnownRIDs []string
	// Duplicates are reservation ids answered to two users or two attempts.
	Duplicates []string
	// SoldOut tells whether any answer was 410 SOLD_OUT.
	SoldOut bool
}

// Holding is the reservations one user holds, as the service told it.
type Holding struct {
	User         string
	Reservations int
}

// result builds the Result of a finished rush.
func (r *Driver) result(start time.Time, elapsed time.Duration) *Result {
	cfg := r.cfg
	res := &Result{}
	rep := &report.Report{
		RunID: cfg.RunID, Activity: cfg.Activity, StartedAt: start.UTC(),
		DurationSeconds: elapsed.Seconds(),
		Latency:         make(map[string]report.LatencySummary),
		Users:           report.UsersReport{Total: len(r.users), Ended: make(map[string]int)},
		Config: report.ConfigReport{
			Users: cfg.Users, Connections: cfg.Connections, Attempts: cfg.Attempts,
			Quantity: cfg.Quantity, Channel: cfg.Channel, DurationLimitSeconds: cfg.Duration.Seconds(),
			MaxRequests: cfg.MaxRequests, RampSeconds: cfg.Ramp.Seconds(), Retry: cfg.Retry,
			MaxRetryWaitSeconds: cfg.MaxRetryWait.Seconds(), Stock: cfg.Stock, PerUserLimit: cfg.PerUserLimit,
		},
	}
	for i, t := range cfg.Targets {
		rep.Targets = append(rep.Targets, report.TargetReport{URL: t, Requests: r.perTarget[i].Load()})
	}

	rc := &r.rec
	rc.mu.Lock()
	for k, n := range rc.outcomes {
		rep.Outcomes = append(rep.Outcomes, report.Outcome{Status: k.status, Code: k.code, Count: n})
		rep.Requests += n
		if k.status >= 200 && k.status < 300 {
			rep.Reservations.Answers2xx += n
		}
		if k.status == 410 && k.code == "SOLD_OUT" {
			res.SoldOut = true
		}
	}
	for class, h := range rc.latency {
		rep.Latency[class] = report.Summarize(h)
	}
	rep.Reservations.MissingReservationID = rc.missingRID
	rep.Reservations.MissingRetryAfter = rc.missingRetryAfter
	rc.mu.Unlock()
	slices.SortFunc(rep.Outcomes, func(a, b report.Outcome) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Code, b.Code))
	})
	if elapsed > 0 {
		rep.ThroughputRPS = float64(rep.Requests) / elapsed.Seconds()
	}

	for _, u := range r.users {
		if u.bot {
			rep.Users.Bots++
		}
		if len(u.rids) > 0 {
			rep.Users.WithReservation++
		}
		end := u.final
		if end == "" {
			end = report.EndUnfinished
			if u.ambiguous {
				u.unresolved++
				u.ambiguous = false
			}
		}
		rep.Users.Ended[end]++
		rep.Reservations.Distinct += len(u.rids)
		rep.Reservations.Units += int64(len(u.rids) * cfg.Quantity)
		rep.Reservations.UnresolvedAttempts += u.unresolved
		res.KnownRIDs = append(res.KnownRIDs, u.rids...)
		if len(u.rids) > 0 {
			res.Holdings = append(res.Holdings, Holding{User: u.id, Reservations: len(u.rids)})
		}
	}
	rep.Config.Bots = rep.Users.Bots
	rc.mu.Lock()
	res.Duplicates = append([]string(nil), rc.duplicates...)
	rc.mu.Unlock()
	res.Report = rep
	return res
}
