package limiter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/internal/backoff"
	"github.com/seckill/seckill/internal/tokenbucket"
)

// Heartbeat and housekeeping constants.
const (
	heartbeatEvery = time.Second
	healthyWithin  = 5 * time.Second // an instance seen this recently is healthy
	forgetAfter    = time.Minute     // instances silent this long leave sk:instances
	probePings     = 3               // consecutive fast PINGs that recover
)

// health tracks whether Redis is slow or failing. A failed call (connection error, timeout,
// error reply) degrades at once. Slowness is decided in two stages, so that the Limiter degrades
// on Redis being slow and not on its own process being starved of CPU:
//
//  1. Suspicion, from real traffic: score counts calls whose wall time exceeded
//     Fallback.RedisSlow minus calls that did not, never below 0 ("consecutive-ish"). A call's
//     wall time includes waiting for a pooled connection and for a CPU after the reply
//     arrived, which on a saturated machine is tens of milliseconds with Redis healthy; so at
//     half of Fallback.SlowCallsToDegrade it only wakes Run to confirm.
//  2. Confirmation, by Run's single prober: confirmRounds PINGs started roundGap apart, each
//     on a connection of the prober's own, each timed from just before its write to the
//     kernel's receive timestamp of the reply (see pinger and round), so neither the pool nor
//     the run queue counts. When every round is slower than RedisSlow, the confirmation holds for
//     confirmFresh and the Limiter degrades as soon as score reaches SlowCallsToDegrade (at
//     once if it already has). When one round is fast the suspicion is refuted: score starts
//     again from 0.
//
// The prober recovers with the same measure: probePings consecutive fast rounds. Measured
// (TestNoDegradeUnderCPUSaturation, a loaded 2-core machine, -race, the process on one P with 4
// goroutines spinning, 32 callers): in 60 s 17,860 client-side slow calls and 141 suspicions,
// all refuted, no degrade; kernel-timed PINGs mostly under 5 ms with single rounds of 20-45 ms
// (the shared machine starving Redis itself), which a fast round of the three refutes. With
// 100 ms added each way by a proxy every round takes about 200 ms and the Limiter degrades
// within 1 s of the latency starting (TestDegradeUnderConcurrentLoad: ~800 ms).
type health struct {
	score     atomic.Int64
	degraded  atomic.Bool
	suspect   atomic.Bool  // a confirmation is pending or running
	confirmed atomic.Int64 // when the last confirmation found Redis slow (Unix ns), 0 = none
}

// confirmRounds is how many rounds in a row must show Redis slow before the Limiter degrades;
// a confirmation counts for confirmFresh.
const (
	confirmRounds = 3
	roundGap      = 75 * time.Millisecond // between the starts of staggered rounds
	confirmFresh  = time.Second
)

// pinger is the i-th pinger, or nil when there are none.
func (l *Limiter) pinger(i int) *pinger {
	if l.pingers == nil {
		return nil
	}
	return l.pingers[i]
}

// suspectAt is the score that starts a confirmation: half the degrade threshold, so that the
// rounds run while real traffic is still gathering the other half and a slow Redis degrades
// within about SlowCallsToDegrade slow calls plus one confirmation.
func suspectAt(fb Fallback) int { return max(1, (fb.SlowCallsToDegrade+1)/2) }

func (h *health) confirmedRecently() bool {
	at := h.confirmed.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < confirmFresh
}

// ObserveRedis reports the latency and error of a Redis call the app made itself (the
// reservation script), so slowness is suspected from real traffic too. A nil error, redis.Nil
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
		n := l.health.score.Add(1)
		if n >= int64(fb.SlowCallsToDegrade) && l.health.confirmedRecently() {
			l.degrade("redis slow", errConfirmedSlow)
			return
		}
		if n >= int64(suspectAt(fb)) && !l.health.degraded.Load() &&
			l.health.suspect.CompareAndSwap(false, true) {
			l.wakeRun()
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

// errConfirmedSlow explains a degrade decided by real traffic after the prober confirmed.
var errConfirmedSlow = errors.New("slow calls reached slowCallsToDegrade within 1 s of PINGs confirming a slow Redis")

func (l *Limiter) wakeRun() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// confirm runs stage 2 for a pending suspicion (see health): a failed PING degrades; every
// round slow confirms (and degrades if score is already at the threshold); one fast round
// refutes.
func (l *Limiter) confirm(ctx context.Context) {
	if !l.health.suspect.Load() {
		return
	}
	defer l.health.suspect.Store(false)
	if l.Degraded() {
		return
	}
	fb := l.policy()
	e := l.control()
	defer e.close()
	var (
		excess [confirmRounds]time.Duration
		errs   [confirmRounds]error
	)
	if l.pingers != nil {
		// Staggered rounds on their own connections: a false alarm needs Redis slow for the
		// whole span (roundGap x (confirmRounds-1) plus RedisSlow), and a slow Redis is
		// confirmed in one round trip plus that span.
		var wg sync.WaitGroup
		for i := range confirmRounds {
			wg.Go(func() {
				if i > 0 {
					if errs[i] = backoff.Sleep(ctx, time.Duration(i)*roundGap); errs[i] != nil {
						return
					}
				}
				excess[i], errs[i] = l.round(ctx, l.pingers[i], nil, fb, l.callsConfirm)
			})
		}
		wg.Wait()
	} else {
		for i := range confirmRounds {
			excess[i], errs[i] = l.round(ctx, nil, e, fb, l.callsConfirm)
			if errs[i] != nil || excess[i] <= fb.RedisSlow {
				break
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	var worst time.Duration
	for i := range confirmRounds {
		if errs[i] != nil {
			l.checkC[checkConfirmed].Inc()
			l.degrade("redis call failed", errs[i])
			return
		}
		if excess[i] <= fb.RedisSlow {
			l.health.score.Store(0)
			l.health.confirmed.Store(0)
			l.checkC[checkRefuted].Inc()
			l.log.Debug("slow Redis calls not confirmed: the process was short of CPU",
				"round", i+1, "ping", excess[i], "redis_slow", fb.RedisSlow)
			return
		}
		worst = max(worst, excess[i])
	}
	l.checkC[checkConfirmed].Inc()
	l.health.confirmed.Store(time.Now().UnixNano())
	if l.health.score.Load() >= int64(fb.SlowCallsToDegrade) {
		l.degrade("redis slow", fmt.Errorf("%d PINGs in a row took up to %v (limit %v)",
			confirmRounds, worst, fb.RedisSlow))
	}
}

// round times one Redis PING and returns how much of its round trip Redis and the network to
// it account for, or the PING's error. On a pinger (the prober's own TCP connection to a
// standalone Redis) the reply is timed by the kernel's receive timestamp, so the wait for a CPU
// after it arrived is not counted; without one (TLS, not Linux) it is timed when read, as a
// plain client would. With no pinger (cluster client) the client's PING is timed and a local
// loopback round trip on e, run at the same time, is subtracted: the control goes through the
// same loopback, netpoller and Go run queue, twice, and never reaches Redis. A control that
// fails counts as 0, which only makes Redis look slower.
func (l *Limiter) round(ctx context.Context, p *pinger, e *echo, fb Fallback, calls prometheus.Counter) (time.Duration, error) {
	timeout := max(l.opts.CallTimeout, fb.RedisSlow)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	calls.Inc()
	if p != nil {
		if err := p.connect(cctx); err != nil {
			return 0, err
		}
		d, err := p.ping(time.Now().Add(timeout))
		return d, err
	}
	var local time.Duration
	var wg sync.WaitGroup
	if e != nil {
		wg.Go(func() { local = e.rtt(timeout) })
	}
	start := time.Now()
	err := l.rdb.Ping(cctx).Err()
	d := time.Since(start)
	wg.Wait()
	if err != nil {
		return d, err
	}
	return d - local, nil
}

// pinger is the prober's own connection to a standalone Redis, owned by Run. It speaks the
// command PING as a RESP array (miniredis, the embedded mode's Redis, closes a connection
// sent an inline command; Redis takes both) and reads one reply line, which is exactly what the control does
// on its loopback connection (write a few bytes, read a few bytes on a net.Conn): the two
// timings then differ only by what the far end added. It never waits for a pooled connection
// behind the request path (a pool wait is this process's queueing, not Redis latency). Any
// complete reply line counts, "-NOAUTH" included: it is a round trip through Redis's event
// loop all the same.
type pinger struct {
	addr string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	c    net.Conn
	buf  [64]byte
}

// newPingers returns confirmRounds pingers (one per staggered round of a confirmation), or nil
// for a cluster client, whose own PING (and pool) is used instead.
func newPingers(rdb redis.UniversalClient) []*pinger {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	o := c.Options()
	// Behind TLS the kernel's timestamps time the TLS records, not Redis: the client's PING.
	if o.Dialer == nil || o.Network == "unix" || o.TLSConfig != nil {
		return nil
	}
	ps := make([]*pinger, confirmRounds)
	for i := range ps {
		ps[i] = &pinger{addr: o.Addr, dial: o.Dialer}
	}
	return ps
}

var errBadPong = errors.New("limiter: unexpected reply to PING")

// connect dials when there is no connection (outside any timed PING).
func (p *pinger) connect(ctx context.Context) error {
	if p.c != nil {
		return nil
	}
	c, err := p.dial(ctx, "tcp", p.addr)
	if err != nil {
		return err
	}
	kernelStamps(c)
	p.c = c
	return nil
}

// ping sends one PING on the connection and reads the reply line; on any error the connection
// is dropped, to be dialled again by the next connect.
func (p *pinger) ping(deadline time.Time) (time.Duration, error) {
	d, err := p.pingOnce(deadline)
	if err != nil {
		_ = p.c.Close()
		p.c = nil
	}
	return d, err
}

// pingOnce returns how long the reply took to reach this host: from just before the write to
// the kernel's receive timestamp of the reply when the connection has one (see
// kernelStamps), else to when this goroutine read it.
func (p *pinger) pingOnce(deadline time.Time) (time.Duration, error) {
	if err := p.c.SetDeadline(deadline); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := io.WriteString(p.c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return 0, err
	}
	n := 0
	var arrived time.Time
	for {
		m, at, err := readStamped(p.c, p.buf[n:])
		if err != nil {
			return 0, err
		}
		if at.IsZero() {
			at = time.Now()
		}
		n += m
		if n > 0 && p.buf[n-1] == '\n' {
			arrived = at
			break
		}
		if n == len(p.buf) {
			return 0, errBadPong
		}
	}
	if p.buf[0] != '+' && p.buf[0] != '-' {
		return 0, errBadPong
	}
	return max(0, arrived.Sub(start)), nil
}

func (p *pinger) close() {
	if p != nil && p.c != nil {
		_ = p.c.Close()
		p.c = nil
	}
}

// control is the loopback control of round when there are no pingers, else nil.
func (l *Limiter) control() *echo {
	if l.pingers != nil {
		return nil
	}
	return newEcho()
}

// echo is an in-process loopback TCP connection whose far end echoes every byte: the control
// of a round. Nil when loopback is unavailable (then rounds time the PING alone).
type echo struct {
	c, s net.Conn
	done chan struct{}
	buf  [1]byte
}

func newEcho() *echo {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			s = nil
		}
		accepted <- s
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		_ = ln.Close()
		if s := <-accepted; s != nil {
			_ = s.Close()
		}
		return nil
	}
	s := <-accepted
	if s == nil {
		_ = c.Close()
		return nil
	}
	e := &echo{c: c, s: s, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		var b [1]byte
		for {
			if _, err := s.Read(b[:]); err != nil {
				return
			}
			if _, err := s.Write(b[:]); err != nil {
				return
			}
		}
	}()
	return e
}

// rtt is one byte there and back, or 0 when it fails.
func (e *echo) rtt(timeout time.Duration) time.Duration {
	start := time.Now()
	_ = e.c.SetDeadline(start.Add(timeout))
	if _, err := e.c.Write(e.buf[:]); err != nil {
		return 0
	}
	if _, err := io.ReadFull(e.c, e.buf[:]); err != nil {
		return 0
	}
	return time.Since(start)
}

// close ends both ends and waits for the echo goroutine. Safe on a nil *echo.
func (e *echo) close() {
	if e == nil {
		return
	}
	_ = e.c.Close()
	_ = e.s.Close()
	<-e.done
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
	l.wakeRun()
}

func (l *Limiter) recover() {
	l.health.score.Store(0)
	l.health.confirmed.Store(0)
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

// Run must be running for slow Redis calls to degrade the Limiter and for a degraded Limiter to
// recover: it owns the only prober (failed calls degrade without it).
//
// Run heartbeats this instance into sk:instances every second (and reads the healthy count from
// it unless Options.Healthy is set), runs the single prober every Fallback.ProbeEvery while the
// Limiter is degraded, confirms or refutes suspected slowness (see health), and hands back expired leases and forgets idle local state. It blocks
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
	l.pingers = newPingers(l.rdb)
	defer func() {
		cancel()
		for _, p := range l.pingers {
			p.close()
		}
		l.pingers = nil
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
	var armedAt time.Time
	var armedFor time.Duration
	// armProbe starts the probe timer while degraded; an armed timer whose period an edit
	// changed is re-armed for what is left of the new period (at once if it is over), so a
	// shortened probeEvery takes effect without waiting out the old one.
	armProbe := func() {
		if !l.Degraded() {
			return
		}
		every := l.policy().ProbeEvery
		switch {
		case !probing:
			probing, armedAt, armedFor = true, time.Now(), every
			probe.Reset(every)
		case every != armedFor:
			armedFor = every
			probe.Reset(max(0, every-time.Since(armedAt)))
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
			l.confirm(ctx)
			armProbe()
		case <-l.wake:
			l.confirm(ctx)
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

// probe recovers when probePings consecutive rounds (see round) each find the PING no more
// than Fallback.RedisSlow slower than the local control.
func (l *Limiter) probe(ctx context.Context) {
	if !l.Degraded() {
		return
	}
	fb := l.policy()
	e := l.control()
	defer e.close()
	for range probePings {
		excess, err := l.round(ctx, l.pinger(0), e, fb, l.callsProbe)
		if err != nil || excess > fb.RedisSlow {
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
	idleBefore := now.Add(-time.Minute)
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
		l.local[d].sweep(func(_ string, b *tokenbucket.Bucket) bool { return !b.IdleSince(idleBefore) })
	}
	l.ipLoc.sweep(func(_ string, b *tokenbucket.Bucket) bool { return !b.IdleSince(idleBefore) })
	l.users.purge(now)
	l.ips.purge(now)
}
