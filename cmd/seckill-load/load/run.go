// Package load is the seckill load tool: it plays a flash crowd of distinct users against one or
// more seckill instances over HTTP, with the retry behaviour of real clients and of bots, and
// then checks the invariants it can check on its own (docs/API.md, "Invariants"): no unit sold over
// the stock, no user over the per-user limit, no reservation twice, every accepted reservation
// an order in MySQL, the remaining stock never negative.
//
// Run is the whole tool, in the order of its parts: the scenario (package scenario: flags,
// defaults, validation), the connections of the checks (package checks), the readiness of the
// targets and the rush with its poller (package driver), the checks, and the report (package
// report). cmd/seckill-load only parses flags and prints the Report; tests call Run directly.
package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/checks"
	"github.com/seckill/seckill/cmd/seckill-load/driver"
	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
	"github.com/seckill/seckill/internal/backoff"
)

// soldOutSettle is how long the poller may take to see remaining 0 on every target after a
// sell-out: the spec lets remaining lag the truth by up to 1 s, plus a margin.
const soldOutSettle = 2 * time.Second

// Run plays the flash crowd described by cfg, then runs the invariant checks and returns the
// report. It returns an error only when the run could not be made (bad config, the activity
// could not be created, a checker could not connect); failed invariants are in the report.
// Cancelling ctx stops the rush early as if Duration had passed; requests in flight finish.
func Run(ctx context.Context, cfg scenario.Config) (*report.Report, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RunID == "" {
		var b [4]byte
		rand.Read(b[:])
		cfg.RunID = hex.EncodeToString(b[:])
	}
	d := driver.New(cfg)
	defer d.Close()
	chk, err := checks.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer chk.Close()
	if err := d.CheckReady(ctx); err != nil {
		return nil, err
	}
	if cfg.Create {
		if err := d.CreateActivity(ctx); err != nil {
			return nil, err
		}
	}
	if err := d.CheckStock(ctx); err != nil {
		return nil, err
	}
	// The service's count of accepted reservations before the rush: a run against an activity
	// that earlier runs already sold compares only what it added.
	baseAccepted := -1.0
	if cfg.AdminToken != "" {
		chk.UseReconciliation(d.Reconciliation)
		chk.Baseline(ctx)
		if sale, err := d.SaleReport(ctx); err == nil && cfg.Create {
			baseAccepted = acceptedOf(sale)
		}
	}

	pollCtx, stopPoll := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPoll()
	poll := driver.NewPoller(cfg, chk.SampleShards())
	var bg sync.WaitGroup
	if cfg.PollEvery > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			poll.Run(pollCtx)
		}()
	}

	res := d.Rush(ctx)
	if cfg.PollEvery > 0 && res.SoldOut {
		poll.WaitZero(ctx, soldOutSettle)
	}
	stopPoll()
	bg.Wait()

	res.Report.Remaining = poll.Report()
	chk.Run(ctx, res, poll)
	if cfg.AdminToken != "" {
		saleReport(ctx, d, res.Report, baseAccepted)
	}
	res.Report.Finish()
	return res.Report, nil
}

// saleReport reads the service's report of the sale into rep. When this run created the
// activity (base >= 0: the service's accepted count before the rush), it is the only traffic:
// the accepted reservations the service counted since must then equal the distinct
// reservations the tool got (a reservation the tool could not resolve, after a timeout, may
// make the service's count higher by at most the unresolved attempts). Each instance adds its
// counts every countsLagMs, so the report is read until its attempts stood still for two of
// those, and a count still off is read again for up to eight of those (at least 2 s) before
// it fails.
func saleReport(ctx context.Context, d *driver.Driver, rep *report.Report, base float64) {
	got, unresolved := int64(rep.Reservations.Distinct), int64(rep.Reservations.UnresolvedAttempts)
	var sale map[string]any
	var added int64
	var deadline, changedAt time.Time
	var settle time.Duration
	lastAttempts := -1.0
	for {
		var err error
		sale, err = d.SaleReport(ctx)
		if err != nil {
			rep.Add("sale report", report.Fail, "%v", err)
			return
		}
		added = int64(acceptedOf(sale) - base)
		if deadline.IsZero() {
			lag, _ := sale["countsLagMs"].(float64)
			deadline = time.Now().Add(max(2*time.Second, 8*time.Duration(lag)*time.Millisecond))
			settle = max(500*time.Millisecond, 2*time.Duration(lag)*time.Millisecond)
		}
		// Every instance adds its counts every countsLagMs: the report is read until its
		// attempts stopped moving for two of those, so it counts the whole rush.
		if a, _ := sale["attempts"].(float64); a != lastAttempts {
			lastAttempts, changedAt = a, time.Now()
		}
		settled := time.Since(changedAt) >= settle
		if settled && (base < 0 || added >= got && added <= got+unresolved) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		_ = backoff.Sleep(ctx, 100*time.Millisecond)
	}
	rep.Sale = sale
	if base < 0 {
		return
	}
	if added < got || added > got+unresolved {
		rep.Add("sale report", report.Fail, "the service counted %d accepted reservations during the run, the tool got %d (%d unresolved)", added, got, unresolved)
		return
	}
	rep.Add("sale report", report.Pass, "the service counted %d accepted reservations during the run, the tool got %d", added, got)
}

// acceptedOf is the accepted count of a sale report (0 when absent).
func acceptedOf(sale map[string]any) float64 {
	answers, _ := sale["answers"].(map[string]any)
	n, _ := answers["accepted"].(float64)
	return n
}
