package limiter

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Heartbeat and housekeeping constants.
const (
	heartbeatEvery = time.Second
	healthyWithin  = 5 * time.Second // an instance seen this recently is healthy
	forgetAfter    = time.Minute     // instances silent this long leave sk:instances
	probePings     = 3               // consecutive fast PINGs that recover
)

// health tracks whether Redis is slow or failing. score counts slow calls minus fast calls,
// never below 0 ("consecutive-ish"): it degrades at Fallback.SlowCallsToDegrade. A failed call
// (connection error, timeout, error reply) degrades at once.
type health struct {
	score    atomic.Int64
	degraded atomic.Bool
}

// ObserveRedis reports the latency and error of a Redis call the app made itself (the
// reservation script), so slowness is detected from real traffic too. A nil error, redis.Nil
// and a cancelled context are not failures; any other error, a deadline included, degrades at
// once. Safe for concurrent use.
func (l *Limiter) ObserveRedis(d time.Duration, err error) { l.observe(d, err) }

func (l *Limiter) observe(d time.Duration, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		if errors.Is(err, context.Canceled) {
			return // the caller gave up; says nothing about Redis
		}
		l.degrade("redis call failed", err)
		return
	}
	fb := l.policy()
	if d > fb.RedisSlow {
		l.slowC.Inc()
		if l.health.score.Add(1) >= int64(fb.SlowCallsToDegrade) {
			l.degrade("redis slow", nil)
		}
		return
	}
	for {
		s := l.health.score.Load()
		if s <= 0 || l.health.score.CompareAndSwap(s, s-1) {
			return
		}
	}
}

func (l *Limiter) degrade(why string, err error) {
	if !l.health.degraded.CompareAndSwap(false, true) {
		return
	}
	l.degradedG.Set(1)
	l.toDegraded.Inc()
	l.refreshHealthyFromFunc()
	l.log.Warn("rate limiter degraded to local limiting", "why", why, "err", err,
		"healthy_instances", l.healthyCount())
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *Limiter) recover() {
	l.health.score.Store(0)
	if l.health.degraded.CompareAndSwap(true, false) {
		l.degradedG.Set(0)
		l.toRecovered.Inc()
		l.log.Info("rate limiter recovered: Redis answers fast again")
	}
}

func (l *Limiter) refreshHealthyFromFunc() {
	if l.opts.Healthy == nil {
		return
	}
	if n := l.opts.Healthy(); n >= 1 {
		l.setHealthy(int64(n))
	}
}

// Run must be running for a degraded Limiter to recover: it owns the only prober.
//
// Run heartbeats this instance into sk:instances every second (and reads the healthy count from
// it unless Options.Healthy is set), runs the single prober every Fallback.ProbeEvery while the
// Limiter is degraded, and hands back expired leases and forgets idle local state. It blocks
// until ctx is done or Close is called, removes this instance from sk:instances, and returns
// nil; ErrRunning if it is already running.
func (l *Limiter) Run(ctx context.Context) error {
	l.runMu.Lock()
	if l.running {
		l.runMu.Unlock()
		return ErrRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	l.running, l.cancel, l.done = true, cancel, make(chan struct{})
	done := l.done
	l.runMu.Unlock()
	defer func() {
		cancel()
		l.leave()
		l.runMu.Lock()
		l.running = false
		l.runMu.Unlock()
		close(done)
	}()

	l.heartbeat(ctx)
	hb := time.NewTicker(heartbeatEvery)
	defer hb.Stop()
	probe := time.NewTimer(time.Hour)
	probe.Stop()
	probing := false
	armProbe := func() {
		if !probing && l.Degraded() {
			probing = true
			probe.Reset(l.policy().ProbeEvery)
		}
	}
	armProbe()
	for {
		select {
		case <-ctx.Done():
			probe.Stop()
			return nil
		case <-hb.C:
			l.heartbeat(ctx)
			l.housekeep(ctx)
			armProbe()
		case <-l.wake:
			armProbe()
		case <-probe.C:
			probing = false
			l.probe(ctx)
			armProbe()
		}
	}
}

// Close stops Run and waits for it to return. Safe to call when Run is not running.
func (l *Limiter) Close() error {
	l.runMu.Lock()
	cancel, done := l.cancel, l.done
	running := l.running
	l.runMu.Unlock()
	if !running {
		return nil
	}
	cancel()
	<-done
	return nil
}

// heartbeat registers the instance and refreshes the healthy count; on failure the last count
// is kept.
func (l *Limiter) heartbeat(ctx context.Context) {
	l.refreshHealthyFromFunc()
	ctx, cancel := context.WithTimeout(ctx, l.opts.CallTimeout)
	defer cancel()
	l.callsHB.Inc()
	n, err := l.heartbeatScript.Run(ctx, l.rdb, []string{l.instancesKey}, l.opts.InstanceID,
		healthyWithin.Milliseconds(), forgetAfter.Milliseconds(), 0).Int64()
	if err != nil {
		// A failed heartbeat degrades like a failed call on the request path, so the local
		// limiter (and seckill_rate_limiter_degraded) is in force within a second of Redis
		// going away, with or without traffic. Its latency is not counted: it runs off the
		// request path, where slowness is measured. A shutdown is no failure.
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			l.observe(0, err)
		}
		l.log.Debug("heartbeat failed; keeping the last healthy count", "err", err,
			"healthy_instances", l.healthyCount())
		return
	}
	if l.opts.Healthy == nil && n >= 1 {
		l.setHealthy(n)
	}
}

func (l *Limiter) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.CallTimeout)
	defer cancel()
	_ = l.heartbeatScript.Run(ctx, l.rdb, []string{l.instancesKey}, l.opts.InstanceID,
		healthyWithin.Milliseconds(), forgetAfter.Milliseconds(), 1).Err()
}

// probe recovers when probePings consecutive PINGs each answer within Fallback.RedisSlow.
func (l *Limiter) probe(ctx context.Context) {
	if !l.Degraded() {
		return
	}
	fb := l.policy()
	for range probePings {
		cctx, cancel := context.WithTimeout(ctx, max(l.opts.CallTimeout, fb.RedisSlow))
		l.callsProbe.Inc()
		start := time.Now()
		err := l.rdb.Ping(cctx).Err()
		d := time.Since(start)
		cancel()
		if err != nil || d > fb.RedisSlow {
			if d > fb.RedisSlow {
				l.slowC.Inc()
			}
			return
		}
	}
	l.recover()
}

// housekeep hands back expired leases and forgets idle pools, idle local buckets and expired
// memories.
func (l *Limiter) housekeep(ctx context.Context) {
	now := l.clock.Now()
	nowNs := now.UnixNano()
	idle := int64(time.Minute)
	degraded := l.Degraded()
	for d := range nLeased {
		var flush []*pool
		l.pools[d].sweep(func(_ string, p *pool) bool {
			if nowNs-p.used.Load() > idle && p.available() == 0 {
				return false
			}
			flush = append(flush, p)
			return true
		})
		if !degraded {
			for _, p := range flush {
				p.flush(ctx, l, now)
			}
		}
		l.local[d].sweep(func(_ string, b *localBucket) bool { return nowNs-b.used.Load() <= idle })
	}
	l.ipLoc.sweep(func(_ string, b *localBucket) bool { return nowNs-b.used.Load() <= idle })
	l.users.purge(now)
	l.ips.purge(now)
}
