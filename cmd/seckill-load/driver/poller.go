package driver

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill-load/report"
	"github.com/seckill/seckill/cmd/seckill-load/scenario"
	"github.com/seckill/seckill/internal/backoff"
)

// ShardSampler reads the activity's stock shards once and returns the smallest stock among
// the shards that exist; ok is false when it read none (an error, or no shard yet).
type ShardSampler func(ctx context.Context) (smallest int64, ok bool)

// Poller reads the activity on every target every PollEvery of the scenario, keeping the
// minimum remaining seen, and samples the stock shards when given a ShardSampler. Safe for
// concurrent use.
type Poller struct {
	cfg    scenario.Config
	client *http.Client
	shards ShardSampler

	mu       sync.Mutex
	polls    int64
	errors   int64
	observed bool
	min      int64
	last     map[string]int64 // target -> latest remaining
	shardMin int64            // smallest Redis stock shard value seen
	shardObs bool
}

// NewPoller returns the poller of cfg; shards may be nil.
func NewPoller(cfg scenario.Config, shards ShardSampler) *Poller {
	// A client of its own, so that polls never wait for a worker's connection.
	return &Poller{
		cfg:    cfg,
		client: &http.Client{Transport: pollTransport(cfg)},
		shards: shards,
		last:   make(map[string]int64),
	}
}

func pollTransport(cfg scenario.Config) http.RoundTripper {
	if cfg.Transport != nil {
		return cfg.Transport
	}
	return &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
}

// Run polls until ctx is done.
func (p *Poller) Run(ctx context.Context) {
	defer func() {
		if t, ok := p.client.Transport.(*http.Transport); ok && p.cfg.Transport == nil {
			t.CloseIdleConnections()
		}
	}()
	t := time.NewTicker(p.cfg.PollEvery)
	defer t.Stop()
	for {
		p.pollOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Poller) pollOnce(ctx context.Context) {
	for _, target := range p.cfg.Targets {
		_, rem, err := getActivity(ctx, p.client, target, p.cfg.Activity)
		p.mu.Lock()
		p.polls++
		switch {
		case err != nil:
			if ctx.Err() == nil {
				p.errors++
			}
		case rem != nil:
			if !p.observed || *rem < p.min {
				p.min = *rem
			}
			p.observed = true
			p.last[target] = *rem
		}
		p.mu.Unlock()
	}
	if p.shards != nil {
		if v, ok := p.shards(ctx); ok {
			p.mu.Lock()
			if !p.shardObs || v < p.shardMin {
				p.shardMin, p.shardObs = v, true
			}
			p.mu.Unlock()
		}
	}
}

// WaitZero waits up to d until every target's latest remaining is 0.
func (p *Poller) WaitZero(ctx context.Context, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if p.Report().Last == 0 && p.allSeen() {
			return
		}
		if backoff.Sleep(ctx, p.cfg.PollEvery) != nil {
			return
		}
	}
}

func (p *Poller) allSeen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.last) == len(p.cfg.Targets)
}

// Report is what the poller saw of remaining so far.
func (p *Poller) Report() report.RemainingReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := report.RemainingReport{Polls: p.polls, Errors: p.errors, Observed: p.observed, Min: p.min}
	first := true
	for _, v := range p.last {
		if first || v < r.Last {
			r.Last, first = v, false
		}
	}
	return r
}

// ShardMin is the smallest stock shard value sampled so far; ok is false when none was.
func (p *Poller) ShardMin() (smallest int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shardMin, p.shardObs
}
