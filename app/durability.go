package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/config"
	"github.com/seckill/seckill/inventory"
)

// defaultDurabilityCheckEvery is how often a running instance reads again what the Redis
// masters provide (a failover or a CONFIG SET may change it), unless
// Options.durabilityCheckEvery says otherwise.
const defaultDurabilityCheckEvery = 10 * time.Second

// maxCAFileBytes bounds SECKILL_REDIS_TLS_CA_FILE.
const maxCAFileBytes = 1 << 20

// redisAuth sets the password, user and TLS settings of the Redis client (and of the
// sentinels'). An error is a CA file that does not read.
func (o Options) redisAuth(uo *redis.UniversalOptions) error {
	uo.Username, uo.Password = o.RedisUsername, o.RedisPassword
	if o.RedisSentinelMaster != "" {
		uo.MasterName = o.RedisSentinelMaster
		uo.SentinelPassword = o.RedisSentinelPassword
	}
	if !o.RedisTLS {
		if o.RedisTLSCAFile != "" {
			return errors.New("SECKILL_REDIS_TLS_CA_FILE is set without SECKILL_REDIS_TLS=true")
		}
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.RedisTLSCAFile != "" {
		// A regular file of at most 1 MiB (a CA bundle is a few hundred KiB), opened without
		// blocking: a FIFO, a device or /dev/zero is refused at once instead of hanging the
		// start or filling the memory.
		pem, err := config.ReadRegularFile(o.RedisTLSCAFile, maxCAFileBytes)
		if err != nil {
			return fmt.Errorf("SECKILL_REDIS_TLS_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("SECKILL_REDIS_TLS_CA_FILE %s: no PEM certificate in it", o.RedisTLSCAFile)
		}
		tc.RootCAs = pool
	}
	uo.TLSConfig = tc
	return nil
}

// checkDurability reads what the Redis masters provide for the durability mode at start:
// a master that does not provide it is a start-up error saying what to set. A Redis not
// reachable at start is checked by runDurabilityCheck as soon as it answers. It also sets
// the relay's first fsync horizon (inventory.FsyncHorizon; runDurabilityCheck keeps it
// current).
func (a *App) checkDurability(ctx context.Context) error {
	d := a.opts.RedisDurability
	if a.mini != nil || (!d.AOF && d.Replicas == 0) {
		return nil
	}
	if d.AOF {
		a.fsyncHorizon.Store(int64(inventory.EverysecHorizon)) // until a check says every master fsyncs always
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ms, err := inventory.CheckDurability(cctx, a.rdb, d)
	if err != nil && !inventory.IsNotProvided(err) {
		a.log.Warn("redis durability not checked at start (redis unreachable?)", "mode", d.String(), "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w; or start with SECKILL_REDIS_DURABILITY=none (--redis-durability none) to run without it (a crash or failover of Redis then loses answered reservations)", err)
	}
	h := inventory.FsyncHorizon(d, ms)
	a.fsyncHorizon.Store(int64(h))
	for _, m := range ms {
		if d.AOF && m.Fsync == "everysec" {
			a.log.Warn("redis runs appendfsync everysec: a crash of its machine may lose the last ~2 s of answered reservations (appendfsync always keeps them; the relay publishes an entry only once it is older than the fsync horizon)",
				"master", m.Addr, "horizon", h)
		}
	}
	a.log.Info("redis durability checked", "mode", d.String(), "masters", len(ms), "relayHorizon", h)
	return nil
}

// relayHorizon is the relay's fsync horizon now (order.RelayOptions.FsyncHorizon): safe for
// concurrent use, one atomic load.
func (a *App) relayHorizon() time.Duration { return time.Duration(a.fsyncHorizon.Load()) }

// followHorizon sets the relay's fsync horizon to what the last check read of the masters,
// ms, and logs a change: one WARN line when a master starts fsyncing everysec (CONFIG SET,
// a failover onto a master configured so), one INFO line when every master fsyncs always
// again. Called by the durability check's goroutine only.
func (a *App) followHorizon(d inventory.Durability, ms []inventory.MasterDurability) {
	h := inventory.FsyncHorizon(d, ms)
	old := time.Duration(a.fsyncHorizon.Swap(int64(h)))
	switch {
	case h > old:
		a.log.Warn("a redis master no longer fsyncs every write (appendfsync everysec): the relay now publishes a journal entry only once it is older than the fsync horizon",
			"mode", d.String(), "horizon", h)
	case h < old:
		a.log.Info("every redis master fsyncs every write again (appendfsync always): the relay publishes journal entries without waiting",
			"mode", d.String(), "horizon", h)
	}
}

// runDurabilityCheck reads again, every Options.durabilityCheckEvery (default 10 s), what
// the masters provide, and says so once per change: one ERROR line when the mode stops being
// provided (a master turned appendonly off, a failover onto a master without a replica), one
// INFO line when it is provided again; the gauge redis_durability_provided and the relay's
// fsync horizon (followHorizon) follow. A master turned from appendfsync always to everysec
// is seen at the next check: until then the relay may publish entries not yet on its disk.
func (a *App) runDurabilityCheck(ctx context.Context) error {
	d := a.opts.RedisDurability
	every := a.opts.durabilityCheckEvery
	if every <= 0 {
		every = defaultDurabilityCheckEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last := true
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		ms, err := inventory.CheckDurability(cctx, a.rdb, d)
		cancel()
		if err == nil || inventory.IsNotProvided(err) {
			a.followHorizon(d, ms) // every master was read
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && inventory.IsNotProvided(err):
			a.durabilityOK.Set(0)
			if last {
				a.log.Error("redis no longer provides the durability mode", "mode", d.String(), "err", err)
			}
			last = false
		case err == nil:
			a.durabilityOK.Set(1)
			if !last {
				a.log.Info("redis provides the durability mode again", "mode", d.String())
			}
			last = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// newDurabilityGauge registers seckill_redis_durability_provided.
func newDurabilityGauge(reg prometheus.Registerer, mode string) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "seckill_redis_durability_provided",
		Help:        "1 when the last check found every Redis master providing the durability mode (SECKILL_REDIS_DURABILITY), else 0.",
		ConstLabels: prometheus.Labels{"mode": mode}})
	if err := reg.Register(g); err != nil {
		return nil, err
	}
	g.Set(1)
	return g, nil
}
